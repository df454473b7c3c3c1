package chatadapter_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode"

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
	"llm.chat.model.timedOut":     "{code} (Zeitüberschreitung)",
	"llm.chat.stop.steps":         "Nach {steps} Anfragen angehalten.",
	"llm.chat.approval.prompt":    "{tool} möchte ändern: {summary}. Freigeben?",
	"llm.chat.question.prompt":    "{tool} fragt: {question}",
	"llm.chat.preview":            "{summary} ({changes})",
	"llm.chat.preview.table":      "{table}: {counts}",
	"llm.chat.preview.inserted":   "{n} eingefügt",
	"llm.chat.preview.updated":    "{n} geändert",
	"llm.chat.preview.deleted":    "{n} gelöscht",

	"llm.chat.error.rateLimit":      "Der Anbieter des Modells erhält gerade zu viele Anfragen. Warte eine Minute und sende deine Nachricht dann erneut.",
	"llm.chat.error.quota":          "Das Konto des Modells hat sein Kontingent oder seine Ausgabengrenze aufgebraucht. Bitte den Betreiber der Seite, sie zu erhöhen; Warten hilft nicht.",
	"llm.chat.error.contextLength":  "Dieses Gespräch ist zu lang für das Modell geworden. Beginne ein neues Gespräch oder kürze deine Nachricht.",
	"llm.chat.error.auth":           "Der Anbieter des Modells hat den Zugangsschlüssel dieser Seite abgelehnt. Bitte den Betreiber der Seite, ihn zu prüfen.",
	"llm.chat.error.badRequest":     "Der Anbieter des Modells hat die Anfrage abgelehnt. Bitte den Betreiber der Seite, die Einstellungen des Modells zu prüfen.",
	"llm.chat.error.overloaded":     "Der Anbieter des Modells ist gerade überlastet. Versuche es in ein paar Minuten erneut.",
	"llm.chat.error.server":         "Beim Anbieter des Modells ist ein Fehler aufgetreten. Versuche es in ein paar Minuten erneut.",
	"llm.chat.error.timeout":        "Der Anbieter des Modells hat zu lange für die Antwort gebraucht. Sende deine Nachricht erneut.",
	"llm.chat.error.unreachable":    "Der Anbieter des Modells war nicht erreichbar, oder die Verbindung brach ab. Sende deine Nachricht gleich noch einmal.",
	"llm.chat.error.other":          "Der Anbieter des Modells hat mit einem Fehler geantwortet. Versuche es später erneut.",
	"llm.chat.finish.length":        "Die Antwort wurde an ihrer Längengrenze abgeschnitten. Bitte um weniger auf einmal oder bitte den Betreiber der Seite, die Grenze zu erhöhen.",
	"llm.chat.finish.contentFilter": "Der Inhaltsfilter des Anbieters hat diese Antwort angehalten. Formuliere deine Nachricht um und versuche es erneut.",
	"llm.chat.finish.refusal":       "Das Modell hat die Antwort abgelehnt. Formuliere deine Nachricht um oder frage etwas anderes.",
	"llm.chat.finish.malformedCall": "Das Modell wollte ein Werkzeug benutzen, hat den Aufruf aber fehlerhaft geschrieben. Sende deine Nachricht erneut.",
	"llm.chat.finish.pause":         "Das Modell hat vor dem Ende innegehalten. Schreib „weiter“, damit es fortfährt.",
	"llm.chat.finish.other":         "Das Modell hat ohne Antwort aufgehört. Sende deine Nachricht erneut oder formuliere sie um.",
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
		if e.Tool == "" && e.Kind != chatadapter.ModelReply && (e.Kind != chatadapter.TurnEnded || e.Err != nil) { // a stop is TurnEnded's line
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
		{"408", chatadapter.Anthropic, false, status(http.StatusRequestTimeout), "408 (Zeitüberschreitung)", "408 (timed out)"},
		{"409", chatadapter.Anthropic, false, status(http.StatusConflict), "409 (Zeitüberschreitung)", "409 (timed out)"},
		{"504", chatadapter.Anthropic, false, status(http.StatusGatewayTimeout), "504 (Zeitüberschreitung)", "504 (timed out)"},
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
					for _, english := range []string{"answer", "Requests", "Unavailable", "Internal", "Error", "Gateway", "overloaded", "nothing", "timed out", "Timeout", "Conflict"} {
						require.NotContains(t, strings.ToLower(retries[0].Label), strings.ToLower(english))
					}
				}
			})
		}
	}
}

// The line of a turn that failed (by the error's class) or ended
// without its answer (by its finish) is the catalog's, in German with no
// English word; a class or finish Run does not name has a line too.
func TestLocaleFinishAndErrorLines(t *testing.T) {
	t.Parallel()
	msgs := new(i18n.Catalog)
	msgs.Add("de", german)
	f := newFixture(t)
	a := chatadapter.New(f.reg, &chatadapter.Options{Messages: msgs})
	tests := []struct {
		name   string
		ev     chatadapter.Event
		de, en string
	}{
		{"rate_limit", chatadapter.Event{Err: &run.HTTPError{Class: "rate_limit"}}, german["llm.chat.error.rateLimit"],
			"The model's provider is getting too many requests right now. Wait a minute, then send your message again."},
		{"quota", chatadapter.Event{Err: &run.HTTPError{Class: "quota"}}, german["llm.chat.error.quota"],
			"The model's account has used up its quota or spending limit. Ask the site's owner to raise it; waiting will not help."},
		{"context_length", chatadapter.Event{Err: &run.HTTPError{Class: "context_length"}}, german["llm.chat.error.contextLength"],
			"This conversation has grown too long for the model. Start a new conversation, or shorten your message."},
		{"auth", chatadapter.Event{Err: &run.HTTPError{Class: "auth"}}, german["llm.chat.error.auth"],
			"The model's provider refused this site's access key. Ask the site's owner to check it."},
		{"bad_request", chatadapter.Event{Err: &run.HTTPError{Class: "bad_request"}}, german["llm.chat.error.badRequest"],
			"The model's provider refused the request. Ask the site's owner to check the model's settings."},
		{"overloaded", chatadapter.Event{Err: &run.HTTPError{Class: "overloaded"}}, german["llm.chat.error.overloaded"],
			"The model's provider is overloaded right now. Try again in a few minutes."},
		{"server", chatadapter.Event{Err: &run.HTTPError{Class: "server"}}, german["llm.chat.error.server"],
			"The model's provider had an error. Try again in a few minutes."},
		{"timeout", chatadapter.Event{Err: &run.HTTPError{Class: "timeout"}}, german["llm.chat.error.timeout"],
			"The model's provider took too long to answer. Send your message again."},
		{"no class", chatadapter.Event{Err: &run.HTTPError{}}, german["llm.chat.error.other"],
			"The model's provider answered with an error. Try again later."},
		{"length", chatadapter.Event{Finish: "length"}, german["llm.chat.finish.length"],
			"The answer was cut off at its length limit. Ask for less at once, or ask the site's owner to raise the limit."},
		{"content_filter", chatadapter.Event{Finish: "content_filter"}, german["llm.chat.finish.contentFilter"], lineFilter},
		{"refusal", chatadapter.Event{Finish: "refusal", Text: "I cannot help with that."}, german["llm.chat.finish.refusal"], lineRefusal},
		{"malformed_call", chatadapter.Event{Finish: "malformed_call"}, german["llm.chat.finish.malformedCall"], lineMalformed},
		{"pause", chatadapter.Event{Finish: "pause"}, german["llm.chat.finish.pause"], linePause},
		{"other", chatadapter.Event{Finish: "other"}, german["llm.chat.finish.other"], lineOther},
		{"stop: the answer", chatadapter.Event{Finish: "stop", Text: "Done."}, "Done.", "Done."},
	}
	english := map[string]bool{}
	for _, w := range strings.Fields("the model model's provider provider's answer answered try again send your message limit quota filter tool " +
		"error request requests key please stop go on content refusal server account site owner wait minutes later call wrongly declined") {
		english[w] = true
	}
	for _, tt := range tests {
		require.NotEmpty(t, tt.de, tt.name)
		for _, locale := range []string{"de", "en"} {
			var got string
			ctx := chatadapter.WithLocale(chatadapter.WithEvents(f.ctx, func(e chatadapter.Event) { got = e.Label }), locale)
			e := tt.ev
			e.Kind = chatadapter.TurnEnded
			a.Emit(ctx, e)
			want := tt.en
			if locale == "de" {
				want = tt.de
			}
			require.Equal(t, want, got, tt.name+"/"+locale)
			if locale == "de" && tt.name != "stop: the answer" {
				for _, w := range strings.FieldsFunc(strings.ToLower(got), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
					require.False(t, english[w], "%s: the English word %q in %q", tt.name, w, got)
				}
			}
		}
	}
}

// A turn that fails for good, or ends without its answer, says so in
// the person's language, end to end.
func TestLocaleTurnEndedLines(t *testing.T) {
	t.Parallel()
	msgs := new(i18n.Catalog)
	msgs.Add("de", german)
	tests := []struct {
		name  string
		shape chatadapter.Shape
		reply func(http.ResponseWriter, *http.Request)
		want  string
		opts  *run.Options
	}{
		{"no answer at all", chatadapter.Anthropic, func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) },
			german["llm.chat.error.unreachable"], &run.Options{MaxRetries: -1}},
		{"a spend limit", chatadapter.Anthropic, failWith(400, "", anSpend), german["llm.chat.error.quota"], nil},
		{"a daily quota", chatadapter.Gemini, failWith(429, "", gDaily), german["llm.chat.error.quota"], nil},
		{"too long", chatadapter.OpenAIChat, failWith(400, "", oaContext), german["llm.chat.error.contextLength"], nil},
		{"SAFETY", chatadapter.Gemini, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"candidates":[{"finishReason":"SAFETY","index":0}]}`))
		}, german["llm.chat.finish.contentFilter"], nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newModelAt(t, pathOf(tt.shape, false), tt.reply)
			f := newStreamFixture(t)
			a := chatadapter.New(f.reg, &chatadapter.Options{Messages: msgs, Locale: "de"})
			r, err := run.New(a, run.Endpoint{Shape: tt.shape, BaseURL: m.srv.URL + "/v1", Model: "m"}, tt.opts)
			require.NoError(t, err)
			rec := &recorder{}
			_, _ = r.Run(chatadapter.WithEvents(f.ctx, rec.add), []json.RawMessage{run.TextMessage(tt.shape, "user", "Hallo.")})
			ended := rec.of(chatadapter.TurnEnded)
			require.Len(t, ended, 1)
			require.Equal(t, tt.want, ended[0].Label)
			require.Len(t, m.requests(), 1, "not retried")
		})
	}
}
