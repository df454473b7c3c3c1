package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/sqlite"
)

// The changeset tests run on SQLite: a notes table, its children by a
// cascading foreign key, and a trigger of the host's that counts notes.

type noteIDIn struct {
	ID int64 `json:"id" minimum:"1"`
}

type editIn struct {
	ID      int64  `json:"id" minimum:"1"`
	Title   string `json:"title,omitempty"`
	Content string `json:"content,omitempty"`
}

type addNoteIn struct {
	Title   string `json:"title"`
	Content string `json:"content,omitempty"`
	Blob    string `json:"blob,omitempty"`
}

type okOut struct {
	OK bool `json:"ok"`
}

var changesetTools = llmtool.DefineTools("cs_notes",
	llmtool.Write("cs_add", "Add a note, then retitle it.", func(c *llmtool.WriteCtx, in addNoteIn) (okOut, error) {
		var blob any
		if in.Blob != "" {
			blob = []byte(in.Blob)
		}
		res, err := c.Exec(`INSERT INTO notes (title, content, data, score) VALUES (?, ?, ?, 1.0)`, in.Title+" (draft)", in.Content, blob)
		if err != nil {
			return okOut{}, err
		}
		id, _ := res.LastInsertId()
		_, err = c.Exec(`UPDATE notes SET title = ? WHERE id = ?`, in.Title, id)
		return okOut{OK: true}, err
	}),
	llmtool.Write("cs_edit", "Edit a note.", func(c *llmtool.WriteCtx, in editIn) (okOut, error) {
		_, err := c.Exec(`UPDATE notes SET title = coalesce(nullif(?, ''), title), content = coalesce(nullif(?, ''), content), updated_at = strftime('%f', 'now') WHERE id = ?`, in.Title, in.Content, in.ID)
		return okOut{OK: true}, err
	}),
	llmtool.Write("cs_delete", "Delete a note and its children.", func(c *llmtool.WriteCtx, in noteIDIn) (okOut, error) {
		var title string
		if err := c.QueryRow(`SELECT title FROM notes WHERE id = ?`, in.ID).Scan(&title); err != nil {
			return okOut{}, err
		}
		c.Describe("Delete note %q", title)
		_, err := c.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return okOut{OK: true}, err
	}, llmtool.NeedsApproval()),
	llmtool.Write("cs_fail", "Change a note, then fail.", func(c *llmtool.WriteCtx, in noteIDIn) (okOut, error) {
		if _, err := c.Exec(`UPDATE notes SET title = 'x' WHERE id = ?`, in.ID); err != nil {
			return okOut{}, err
		}
		return okOut{}, llmtool.Conflict("no")
	}),
	llmtool.Write("cs_untracked", "Write an untracked table.", func(c *llmtool.WriteCtx, in noteIDIn) (okOut, error) {
		_, err := c.Exec(`INSERT INTO scratch (v) VALUES (?)`, in.ID)
		return okOut{OK: true}, err
	}),
)

type csFixture struct {
	db  *sql.DB
	reg *llmtool.Registry
}

func newCSFixture(t *testing.T) *csFixture {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "cs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`PRAGMA foreign_keys = ON`,
		`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', data BLOB, score REAL, updated_at TEXT)`,
		`CREATE TABLE children (id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE, body TEXT)`,
		`CREATE TABLE stats (k TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE scratch (v INTEGER)`,
		`INSERT INTO stats VALUES ('notes', 0)`,
		`CREATE TRIGGER notes_count_ins AFTER INSERT ON notes BEGIN UPDATE stats SET n = n + 1 WHERE k = 'notes'; END`,
		`CREATE TRIGGER notes_count_del AFTER DELETE ON notes BEGIN UPDATE stats SET n = n - 1 WHERE k = 'notes'; END`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	reg := newRegistryOpts(t, db, &llmtool.Options{ValidateOutput: true, Changesets: changeset.Config{
		Tables:    []string{"notes", "children", "stats"},
		Generated: map[string][]string{"notes": {"updated_at"}},
		Tools:     true,
	}}, changesetTools)
	return &csFixture{db: db, reg: reg}
}

// dump is every tracked table's rows, as text, for comparing states.
func (f *csFixture) dump(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT id, title, content, quote(data), quote(score), quote(updated_at) FROM notes ORDER BY id`,
		`SELECT id, note_id, body, '', '', '' FROM children ORDER BY id`,
		`SELECT k, n, '', '', '', '' FROM stats ORDER BY k`,
	} {
		rows, err := f.db.Query(q)
		require.NoError(t, err)
		for rows.Next() {
			v := make([]any, 6)
			p := make([]any, 6)
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

func (f *csFixture) call(t *testing.T, ctx context.Context, tool, args string) llmtool.Result {
	t.Helper()
	return f.reg.Invoke(ctx, llmtool.Call{Tool: tool, Args: []byte(args), Conversation: "conv-1"})
}

func rowsJSON(t *testing.T, set *changeset.Set) string {
	t.Helper()
	require.NotNil(t, set)
	b, err := json.Marshal(set.Rows)
	require.NoError(t, err)
	return string(b)
}

func TestChangesetCapture(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()

	res := f.call(t, ctx, "cs_add", `{"title": "Plans", "content": "the original words", "blob": "hi"}`)
	require.False(t, res.IsError, res.Text())
	// The insert and the update of one row merge into an insert of the
	// final values; the host's trigger's update of stats is captured too.
	require.JSONEq(t, `[
		{"table":"notes","op":"insert","key":{"id":1},"after":{"id":1,"title":"Plans","content":"the original words","data":{"$bytes":"aGk="},"score":1.0,"updated_at":null}},
		{"table":"stats","op":"update","key":{"k":"notes"},"before":{"k":"notes","n":0},"after":{"k":"notes","n":1}}
	]`, rowsJSON(t, res.Changeset))
	require.Positive(t, res.Changeset.ID)
	require.Empty(t, res.Changeset.NotUndoable)

	_, err := f.db.Exec(`INSERT INTO children (note_id, body) VALUES (1, 'a'), (1, 'b')`)
	require.NoError(t, err)

	// A failed call rolls back: no changeset, no history.
	res = f.call(t, ctx, "cs_fail", `{"id": 1}`)
	require.True(t, res.IsError)
	require.Nil(t, res.Changeset)

	// An untracked table makes the call not undoable, with the reason.
	res = f.call(t, ctx, "cs_untracked", `{"id": 5}`)
	require.False(t, res.IsError, res.Text())
	require.Equal(t, "it changed table scratch, which is not tracked", res.Changeset.NotUndoable)

	entries, err := changeset.List(ctx, f.db, changeset.Filter{Conversation: "conv-1"})
	require.NoError(t, err)
	require.Len(t, entries, 2, "the failed call left no history")
	require.Equal(t, "cs_untracked", entries[0].Tool)
	require.Equal(t, "cs_add", entries[1].Tool)

	byNote, err := changeset.List(ctx, f.db, changeset.Filter{Table: "notes", Key: changeset.Values{"id": json.RawMessage("1")}})
	require.NoError(t, err)
	require.Len(t, byNote, 1)
	require.Equal(t, "cs_add", byNote[0].Tool)
}

func TestChangesetExactApproval(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	require.False(t, f.call(t, ctx, "cs_add", `{"title": "Exact Me", "content": "the original words"}`).IsError)
	_, err := f.db.Exec(`INSERT INTO children (note_id, body) VALUES (1, 'child')`)
	require.NoError(t, err)

	ask := f.call(t, ctx, "cs_delete", `{"id": 1}`)
	require.True(t, ask.IsError)
	require.ErrorIs(t, ask.Err, approval.ErrRequired)
	pv := ask.Approval.Preview
	require.NotNil(t, pv.Changeset)
	// The person sees which rows go, and what they say: the cascade of
	// the child and the host's trigger included.
	require.Equal(t, `delete notes (id=1): content="the original words", data=null, id=1, score=1.0, title="Exact Me", updated_at=null
delete children (id=1): body="child", id=1, note_id=1
update stats (k="notes"): n 1 → 0`, pv.Changeset.String())
	require.Contains(t, ask.Text(), `content="the original words"`)

	// Another client replaces the content: same counts, same title.
	_, err = f.db.Exec(`UPDATE notes SET content = 'words never seen' WHERE id = 1`)
	require.NoError(t, err)
	again := f.reg.Invoke(ctx, llmtool.Call{Tool: "cs_delete", Args: []byte(`{"id": 1}`), Approval: &approval.Answer{Token: ask.Approval.Token, Approved: true}})
	require.True(t, again.IsError)
	require.ErrorIs(t, again.Err, approval.ErrRequired)
	require.Contains(t, again.Text(), "The data changed since the user approved this change, so nothing was saved.")
	require.Contains(t, again.Approval.Preview.Changeset.String(), `content="words never seen"`)
	var n int
	require.NoError(t, f.db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n))
	require.Equal(t, 1, n, "nothing was deleted")

	// Approving what is there now commits.
	ok := f.reg.Invoke(ctx, llmtool.Call{Tool: "cs_delete", Args: []byte(`{"id": 1}`), Approval: &approval.Answer{Token: again.Approval.Token, Approved: true}})
	require.False(t, ok.IsError, ok.Text())
	require.NotNil(t, ok.Changeset)
	require.Len(t, ok.Changeset.Rows, 3)
}

func TestChangesetGeneratedColumnsDoNotBreakApproval(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	require.False(t, f.call(t, ctx, "cs_add", `{"title": "T"}`).IsError)
	// A dry run previews; a second one sets updated_at anew, and the
	// digest, which binds that it changes and not to what, is the same.
	dry1 := f.reg.Invoke(ctx, llmtool.Call{Tool: "cs_edit", Args: []byte(`{"id": 1, "title": "U"}`), DryRun: true})
	dry2 := f.reg.Invoke(ctx, llmtool.Call{Tool: "cs_edit", Args: []byte(`{"id": 1, "title": "U"}`), DryRun: true})
	require.False(t, dry1.IsError, dry1.Text())
	d := func(r llmtool.Result) string {
		return r.Preview.Changeset.Digest(func(tb, c string) bool { return tb == "notes" && c == "updated_at" })
	}
	require.Equal(t, d(dry1), d(dry2))
	require.Contains(t, string(dry1.JSON), `"changeset":{"rows":[{"table":"notes","op":"update"`, "a dry run returns the changeset")
	require.NotEqual(t, dry1.Preview.Changeset.Digest(nil), "", "a digest")
}

func TestChangesetUndo(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	alice := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "alice"})
	bob := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "bob"})

	require.False(t, f.call(t, alice, "cs_add", `{"title": "Plans", "content": "words", "blob": "b"}`).IsError)
	_, err := f.db.Exec(`INSERT INTO children (note_id, body) VALUES (1, 'x'), (1, 'y')`)
	require.NoError(t, err)
	before := f.dump(t)

	ask := f.call(t, alice, "cs_delete", `{"id": 1}`)
	del := f.reg.Invoke(alice, llmtool.Call{Tool: "cs_delete", Args: []byte(`{"id": 1}`), Conversation: "conv-1", Approval: &approval.Answer{Token: ask.Approval.Token, Approved: true}})
	require.False(t, del.IsError, del.Text())
	require.NotEqual(t, before, f.dump(t))

	// Only the principal who made a change may undo it.
	res := f.call(t, bob, "undo_changes", fmt.Sprintf(`{"id": %d}`, del.Changeset.ID))
	require.True(t, res.IsError)
	require.Equal(t, fmt.Sprintf("Change %d was made by someone else; only they can undo it.", del.Changeset.ID), res.Text())

	undo := f.call(t, alice, "undo_changes", fmt.Sprintf(`{"id": %d}`, del.Changeset.ID))
	require.False(t, undo.IsError, undo.Text())
	require.Equal(t, before, f.dump(t), "undo restores every row, the cascade's and the trigger's")
	require.JSONEq(t, fmt.Sprintf(`{"undone": [%d]}`, del.Changeset.ID), string(undo.JSON))

	again := f.call(t, alice, "undo_changes", fmt.Sprintf(`{"id": %d}`, del.Changeset.ID))
	require.True(t, again.IsError)
	require.Contains(t, again.Text(), fmt.Sprintf("Change %d was already undone by change %d.", del.Changeset.ID, undo.Changeset.ID))

	// The undo is a change of its own: undoing it deletes again.
	redo := f.call(t, alice, "undo_changes", fmt.Sprintf(`{"id": %d}`, undo.Changeset.ID))
	require.False(t, redo.IsError, redo.Text())
	var n int
	require.NoError(t, f.db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n))
	require.Zero(t, n)
}

func TestChangesetUndoConflict(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	require.False(t, f.call(t, ctx, "cs_add", `{"title": "A"}`).IsError)
	edit := f.call(t, ctx, "cs_edit", `{"id": 1, "title": "B", "content": "new"}`)
	require.False(t, edit.IsError, edit.Text())
	_, err := f.db.Exec(`UPDATE notes SET content = 'someone else' WHERE id = 1`)
	require.NoError(t, err)
	before := f.dump(t)

	res := f.call(t, ctx, "undo_changes", fmt.Sprintf(`{"id": %d}`, edit.Changeset.ID))
	require.True(t, res.IsError)
	require.Equal(t, fmt.Sprintf("Nothing was undone, because 1 row(s) changed since: notes (id=1) is not as change %d left it. Tell the user which rows changed, and ask what to do.", edit.Changeset.ID), res.Text())
	require.Equal(t, before, f.dump(t), "a conflicting undo changes nothing")

	// A conversation's changes since a point: both, newest first, once
	// the row is back as the edit left it.
	_, err = f.db.Exec(`UPDATE notes SET content = 'new' WHERE id = 1`)
	require.NoError(t, err)
	all := f.call(t, ctx, "undo_changes", `{"since": 0}`)
	require.False(t, all.IsError, all.Text())
	var n int
	require.NoError(t, f.db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n))
	require.Zero(t, n)
}

func TestChangesetToolsAndResource(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	other := func(tool, args string) llmtool.Result {
		return f.reg.Invoke(ctx, llmtool.Call{Tool: tool, Args: []byte(args), Conversation: "conv-2"})
	}
	require.False(t, f.call(t, ctx, "cs_add", `{"title": "A"}`).IsError)
	require.False(t, other("cs_add", `{"title": "B"}`).IsError)

	list := f.call(t, ctx, "list_changes", `{}`)
	require.False(t, list.IsError, list.Text())
	var got struct {
		Changes []changeset.Entry `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(list.JSON, &got))
	require.Len(t, got.Changes, 1, "this conversation's changes")
	require.Equal(t, "conv-1", got.Changes[0].Conversation)
	all := f.call(t, ctx, "list_changes", `{"all": true}`)
	require.NoError(t, json.Unmarshal(all.JSON, &got))
	require.Len(t, got.Changes, 2)

	res := f.reg.Invoke(ctx, llmtool.Call{Resource: "changes://recent"})
	require.False(t, res.IsError, res.Text())
	require.Len(t, res.Content, 1)
	require.Contains(t, res.Content[0].Text, `"tool":"cs_add"`)

	// With no arguments, undo takes this conversation's last change: the
	// other conversation's note stays.
	u := other("undo_changes", `{}`)
	require.False(t, u.IsError, u.Text())
	var titles []string
	rows, err := f.db.Query(`SELECT title FROM notes ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		titles = append(titles, s)
	}
	require.NoError(t, rows.Close())
	require.Equal(t, []string{"A"}, titles)
	none := f.reg.Invoke(ctx, llmtool.Call{Tool: "undo_changes", Args: []byte(`{}`), Conversation: "conv-3"})
	require.True(t, none.IsError)
	require.Equal(t, "This conversation has made no changes to undo. Call list_changes with all set to see the workspace's changes.", none.Text())
}
