package i18n_test

import (
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/i18n"
)

func TestFriendlyNames(t *testing.T) {
	t.Parallel()
	// The tools' own English labels, as llmtool.FriendlyName sets them.
	defined := map[string]string{"create_note": "Create note"}
	msgs := new(i18n.Catalog)

	require.NoError(t, msgs.AddJSON("de", []byte(`{"llm.tools.create_note": "Notiz anlegen", "llm.tools.man": "Handbuch lesen"}`)))
	msgs.Add("pt-BR", map[string]string{"llm.tools.create_note": "Criar nota"})
	require.NoError(t, msgs.AddFS(fstest.MapFS{
		"locales/fr.json": {Data: []byte(`{"llm.tools.create_note": "Créer une note"}`)},
		"locales/README":  {Data: []byte(`not a locale`)},
	}, "locales"))

	tests := []struct{ tool, locale, want string }{
		{"create_note", "en", "Create note"},       // FriendlyName fills English
		{"create_note", "", "Create note"},         // no locale means English
		{"create_note", "de", "Notiz anlegen"},     // added locale
		{"create_note", "de-AT", "Notiz anlegen"},  // region falls back to its language
		{"create_note", "pt_br", "Criar nota"},     // locale names are normalized
		{"create_note", "pt", "Create note"},       // pt-BR is not pt
		{"create_note", "fr-CA", "Créer une note"}, // from AddFS
		{"create_note", "ja", "Create note"},       // unknown locale: English
		{"get_time", "de", "get_time"},             // no entry at all: the tool's name
		{"man", "en", "Read the manual"},           // llmtool's embedded English
		{"man", "de", "Handbuch lesen"},            // overridable per locale
		{"nope", "de", "nope"},                     // unknown tool: its name
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, msgs.FriendlyName(tc.tool, defined[tc.tool], tc.locale), "%s in %q", tc.tool, tc.locale)
	}

	// A host's English beats the definition's.
	msgs.Add("en", map[string]string{i18n.ToolKey("create_note"): "Add note"})
	require.Equal(t, "Add note", msgs.FriendlyName("create_note", "Create note", "ja"))
	_, ok := msgs.Lookup("llm.other", "de")
	require.False(t, ok)
	require.EqualError(t, msgs.AddJSON("de", []byte(`[1]`)), `i18n: messages for "de": json: cannot unmarshal array into Go value of type map[string]string`)
}

func TestLookup(t *testing.T) {
	t.Parallel()
	require.Equal(t, "llm.tools.create_note", i18n.ToolKey("create_note"))

	// A nil catalog holds the embedded English alone.
	var none *i18n.Catalog
	v, ok := none.Lookup(i18n.ToolKey("man"), "de")
	require.True(t, ok)
	require.Equal(t, "Read the manual", v)
	require.Equal(t, "Create note", none.FriendlyName("create_note", "Create note", "de"))
	require.Equal(t, "create_note", none.FriendlyName("create_note", "", "de"))

	// The definition's label beats the embedded English: a host's own
	// tool named man is not "Read the manual".
	require.Equal(t, "Help", none.FriendlyName("man", "Help", "en"))

	// Empty messages do not count; the language's entry is next.
	msgs := new(i18n.Catalog)
	msgs.Add("de", map[string]string{"greeting": "Hallo"})
	msgs.Add("DE_ch", map[string]string{"greeting": "", "bye": "Ade"})
	for _, tc := range []struct{ key, locale, want string }{
		{"greeting", "de-CH", "Hallo"},
		{"bye", "de-ch", "Ade"},
		{"bye", "de", ""},
		{"greeting", "en", ""},
	} {
		v, ok := msgs.Lookup(tc.key, tc.locale)
		require.Equal(t, tc.want != "", ok, "%s in %q", tc.key, tc.locale)
		require.Equal(t, tc.want, v, "%s in %q", tc.key, tc.locale)
	}

	// A file that is not a JSON object is an error that names its locale.
	err := msgs.AddFS(fstest.MapFS{"l/it.json": {Data: []byte(`"x"`)}}, "l")
	require.ErrorContains(t, err, `i18n: messages for "it"`)
}

// Hosts add locales while chat events look names up.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	msgs := new(i18n.Catalog)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				if i%2 == 0 {
					msgs.Add("de", map[string]string{i18n.ToolKey("create_note"): "Notiz anlegen"})
				} else {
					_ = msgs.FriendlyName("create_note", "Create note", "de")
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, "Notiz anlegen", msgs.FriendlyName("create_note", "Create note", "de"))
}

// Messages put their values in by name, wherever a translation has them.
func TestMessage(t *testing.T) {
	t.Parallel()
	msgs := new(i18n.Catalog)
	msgs.Add("de", map[string]string{"llm.chat.call.done": "{tool}… fertig", "order": "{b} vor {a}", "llm.chat.preview.deleted": "{n} gelöscht"})
	tests := []struct {
		key, locale string
		args        []string
		want        string
	}{
		{"llm.chat.call.done", "de", []string{"tool", "Notiz anlegen"}, "Notiz anlegen… fertig"},
		{"llm.chat.call.done", "en", []string{"tool", "Create note"}, "Create note… done"}, // the embedded English
		{"llm.chat.call.done", "fr", []string{"tool", "Create note"}, "Create note… done"}, // no French: English
		{"order", "de-AT", []string{"a", "1", "b", "2"}, "2 vor 1"},                        // a translation orders the values
		{"llm.chat.preview.deleted", "de", []string{"n", "3"}, "3 gelöscht"},
		{"llm.chat.call.done", "de", nil, "{tool}… fertig"},                          // no values: placeholders stay
		{"llm.chat.call.done", "de", []string{"tool"}, "{tool}… fertig"},             // a name without a value
		{"llm.chat.model.request", "de", []string{"tool", "x"}, "Asking the model…"}, // a value without a placeholder
		{"no.such.key", "de", []string{"a", "b"}, "no.such.key"},                     // the key shows what is missing
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, msgs.Message(tc.key, tc.locale, tc.args...), "%s in %q", tc.key, tc.locale)
	}
	var none *i18n.Catalog
	require.Equal(t, "Apple… done", none.Message("llm.chat.call.done", "de", "tool", "Apple"))
}

// Locales lists what a host can offer; Has checks one.
func TestLocales(t *testing.T) {
	t.Parallel()
	var none *i18n.Catalog
	require.Equal(t, []string{"en"}, none.Locales())
	msgs := new(i18n.Catalog)
	msgs.Add("pt_BR", map[string]string{"k": "v"})
	msgs.Add("de", map[string]string{"k": "v"})
	msgs.Add("fr", nil) // nothing added: not a locale
	require.Equal(t, []string{"de", "en", "pt-br"}, msgs.Locales())
	for locale, want := range map[string]bool{"de": true, "de-AT": true, "DE": true, "pt-BR": true, "pt": false, "fr": false, "en-GB": true, "": true, "xx": false} {
		require.Equal(t, want, msgs.Has(locale), locale)
	}
}
