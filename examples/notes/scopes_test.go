package notes_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// TestScopes: every read tool, the note resource and summarize_note need
// the OAuth scope notes:read, every write tool notes:write, so that a
// token is limited to what it was granted; a tool added without scopes
// would be open to every token.
func TestScopes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	specs, err := h.Registry().List(h.Context(), &llmtool.ListOptions{All: true})
	require.NoError(t, err)
	for _, s := range specs {
		if s.Name == "man" {
			continue // the registry's own catalog, open to every principal
		}
		want := "notes:read"
		if !s.ReadOnly {
			want = "notes:write"
		}
		require.Equal(t, []string{want}, s.Scopes, s.Name)
	}

	reader := llmtool.WithPrincipal(h.Context(), &llmtool.Principal{ID: "ada", Scopes: []string{"notes:read"}})
	listed, err := h.Registry().List(reader, nil)
	require.NoError(t, err)
	for _, s := range listed {
		require.True(t, s.ReadOnly, "a notes:read token is shown %s", s.Name)
	}
	h.RequireError(h.CallContext(reader, "create_note", map[string]any{"parentNoteId": "root", "title": "x", "content": "x"}),
		`Tool "create_note" needs the scope notes:write, which this sign-in does not grant. Ask the user to sign in again granting notes:write, then call create_note again.`)
	h.RequireOK(h.CallContext(reader, "get_note", map[string]any{"noteId": "root"}))
}
