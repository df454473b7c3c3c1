package llmtool_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

func TestFriendlyNames(t *testing.T) {
	t.Parallel()
	create := llmtool.Write("create_note", "Create a note.",
		func(*llmtool.WriteCtx, struct{}) (struct{}, error) { return struct{}{}, nil },
		llmtool.FriendlyName("Create note"))
	plain := llmtool.Read("get_time", "Tell the time.",
		func(*llmtool.ReadCtx, struct{}) (struct{}, error) { return struct{}{}, nil })
	reg, _ := newReg(t, openDB(t), llmtool.DefineTools("notes", create, plain))

	require.NoError(t, reg.AddMessagesJSON("de", []byte(`{"llm.tools.create_note": "Notiz anlegen", "llm.tools.man": "Handbuch lesen"}`)))
	reg.AddMessages("pt-BR", map[string]string{"llm.tools.create_note": "Criar nota"})
	require.NoError(t, reg.AddLocales(fstest.MapFS{
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
		{"create_note", "fr-CA", "Créer une note"}, // from AddLocales
		{"create_note", "ja", "Create note"},       // unknown locale: English
		{"get_time", "de", "get_time"},             // no entry at all: the tool's name
		{"man", "en", "Read the manual"},           // llmtool's embedded English
		{"man", "de", "Handbuch lesen"},            // overridable per locale
		{"nope", "de", "nope"},                     // unknown tool: its name
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, reg.FriendlyName(tc.tool, tc.locale), "%s in %q", tc.tool, tc.locale)
	}

	// A host's English beats the definition's.
	reg.AddMessages("en", map[string]string{llmtool.MessageKey("create_note"): "Add note"})
	require.Equal(t, "Add note", reg.FriendlyName("create_note", "ja"))
	_, ok := reg.Message("llm.other", "de")
	require.False(t, ok)
	require.EqualError(t, reg.AddMessagesJSON("de", []byte(`[1]`)), `llmtool: messages for "de": json: cannot unmarshal array into Go value of type map[string]string`)
}
