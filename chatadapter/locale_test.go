package chatadapter_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/chattest"
	"github.com/llmtool/llmtool/i18n"
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
			model = append(model, e.String())
		}
	})

	srv := chattest.NewServer(chatadapter.OpenAIResponses,
		chattest.Reply{Status: 503, Text: "busy", RetryAfter: "0"},
		chattest.Reply{Calls: []chattest.Call{{Name: "pick_item", Args: `{"name":"apple"}`}}},
		chattest.Reply{Calls: []chattest.Call{{Name: "remove_item", Args: `{"id":2}`}}},
		chattest.Reply{Calls: []chattest.Call{{Name: "get_item", Args: `{"id":2}`}}})
	defer srv.Close()
	tr, err := chatadapter.Run(ctx, a, srv.Endpoint(), user(chatadapter.OpenAIResponses, "Weg mit dem grünen Apfel."), &chatadapter.RunOptions{MaxSteps: 3})
	require.NoError(t, err)
	require.Equal(t, "Artikel wählen fragt: Mehrere Artikel passen. Welchen meinst du?", tr.Pending.Prompt)
	require.Equal(t, `2 items match "apple". Which one?`, tr.Pending.Question.Message, "the tool's own words stay in Question")
	require.Equal(t, "Artikel wählen", tr.Pending.FriendlyName)

	tr, err = tr.ResumeWith(ctx, ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"id":2}`)})
	require.NoError(t, err)
	require.Equal(t, "Artikel entfernen möchte ändern: Remove item 2 (green apple). (items: 1 gelöscht). Freigeben?", tr.Pending.Prompt)
	require.Equal(t, "Remove item 2 (green apple). (items: 1 gelöscht)", tr.Pending.Summary)

	tr, err = tr.Resume(ctx, true)
	require.NoError(t, err)
	require.ErrorIs(t, tr.Stopped, chatadapter.ErrStepLimit)
	require.Equal(t, []string{"Artikel wählen… wartet auf deine Antwort", "Artikel wählen… erledigt",
		"Artikel entfernen… wartet auf Freigabe", "Artikel entfernen… erledigt", "Artikel lesen… fehlgeschlagen"}, log.take())
	require.Equal(t, []string{
		"Frage das Modell…", "Der Server des Modells antwortete 503 Service Unavailable; neuer Versuch in 0s…", "Frage das Modell erneut (Versuch 2)…",
		"Frage das Modell…", "Frage das Modell…", "Nach 3 Anfragen angehalten.",
	}, model)

	// A locale the catalog lacks falls back to English, line by line.
	ctx = chatadapter.WithLocale(ctx, "fr")
	r, err := a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(`[{"id":"c1","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"pear\"}"}}]`))
	require.NoError(t, err)
	require.Len(t, r.Outcomes, 1)
	require.Equal(t, []string{"Add item… done"}, log.take())
}
