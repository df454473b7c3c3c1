package chatadapter_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
	"github.com/llmtool/llmtool/i18n"
	"github.com/stretchr/testify/require"
)

// german holds the shop's tools and the chat's lines in German.
var german = map[string]string{
	i18n.ToolKey("pick_item"):      "Artikel wählen",
	i18n.ToolKey("remove_item"):    "Artikel entfernen",
	i18n.ToolKey("get_item"):       "Artikel lesen",
	i18n.ToolKey("add_item"):       "Artikel anlegen",
	"llm.tools.pick_item.ask.pick": "Mehrere Artikel passen. Welchen meinst du?",

	"llm.chat.call.started":       "{tool}…",
	"llm.chat.call.progress":      "{tool}… {progress}",
	"llm.chat.call.done":          "{tool}… erledigt",
	"llm.chat.call.failed":        "{tool}… fehlgeschlagen",
	"llm.chat.call.needsApproval": "{tool}… wartet auf Freigabe",
	"llm.chat.call.notApproved":   "{tool}… nicht freigegeben",
	"llm.chat.call.asks":          "{tool}… wartet auf deine Antwort",
	"llm.chat.model.request":      "Frage das Modell…",
	"llm.chat.model.again":        "Frage das Modell erneut (Versuch {attempt})…",
	"llm.chat.model.retry":        "Der Server des Modells antwortete {status}; neuer Versuch in {wait}…",
	"llm.chat.model.noAnswer":     "nicht",
	"llm.chat.model.tooMany":      "{code} (zu viele Anfragen)",
	"llm.chat.model.unavailable":  "{code} (nicht verfügbar)",
	"llm.chat.model.overloaded":   "{code} (überlastet)",
	"llm.chat.model.serverError":  "{code} (Serverfehler)",
	"llm.chat.stop.steps":         "Nach {steps} Anfragen angehalten.",
	"llm.chat.approval.prompt":    "{tool} möchte ändern: {summary}. Freigeben?",
	"llm.chat.question.prompt":    "{tool} fragt: {question}",
	"llm.chat.preview":            "{summary} ({changes})",
	"llm.chat.preview.table":      "{table}: {counts}",
	"llm.chat.preview.inserted":   "{n} eingefügt",
	"llm.chat.preview.updated":    "{n} geändert",
	"llm.chat.preview.deleted":    "{n} gelöscht",
}

// Every line a host shows comes from the catalog in the context's
// locale: event lines, pending prompts, previews, stops, retries.
func TestLocaleEndToEnd(t *testing.T) {
	t.Parallel()
	path := newShop(t)
	log := &eventLog{}
	p := start(t, path, nil)
	msgs := new(i18n.Catalog)
	msgs.Add("de", german)
	a := chatadapter.New(p.a.Registry(), &chatadapter.Options{Messages: msgs, Locale: "de"})
	var model []string
	ctx := chatadapter.WithEvents(p.ctx, func(e chatadapter.Event) {
		log.add(e)
		if e.Tool == "" && e.Kind != chatadapter.ModelReply && e.Kind != chatadapter.TurnEnded {
			model = append(model, e.Label)
		}
	})

	srv := chattest.NewServer(chatadapter.OpenAIResponses,
		chattest.Reply{Status: 503, Text: "busy", RetryAfter: "0"},
		chattest.Reply{Calls: []chattest.Call{{Name: "pick_item", Args: `{"name":"apple"}`}}},
		chattest.Reply{Calls: []chattest.Call{{Name: "remove_item", Args: `{"id":2}`}}},
		chattest.Reply{Calls: []chattest.Call{{Name: "get_item", Args: `{"id":2}`}}})
	defer srv.Close()
	rn := newRunner(t, a, srv.Endpoint(), &run.Options{MaxSteps: 3})
	tr, err := rn.Run(ctx, user(chatadapter.OpenAIResponses, "Weg mit dem grünen Apfel."))
	require.NoError(t, err)
	require.Equal(t, "Artikel wählen fragt: Mehrere Artikel passen. Welchen meinst du?", tr.Pending.Prompt)
	require.Equal(t, `2 items match "apple". Which one?`, tr.Pending.Question.Message, "the tool's own words stay in Question")
	require.Equal(t, "Artikel wählen", tr.Pending.FriendlyName)

	tr, err = rn.Resume(ctx, tr, ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"id":2}`)})
	require.NoError(t, err)
	require.Equal(t, "Artikel entfernen möchte ändern: Remove item 2 (green apple). (items: 1 gelöscht). Freigeben?", tr.Pending.Prompt)
	require.Equal(t, "Remove item 2 (green apple). (items: 1 gelöscht)", tr.Pending.Summary)

	tr, err = rn.Resume(ctx, tr, yes(true))
	require.NoError(t, err)
	require.ErrorIs(t, tr.Stopped, run.ErrStepLimit)
	require.Equal(t, []string{"Artikel wählen… wartet auf deine Antwort", "Artikel wählen… erledigt",
		"Artikel entfernen… wartet auf Freigabe", "Artikel entfernen… erledigt", "Artikel lesen… fehlgeschlagen"}, log.take())
	require.Equal(t, []string{
		"Frage das Modell…", "Der Server des Modells antwortete 503 (nicht verfügbar); neuer Versuch in 0s…", "Frage das Modell erneut (Versuch 2)…",
		"Frage das Modell…", "Frage das Modell…", "Nach 3 Anfragen angehalten.",
	}, model)

	// A locale the catalog lacks falls back to English, line by line.
	ctx = chatadapter.WithLocale(ctx, "fr")
	r, err := a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(`[{"id":"c1","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"pear\"}"}}]`))
	require.NoError(t, err)
	require.Len(t, r.Outcomes, 1)
	require.Equal(t, []string{"Add item… done"}, log.take())
}

// The line of a retry names each kind of error in the catalog's words:
// in German no English word, neither "no answer" nor Go's status texts.
func TestLocaleRetryLines(t *testing.T) {
	t.Parallel()
	status := func(code int) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", code) }
	}
	hangUp := func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) } // no response at all
	aOK := sse(aStart, aTextStart, aText("Fine."), aDelta("end_turn"), aStop)
	tests := []struct {
		name   string
		shape  chatadapter.Shape
		stream bool
		first  func(http.ResponseWriter, *http.Request)
		de, en string // the {status} of the retry's line
	}{
		{"no response", chatadapter.Anthropic, false, hangUp, "nicht", "nothing"},
		{"429", chatadapter.Anthropic, false, status(http.StatusTooManyRequests), "429 (zu viele Anfragen)", "429 (too many requests)"},
		{"500", chatadapter.Anthropic, false, status(http.StatusInternalServerError), "500 (Serverfehler)", "500 (server error)"},
		{"502", chatadapter.Anthropic, false, status(http.StatusBadGateway), "502 (Serverfehler)", "502 (server error)"},
		{"503", chatadapter.Anthropic, false, status(http.StatusServiceUnavailable), "503 (nicht verfügbar)", "503 (unavailable)"},
		{"529", chatadapter.Anthropic, false, status(529), "529 (überlastet)", "529 (overloaded)"},
		{"overloaded in the stream", chatadapter.Anthropic, true, sse(aStart, aOverloaded), "529 (überlastet)", "529 (overloaded)"},
		{"rate limited in the stream", chatadapter.Anthropic, true, sse(aStart, `{"type":"error","error":{"type":"rate_limit_error","message":"Slow down."}}`),
			"429 (zu viele Anfragen)", "429 (too many requests)"},
		{"a server error in the stream", chatadapter.OpenAIChat, true, sse(`{"error":{"message":"The server had an error.","type":"server_error"}}`),
			"500 (Serverfehler)", "500 (server error)"},
		{"unavailable in the stream", chatadapter.Gemini, true, sse(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`),
			"503 (nicht verfügbar)", "503 (unavailable)"},
	}
	msgs := new(i18n.Catalog)
	msgs.Add("de", german)
	for _, tt := range tests {
		for _, locale := range []string{"de", "en"} {
			t.Run(tt.name+"/"+locale, func(t *testing.T) {
				t.Parallel()
				path := map[chatadapter.Shape]string{chatadapter.OpenAIChat: "/v1/chat/completions", chatadapter.Anthropic: "/v1/messages",
					chatadapter.Gemini: "/v1/models/m:generateContent"}[tt.shape]
				ok := reply(answer("Fine."))
				switch {
				case tt.shape == chatadapter.Anthropic:
					ok = aOK
					if !tt.stream {
						ok = func(w http.ResponseWriter, _ *http.Request) {
							w.Header().Set("Content-Type", "application/json")
							w.Write([]byte(`{"type":"message","role":"assistant","content":[{"type":"text","text":"Fine."}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":1}}`))
						}
					}
				case tt.shape == chatadapter.Gemini:
					path, ok = "/v1/models/m:streamGenerateContent", sse(gText("Fine.", "STOP"))
				case tt.stream:
					ok = sse(delta(`{"content":"Fine."}`), finish("stop"), "[DONE]")
				}
				m := newModelAt(t, path, tt.first, ok)
				f := newStreamFixture(t)
				a := chatadapter.New(f.reg, &chatadapter.Options{Messages: msgs, Locale: locale})
				r, err := run.New(a, run.Endpoint{Shape: tt.shape, BaseURL: m.srv.URL + "/v1", Model: "m"},
					&run.Options{Stream: tt.stream, RetryDelay: 1})
				require.NoError(t, err)
				rec := &recorder{}
				tr, err := r.Run(chatadapter.WithEvents(f.ctx, rec.add), []json.RawMessage{run.TextMessage(tt.shape, "user", "Go.")})
				require.NoError(t, err)
				require.Equal(t, "Fine.", tr.Answer)
				retries := rec.of(chatadapter.ModelRetry)
				require.Len(t, retries, 1)
				want := "The model's server answered " + tt.en + "; trying again in 0s…"
				if locale == "de" {
					want = "Der Server des Modells antwortete " + tt.de + "; neuer Versuch in 0s…"
				}
				require.Equal(t, want, retries[0].Label)
				if locale == "de" {
					for _, english := range []string{"answer", "Requests", "Unavailable", "Internal", "Error", "Gateway", "overloaded", "nothing"} {
						require.NotContains(t, strings.ToLower(retries[0].Label), strings.ToLower(english))
					}
				}
			})
		}
	}
}
