package main

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/tenant"
)

// TestRowChecksThroughMCP: with the store's tracking (notes.Changesets),
// a write that forgot its ref tags (run_sql, a careless host's tool) is
// refused at commit, over MCP, in the words of the tagged tools, when it
// changes a protected note or renames or deletes a system note; nothing
// is saved. And the history needs notes:read: a token with notes:write
// alone may neither list the changes nor read changes://recent.
func TestRowChecksThroughMCP(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := notes.Open(ctx, filepath.Join(t.TempDir(), "notes.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		ApprovalKey:    deriveKey(secToken, "notes-mcp approval tokens"),
		Logger:         slog.New(slog.DiscardHandler),
		TenantCacheTTL: tenant.NoCache,
		Changesets:     notes.Changesets,
	}, notes.Tools, carelessTools)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reg.Close()) })
	require.NoError(t, reg.Tenants().SetWrites(ctx, "A", true))
	url := serveSec(t, reg, false)
	ac := secClient(t, url, "alice-token", mcp.ProtocolVersion20251125, nil, nil)

	dump := `SELECT 'notes'`
	tests := []struct {
		name, sql, want string
	}{
		{"a protected note's title", `UPDATE notes SET title = 'Public' WHERE noteId = 'secret'`,
			`Note "secret" (noteId) is protected; tools may neither read nor change it.`},
		{"a protected note's protection and content at once", `UPDATE notes SET isProtected = 0, content = 'leak' WHERE noteId = 'secret'`,
			`Note "secret" (noteId) is protected; tools may neither read nor change it.`},
		{"the root note renamed", `UPDATE notes SET title = 'Mine' WHERE noteId = 'root'`,
			`Note "root" (noteId) is a system note; run_sql must not change it.`},
		{"a system note deleted (softly, as the store deletes)", `UPDATE notes SET isDeleted = 1 WHERE noteId = '_hidden'`,
			`Note "_hidden" (noteId) is a system note; run_sql must not change it.`},
	}
	for _, tt := range tests {
		before := tableDump(t, db, dump)
		text := callError(t, ac, "run_sql", map[string]any{"sql": tt.sql})
		require.Contains(t, text, tt.want, tt.name)
		require.Equal(t, before, tableDump(t, db, dump), "%s: nothing is saved", tt.name)
	}

	// A change of a note that is none of these commits, and is in the
	// history for a reader with notes:read.
	callOK(t, ac, "run_sql", map[string]any{"sql": `UPDATE notes SET title = 'Soup' WHERE noteId = 'recipes'`})
	require.NotEmpty(t, callOK(t, ac, "list_changes", map[string]any{"all": true})["changes"])

	writer := secClient(t, url, "writer-token", mcp.ProtocolVersion20251125, nil, nil)
	_, err = writer.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "list_changes", Arguments: map[string]any{"all": true}}})
	require.ErrorContains(t, err, `Tool "list_changes" needs the scope notes:read, which this sign-in does not grant`)
	_, err = writer.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "changes://recent"}})
	require.ErrorContains(t, err, "notes:read")
}
