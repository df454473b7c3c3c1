package notes_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/internal/pgtest"
)

// dumpNotes is the store's rows, for comparing states byte for byte.
func dumpNotes(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT rowid, noteId, title, type, mime, content, isProtected, isDeleted, dateCreated, dateModified FROM notes ORDER BY noteId`,
		`SELECT rowid, branchId, noteId, parentNoteId, position, isDeleted, '', '', '', '' FROM branches ORDER BY branchId`,
		`SELECT rowid, attributeId, noteId, type, name, value, position, isDeleted, '', '' FROM attributes ORDER BY attributeId`,
		`SELECT rowid, revisionId, noteId, title, content, source, dateCreated, '', '', '' FROM revisions ORDER BY revisionId`,
	} {
		rows, err := db.Query(q)
		require.NoError(t, err)
		for rows.Next() {
			v := make([]any, 10)
			p := make([]any, 10)
			for i := range v {
				p[i] = &v[i]
			}
			require.NoError(t, rows.Scan(p...))
			fmt.Fprintln(&b, v...)
		}
		require.NoError(t, rows.Close())
	}
	return b.String()
}

// trackedNotes opens the store at path (a file, or a PostgreSQL URL) and
// a registry of notes.Tools on it with the store's tracking
// (notes.Changesets), writes on.
func trackedNotes(t *testing.T, ctx context.Context, path string) (*sql.DB, *llmtool.Registry) {
	t.Helper()
	db, err := notes.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.DiscardHandler), Changesets: notes.Changesets}, notes.Tools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))
	return db, reg
}

// TestChangesets edits, renames and deletes notes through the notes tools
// with changesets on, and undoes: each undo brings the store back byte
// for byte, and an undo of a note someone changed since changes nothing.
func TestChangesets(t *testing.T) {
	t.Parallel()
	ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ana"})
	db, reg := trackedNotes(t, ctx, filepath.Join(t.TempDir(), "notes.db"))
	call := func(tool, args string) llmtool.Result {
		t.Helper()
		return reg.Invoke(ctx, llmtool.Call{Tool: tool, Args: []byte(args), Conversation: "c1"})
	}
	undo := func(id int64) llmtool.Result {
		t.Helper()
		return call("undo_changes", fmt.Sprintf(`{"id": %d}`, id))
	}

	steps := []struct{ tool, args string }{
		{"rename_note", `{"noteId": "pancakes", "title": "Crêpes"}`},
		{"edit_note_content", `{"noteId": "pancakes", "oldText": "2 eggs", "newText": "3 eggs"}`},
		{"create_note", `{"parentNoteId": "recipes", "title": "Waffles", "content": "batter"}`},
		{"set_attribute", `{"noteId": "pancakes", "type": "label", "name": "tried", "value": "yes"}`},
	}
	for _, s := range steps {
		t.Run(s.tool, func(t *testing.T) {
			before := dumpNotes(t, db)
			res := call(s.tool, s.args)
			require.False(t, res.IsError, res.Text())
			require.NotNil(t, res.Changeset)
			require.Empty(t, res.Changeset.NotUndoable)
			require.NotEqual(t, before, dumpNotes(t, db))
			u := undo(res.Changeset.ID)
			require.False(t, u.IsError, u.Text())
			require.Equal(t, before, dumpNotes(t, db), "undo restores the store byte for byte")
		})
	}

	t.Run("delete with children, approved", func(t *testing.T) {
		before := dumpNotes(t, db)
		ask := call("delete_note", `{"noteId": "recipes"}`)
		if ask.Approval != nil { // the tenant may require approval of destructive tools
			ask = reg.Invoke(ctx, llmtool.Call{Tool: "delete_note", Args: []byte(`{"noteId": "recipes"}`), Conversation: "c1",
				Approval: &approval.Answer{Token: ask.Approval.Token, Approved: true}})
		}
		require.False(t, ask.IsError, ask.Text())
		require.Greater(t, len(ask.Changeset.Rows), 2, "the note, its children and their branches")
		u := undo(ask.Changeset.ID)
		require.False(t, u.IsError, u.Text())
		require.Equal(t, before, dumpNotes(t, db))
	})

	t.Run("conflicting undo", func(t *testing.T) {
		res := call("rename_note", `{"noteId": "pancakes", "title": "Crêpes"}`)
		require.False(t, res.IsError, res.Text())
		other := call("rename_note", `{"noteId": "pancakes", "title": "Galettes"}`)
		require.False(t, other.IsError, other.Text())
		before := dumpNotes(t, db)
		u := undo(res.Changeset.ID)
		require.True(t, u.IsError)
		require.Equal(t, fmt.Sprintf(`Nothing was undone, because 1 row(s) changed since: notes (noteId="pancakes") is not as change %d left it. Tell the user which rows changed, and ask what to do.`, res.Changeset.ID), u.Text())
		require.Equal(t, before, dumpNotes(t, db))
	})
}

// TestChangeWords: each write of the notes tools reads in the store's
// words (the Entity declarations of notes, branches and attributes), in
// its committed result and in list_changes: no IDs, timestamps or flags;
// on PostgreSQL too (LLMTOOL_TEST_ENGINE=postgres), whose catalog spells
// the columns in lower case.
func TestChangeWords(t *testing.T) {
	t.Parallel()
	ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ana"})
	path := filepath.Join(t.TempDir(), "notes.db")
	if pgtest.FromEnv() {
		path = pgtest.DSN(t)
	}
	_, reg := trackedNotes(t, ctx, path)
	for _, tc := range []struct {
		tool, args string
		want       string
	}{
		{"rename_note", `{"noteId": "pancakes", "title": "Crêpes"}`, `Change note "Pancakes": title "Pancakes" → "Crêpes"`},
		{"set_attribute", `{"noteId": "pancakes", "type": "label", "name": "tried", "value": "yes"}`, `Create attribute "tried": value "yes"`},
		{"move_note", `{"noteId": "pancakes", "parentNoteId": "projects"}`, `Change branch: under "recipes" → "projects"`},
		{"set_attribute", `{"noteId": "pancakes", "type": "label", "name": "tried", "value": "no"}`, `Change attribute "tried": value "yes" → "no"`},
		{"delete_note", `{"noteId": "pancakes"}`, "Delete note \"Crêpes\": content \"<p>Whisk 250 g flour, 2 eggs, 500 ml milk and a pinch of sal…\", type \"text\"\n" +
			"Delete branch: under \"projects\"\nDelete attribute \"cuisine\": value \"french\"\nDelete attribute \"tried\": value \"no\""},
	} {
		res := reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Args: []byte(tc.args), Conversation: "c1"})
		require.False(t, res.IsError, res.Text())
		require.Equal(t, tc.want, res.Changeset.String(), tc.tool)
	}
	list := reg.Invoke(ctx, llmtool.Call{Tool: "list_changes", Args: []byte(`{"limit": 1}`), Conversation: "c1"})
	require.False(t, list.IsError, list.Text())
	require.Contains(t, string(list.JSON), `"text":"Delete note \"Crêpes\": content`)
}
