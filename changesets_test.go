package llmtool_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/sqlite"
)

// The changeset tests run on SQLite, or on PostgreSQL with
// LLMTOOL_TEST_ENGINE=postgres: a notes table, its children by a
// cascading foreign key, and a trigger of the host's that counts notes.
// Where the engines record the same change differently (a blob, a real,
// the order of a cascade's rows), the test says both.

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

type csSQLIn struct {
	SQL []string `json:"sql"`
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
		var id int64
		if err := c.QueryRow(`INSERT INTO notes (title, content, data, score) VALUES (?, ?, ?, 1.0) RETURNING id`, in.Title+" (draft)", in.Content, blob).Scan(&id); err != nil {
			return okOut{}, err
		}
		_, err := c.Exec(`UPDATE notes SET title = ? WHERE id = ?`, in.Title, id)
		return okOut{OK: true}, err
	}),
	llmtool.Write("cs_edit", "Edit a note.", func(c *llmtool.WriteCtx, in editIn) (okOut, error) {
		now := `strftime('%f', 'now')`
		if c.Engine() == "postgres" {
			now = `clock_timestamp()::text`
		}
		_, err := c.Exec(`UPDATE notes SET title = coalesce(nullif(?, ''), title), content = coalesce(nullif(?, ''), content), updated_at = `+now+` WHERE id = ?`, in.Title, in.Content, in.ID)
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
	llmtool.Write("cs_delete_child", "Delete a child.", func(c *llmtool.WriteCtx, in noteIDIn) (okOut, error) {
		_, err := c.Exec(`DELETE FROM children WHERE id = ?`, in.ID)
		return okOut{OK: true}, err
	}),
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
	llmtool.Write("cs_sql", "Run statements.", func(c *llmtool.WriteCtx, in csSQLIn) (okOut, error) {
		for _, q := range in.SQL {
			if _, err := c.Exec(q); err != nil {
				return okOut{}, err
			}
		}
		return okOut{OK: true}, nil
	}),
)

// csSchema is the host's schema on each engine.
func csSchema(pg bool) []string {
	if pg {
		return []string{
			`CREATE TABLE notes (id BIGSERIAL PRIMARY KEY, title TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', data BYTEA, score DOUBLE PRECISION, updated_at TEXT)`,
			`CREATE TABLE children (id BIGSERIAL PRIMARY KEY, note_id BIGINT NOT NULL REFERENCES notes(id) ON DELETE CASCADE, body TEXT)`,
			`CREATE TABLE stats (k TEXT PRIMARY KEY, n INTEGER NOT NULL)`,
			`CREATE TABLE scratch (v INTEGER)`,
			`INSERT INTO stats VALUES ('notes', 0)`,
			`CREATE FUNCTION notes_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE stats SET n = n + CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END WHERE k = 'notes';
	RETURN NULL;
END $$`,
			`CREATE TRIGGER notes_count AFTER INSERT OR DELETE ON notes FOR EACH ROW EXECUTE FUNCTION notes_count()`,
		}
	}
	return []string{
		`PRAGMA foreign_keys = ON`,
		`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', data BLOB, score REAL, updated_at TEXT)`,
		`CREATE TABLE children (id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE, body TEXT)`,
		`CREATE TABLE stats (k TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE scratch (v INTEGER)`,
		`INSERT INTO stats VALUES ('notes', 0)`,
		`CREATE TRIGGER notes_count_ins AFTER INSERT ON notes BEGIN UPDATE stats SET n = n + 1 WHERE k = 'notes'; END`,
		`CREATE TRIGGER notes_count_del AFTER DELETE ON notes BEGIN UPDATE stats SET n = n - 1 WHERE k = 'notes'; END`,
	}
}

type csFixture struct {
	db    *sql.DB
	reg   *llmtool.Registry
	pg    bool
	where string // the SQLite file or the PostgreSQL DSN
	opts  llmtool.Options
}

// newCSFixture opens the fixture on the engine under test.
func newCSFixture(t *testing.T) *csFixture {
	t.Helper()
	return newCSFixtureOn(t, pgtest.FromEnv(), "")
}

// newCSFixtureOn opens the fixture on PostgreSQL (pg) or SQLite, its
// tools run as role (PostgreSQL's Options.Role) unless it is "".
func newCSFixtureOn(t *testing.T, pg bool, role string) *csFixture {
	t.Helper()
	f := &csFixture{pg: pg, where: filepath.Join(t.TempDir(), "cs.db")}
	if pg {
		f.where = pgtest.DSN(t)
	}
	f.db = f.open(t)
	for _, q := range csSchema(pg) {
		_, err := f.db.Exec(q)
		require.NoError(t, err, q)
	}
	if role != "" {
		for _, q := range []string{
			`GRANT SELECT, INSERT, UPDATE, DELETE ON notes, children, stats, scratch TO ` + role,
			`GRANT USAGE ON SEQUENCE notes_id_seq, children_id_seq TO ` + role,
		} {
			_, err := f.db.Exec(q)
			require.NoError(t, err, q)
		}
	}
	f.opts = llmtool.Options{ValidateOutput: true, Role: role, Changesets: changeset.Config{
		Tables:    []string{"notes", "children", "stats"},
		Generated: map[string][]string{"notes": {"updated_at"}},
		Tools:     true,
	}}
	f.reg = f.registry(t, f.db)
	return f
}

// open opens another handle on the fixture's database, as another
// process or replica would.
func (f *csFixture) open(t *testing.T) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if f.pg {
		db, err = sql.Open("pgx", f.where)
	} else {
		db, err = sqlite.Open(f.where)
	}
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// registry is a registry on db with the fixture's options and tools.
func (f *csFixture) registry(t *testing.T, db *sql.DB) *llmtool.Registry {
	t.Helper()
	opts := f.opts
	return newRegistryOpts(t, db, &opts, changesetTools)
}

// dump is every tracked table's rows, as text, for comparing states.
func (f *csFixture) dump(t *testing.T) string {
	t.Helper()
	qs := []string{
		`SELECT json_array(id, title, content, quote(data), quote(score), quote(updated_at)) FROM notes ORDER BY id`,
		`SELECT json_array(id, note_id, body) FROM children ORDER BY id`,
		`SELECT json_array(k, n) FROM stats ORDER BY k`,
	}
	if f.pg {
		qs = []string{
			`SELECT to_jsonb(t.*)::text FROM notes t ORDER BY id`,
			`SELECT to_jsonb(t.*)::text FROM children t ORDER BY id`,
			`SELECT to_jsonb(t.*)::text FROM stats t ORDER BY k`,
		}
	}
	var b strings.Builder
	for _, q := range qs {
		rows, err := f.db.Query(q)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			fmt.Fprintln(&b, s)
		}
		require.NoError(t, rows.Close())
	}
	return b.String()
}

func (f *csFixture) call(t *testing.T, ctx context.Context, tool, args string) llmtool.Result {
	t.Helper()
	return f.reg.Invoke(ctx, llmtool.Call{Tool: tool, Args: []byte(args), Conversation: "conv-1"})
}

func (f *csFixture) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.QueryRow(`SELECT count(*) FROM `+table).Scan(&n))
	return n
}

// either is the SQLite form of what a test expects, or the PostgreSQL
// form on PostgreSQL.
func (f *csFixture) either(sqlite, postgres string) string {
	if f.pg {
		return postgres
	}
	return sqlite
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
	// A blob is base64 on SQLite, to_jsonb's hex on PostgreSQL; a real
	// keeps its fraction on SQLite, to_jsonb drops it.
	require.JSONEq(t, `[
		{"table":"notes","op":"insert","key":{"id":1},"after":{"id":1,"title":"Plans","content":"the original words","data":`+f.either(`{"$bytes":"aGk="}`, `"\\x6869"`)+`,"score":`+f.either("1.0", "1")+`,"updated_at":null}},
		{"table":"stats","op":"update","key":{"k":"notes"},"before":{"k":"notes","n":0},"after":{"k":"notes","n":1}}
	]`, rowsJSON(t, res.Changeset))
	require.Positive(t, res.Changeset.ID)
	require.Empty(t, res.Changeset.NotUndoable)

	_, err := f.db.Exec(`INSERT INTO children (note_id, body) VALUES (1, 'a'), (1, 'b')`)
	require.NoError(t, err)

	// An untracked table makes the call not undoable, with the reason.
	res = f.call(t, ctx, "cs_untracked", `{"id": 5}`)
	require.False(t, res.IsError, res.Text())
	require.Equal(t, "it changed table scratch, which is not tracked", res.Changeset.NotUndoable)
	require.Zero(t, res.Changeset.ID, "a call that changed no tracked row has no history entry")

	entries, err := changeset.List(ctx, f.db, changeset.Filter{Conversation: "conv-1"})
	require.NoError(t, err)
	require.Len(t, entries, 1, "neither the failed call nor the untracked one is in the history")
	require.Equal(t, "cs_add", entries[0].Tool)

	byNote, err := changeset.List(ctx, f.db, changeset.Filter{Table: "notes", Key: changeset.Values{"id": json.RawMessage("1")}})
	require.NoError(t, err)
	require.Len(t, byNote, 1)
	require.Equal(t, "cs_add", byNote[0].Tool)
}

// TestChangesetRolledBack: a call that fails rolls back, and so does its
// changeset: no history, and nothing of the capture left behind.
func TestChangesetRolledBack(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	require.False(t, f.call(t, ctx, "cs_add", `{"title": "A"}`).IsError)
	before := f.dump(t)

	res := f.call(t, ctx, "cs_fail", `{"id": 1}`)
	require.True(t, res.IsError)
	require.Equal(t, "no", res.Text())
	require.Nil(t, res.Changeset)
	require.Equal(t, before, f.dump(t))
	entries, err := changeset.List(ctx, f.db, changeset.Filter{})
	require.NoError(t, err)
	require.Len(t, entries, 1, "the failed call left no history")
	require.Equal(t, "cs_add", entries[0].Tool)
	if f.pg {
		require.Zero(t, f.count(t, "llmtool_capture"), "each call takes the rows its triggers recorded")
	}

	// The host's own writes record nothing.
	_, err = f.db.Exec(`UPDATE notes SET title = 'by the host'`)
	require.NoError(t, err)
	if f.pg {
		require.Zero(t, f.count(t, "llmtool_capture"))
	}
	entries, err = changeset.List(ctx, f.db, changeset.Filter{})
	require.NoError(t, err)
	require.Len(t, entries, 1)
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
	// the child and the host's trigger included. SQLite's hook sees the
	// cascade as it happens; PostgreSQL's triggers see it after the
	// note's own triggers (the host's count among them).
	require.Equal(t, f.either(`delete notes (id=1): content="the original words", data=null, id=1, score=1.0, title="Exact Me", updated_at=null
delete children (id=1): body="child", id=1, note_id=1
update stats (k="notes"): n 1 → 0`, `delete notes (id=1): content="the original words", data=null, id=1, score=1, title="Exact Me", updated_at=null
update stats (k="notes"): n 1 → 0
delete children (id=1): body="child", id=1, note_id=1`), pv.Changeset.String())

	// Another client replaces the content: same counts, same title.
	_, err = f.db.Exec(`UPDATE notes SET content = 'words never seen' WHERE id = 1`)
	require.NoError(t, err)
	again := f.reg.Invoke(ctx, llmtool.Call{Tool: "cs_delete", Args: []byte(`{"id": 1}`), Approval: &approval.Answer{Token: ask.Approval.Token, Approved: true}})
	require.True(t, again.IsError)
	require.ErrorIs(t, again.Err, approval.ErrRequired)
	require.Contains(t, again.Text(), "The data changed since the user approved this change, so nothing was saved.")
	require.Contains(t, again.Approval.Preview.Changeset.String(), `content="words never seen"`)
	require.Equal(t, 1, f.count(t, "notes"), "nothing was deleted")

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

// testUndo deletes a note with its children, checks who may undo it,
// undoes it and redoes it, comparing the tables' dumps.
func testUndo(t *testing.T, f *csFixture) {
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

	// The children come back after their note: on SQLite the undo checks
	// foreign keys at commit; on PostgreSQL, where the cascade recorded
	// them after the note, a child refused first is tried again after it.
	undo := f.call(t, alice, "undo_changes", fmt.Sprintf(`{"id": %d}`, del.Changeset.ID))
	require.False(t, undo.IsError, undo.Text())
	require.Equal(t, before, f.dump(t), "undo restores every row, the cascade's and the trigger's")
	require.JSONEq(t, fmt.Sprintf(`{"undone": [%d]}`, del.Changeset.ID), string(undo.JSON))

	again := f.call(t, alice, "undo_changes", fmt.Sprintf(`{"id": %d}`, del.Changeset.ID))
	require.True(t, again.IsError)
	require.Equal(t, fmt.Sprintf("Change %d was already undone by change %d. Undo change %d to redo it.", del.Changeset.ID, undo.Changeset.ID, undo.Changeset.ID), again.Text())

	// The undo is a change of its own: undoing it deletes again.
	redo := f.call(t, alice, "undo_changes", fmt.Sprintf(`{"id": %d}`, undo.Changeset.ID))
	require.False(t, redo.IsError, redo.Text())
	require.Zero(t, f.count(t, "notes"))
	require.Zero(t, f.count(t, "children"))
}

func TestChangesetUndo(t *testing.T) {
	t.Parallel()
	testUndo(t, newCSFixture(t))
}

// TestChangesetMayUndo: another principal's change is undone only when
// Changesets.MayUndo allows it; its refusal is in its own words when it
// gives them, and always wraps ErrNotAuthorized.
func TestChangesetMayUndo(t *testing.T) {
	t.Parallel()
	admins := func(ctx context.Context, e changeset.Entry) error {
		if p := llmtool.PrincipalFrom(ctx); p != nil && slices.Contains(p.Roles, "admin") {
			return nil
		}
		return llmtool.Denied("Only an administrator may undo %s's change %d.", e.Principal, e.ID).Next("Ask an administrator.")
	}
	for _, tc := range []struct {
		name    string
		mayUndo func(context.Context, changeset.Entry) error
		who     *llmtool.Principal
		refusal string // "" when the undo runs; %d is the change
	}{
		{"no MayUndo", nil, &llmtool.Principal{ID: "bob", Roles: []string{"admin"}}, "Change %d was made by someone else; only they can undo it."},
		{"its words", admins, &llmtool.Principal{ID: "bob"}, "Only an administrator may undo alice's change %d. Ask an administrator."},
		{"a plain error", func(context.Context, changeset.Entry) error { return errors.New("the host's reason") }, &llmtool.Principal{ID: "bob"}, "Change %d was made by someone else; only they can undo it."},
		{"allowed", admins, &llmtool.Principal{ID: "bob", Roles: []string{"admin"}}, ""},
		{"allowed, not undoable", admins, &llmtool.Principal{ID: "bob", Roles: []string{"admin"}}, "Change %d cannot be undone: it changed table scratch, which is not tracked."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCSFixture(t)
			f.opts.Changesets.MayUndo = tc.mayUndo
			f.reg = f.registry(t, f.db)
			alice := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "alice"})
			before := f.dump(t)
			add := f.call(t, alice, "cs_add", `{"title": "Plans"}`)
			if strings.HasSuffix(tc.name, "not undoable") {
				add = f.call(t, alice, "cs_sql", `{"sql": ["INSERT INTO notes (title) VALUES ('Plans')", "INSERT INTO scratch (v) VALUES (1)"]}`)
			}
			require.False(t, add.IsError, add.Text())
			added, entries := f.dump(t), f.count(t, "llmtool_changes")

			res := f.call(t, llmtool.WithPrincipal(context.Background(), tc.who), "undo_changes", fmt.Sprintf(`{"id": %d}`, add.Changeset.ID))
			if tc.refusal != "" {
				require.True(t, res.IsError)
				require.Equal(t, fmt.Sprintf(tc.refusal, add.Changeset.ID), res.Text())
				if tc.mayUndo != nil && tc.name != "allowed, not undoable" {
					require.ErrorIs(t, res.Err, llmtool.ErrNotAuthorized)
				}
				require.Equal(t, added, f.dump(t), "nothing undone")
				require.Equal(t, entries, f.count(t, "llmtool_changes"), "no undo recorded")
				return
			}
			require.False(t, res.IsError, res.Text())
			require.Equal(t, before, f.dump(t))
			undo, err := changeset.List(context.Background(), f.db, changeset.Filter{IDs: []int64{res.Changeset.ID}})
			require.NoError(t, err)
			require.Len(t, undo, 1)
			require.Equal(t, "bob", undo[0].Principal, "the undo is bob's change")
			require.Equal(t, add.Changeset.ID, undo[0].UndoOf)
		})
	}
}

// TestChangesetUndoAsRole: with Options.Role the handler's SQL runs as a
// role without privileges on llmtool's tables; the capture triggers
// still record (their function runs as its owner), and the undo reads
// the history as the connecting user and writes the rows back as the
// role.
func TestChangesetUndoAsRole(t *testing.T) {
	t.Parallel()
	role := pgRoles(t, "NOLOGIN")[0]
	f := newCSFixtureOn(t, true, role)
	t.Cleanup(func() { _, _ = f.db.Exec(`DROP OWNED BY ` + role) })
	testUndo(t, f)
}

// TestChangesetUndoElsewhere: the history is in the database, so a
// registry on another handle to it (after a restart, or on another
// replica) undoes a change the first one made.
func TestChangesetUndoElsewhere(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	before := f.dump(t)
	add := f.call(t, ctx, "cs_add", `{"title": "A", "content": "c"}`)
	require.False(t, add.IsError, add.Text())
	require.NoError(t, f.reg.Close())

	other := f.registry(t, f.open(t))
	undo := other.Invoke(ctx, llmtool.Call{Tool: "undo_changes", Args: fmt.Appendf(nil, `{"id": %d}`, add.Changeset.ID)})
	require.False(t, undo.IsError, undo.Text())
	require.Equal(t, before, f.dump(t))
	entries, err := changeset.List(ctx, f.db, changeset.Filter{IDs: []int64{add.Changeset.ID}})
	require.NoError(t, err)
	require.Equal(t, undo.Changeset.ID, entries[0].UndoneBy)
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
	require.Zero(t, f.count(t, "notes"))
}

// TestChangesetUndoParentGone: a child whose parent was deleted since
// cannot come back; the undo fails and changes nothing.
func TestChangesetUndoParentGone(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	require.False(t, f.call(t, ctx, "cs_add", `{"title": "A"}`).IsError)
	_, err := f.db.Exec(`INSERT INTO children (note_id, body) VALUES (1, 'x')`)
	require.NoError(t, err)
	del := f.call(t, ctx, "cs_delete_child", `{"id": 1}`)
	require.False(t, del.IsError, del.Text())
	_, err = f.db.Exec(`DELETE FROM notes WHERE id = 1`)
	require.NoError(t, err)
	before := f.dump(t)

	res := f.call(t, ctx, "undo_changes", fmt.Sprintf(`{"id": %d}`, del.Changeset.ID))
	require.True(t, res.IsError)
	require.EqualError(t, res.Err, f.either("llmtool: commit: constraint failed: FOREIGN KEY constraint failed (787)",
		fmt.Sprintf(`llmtool: undo change %d, children (id=1): ERROR: insert or update on table "children" violates foreign key constraint "children_note_id_fkey" (SQLSTATE 23503)`, del.Changeset.ID)))
	require.Equal(t, before, f.dump(t))
}

// TestChangesetSchemaChange: a call that changes the schema cannot be
// undone, and says why.
func TestChangesetSchemaChange(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	require.False(t, f.call(t, ctx, "cs_add", `{"title": "A"}`).IsError)
	res := f.call(t, ctx, "cs_sql", `{"sql": ["CREATE TABLE extra (v INTEGER)", "UPDATE notes SET title = 'B'"]}`)
	require.False(t, res.IsError, res.Text())
	require.Equal(t, f.either("it changed the schema (create extra)", "it changed the schema (CREATE TABLE extra (v INTEGER))"), res.Changeset.NotUndoable)
	undo := f.call(t, ctx, "undo_changes", fmt.Sprintf(`{"id": %d}`, res.Changeset.ID))
	require.True(t, undo.IsError)
	require.Equal(t, fmt.Sprintf("Change %d cannot be undone: %s.", res.Changeset.ID, res.Changeset.NotUndoable), undo.Text())
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

type freshOut struct {
	ID    int64  `json:"id"`
	Token string `json:"token"`
}

// freshTools make values afresh on each run: a note with a new id (from
// PostgreSQL's sequence, which a rolled-back run does not give back) and
// a random token as its content, returned too; a note's content set to a
// random token; and one set from another table, which is not fresh.
var freshTools = llmtool.DefineTools("cs_fresh",
	llmtool.Write("fresh_add", "Add a note with a new token.", func(c *llmtool.WriteCtx, in addNoteIn) (freshOut, error) {
		out := freshOut{Token: rand.Text()}
		err := c.QueryRow(`INSERT INTO notes (title, content) VALUES (?, ?) RETURNING id`, in.Title, out.Token).Scan(&out.ID)
		return out, err
	}),
	llmtool.Write("fresh_touch", "Give a note a new token.", func(c *llmtool.WriteCtx, in noteIDIn) (okOut, error) {
		_, err := c.Exec(`UPDATE notes SET content = ? WHERE id = ?`, rand.Text(), in.ID)
		return okOut{OK: true}, err
	}),
	llmtool.Write("fresh_count", "Write the count of notes into a note.", func(c *llmtool.WriteCtx, in noteIDIn) (okOut, error) {
		_, err := c.Exec(`UPDATE notes SET content = (SELECT CAST(n AS TEXT) FROM stats WHERE k = 'notes') WHERE id = ?`, in.ID)
		return okOut{OK: true}, err
	}),
)

// TestChangesetApprovalFreshValues: values a tool makes afresh on each
// run do not make every approval fail where they carry no decision (a
// sequence's new id, found by the request's second run; a token in a
// column the host declares generated), while the rows' values before,
// and values the tool takes from other data, stay bound. A token the
// host does not declare asks again: TestApprovalFreshValueBound.
func TestChangesetApprovalFreshValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tool, args string
		between          string // run between the request and the approval; "" for none
		// The new preview's row then shows the change (before: the row's
		// title before; after: its content after); "" when the approval
		// commits.
		before, after string
		generated     bool // the host declares notes.content generated
	}{
		{"a new id, token and output", "fresh_add", `{"title": "New"}`, "", "", "", true},
		{"a new token in a row", "fresh_touch", `{"id": 1}`, "", "", "", true},
		{"the row changed before", "fresh_touch", `{"id": 1}`, `UPDATE notes SET title = 'Renamed' WHERE id = 1`, `"Renamed"`, "", true},
		{"a value from other data", "fresh_count", `{"id": 1}`, `UPDATE stats SET n = 42 WHERE k = 'notes'`, "", `"42"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCSFixture(t)
			if tc.generated {
				f.opts.Changesets.Generated = map[string][]string{"notes": {"updated_at", "content"}}
			}
			reg := newRegistryOpts(t, f.db, &f.opts, changesetTools, freshTools)
			ctx := context.Background()
			require.False(t, reg.Invoke(ctx, llmtool.Call{Tool: "cs_add", Args: []byte(`{"title": "First"}`)}).IsError)
			require.NoError(t, reg.Tenants().SetApproval(ctx, "", tc.tool, true))

			ask := reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Args: []byte(tc.args)})
			require.ErrorIs(t, ask.Err, approval.ErrRequired)
			if tc.between != "" {
				_, err := f.db.Exec(tc.between)
				require.NoError(t, err)
			}
			before := f.dump(t)
			res := reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Args: []byte(tc.args), Approval: &approval.Answer{Token: ask.Approval.Token, Approved: true}})
			if tc.before != "" || tc.after != "" {
				require.ErrorIs(t, res.Err, approval.ErrRequired)
				require.Contains(t, res.Text(), "The data changed since the user approved this change, so nothing was saved.")
				row := res.Approval.Preview.Changeset.Rows[0]
				if tc.before != "" {
					require.Equal(t, tc.before, string(row.Before["title"]))
				} else {
					require.Equal(t, tc.after, string(row.After["content"]))
				}
				require.Equal(t, before, f.dump(t), "nothing saved")
				res = reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Args: []byte(tc.args), Approval: &approval.Answer{Token: res.Approval.Token, Approved: true}})
			}
			require.False(t, res.IsError, res.Text())
			require.NotNil(t, res.Changeset)
			if tc.tool == "fresh_add" {
				var out freshOut
				require.NoError(t, json.Unmarshal(res.JSON, &out))
				var content string
				require.NoError(t, f.db.QueryRow(`SELECT content FROM notes WHERE id = $1`, out.ID).Scan(&content))
				require.Equal(t, out.Token, content, "the approved run's note, as it returned it")
			}
		})
	}
}

// TestChangesetAudit: a call's audit records name its entry in the
// history, in the call's transaction (audit.Table) and after it (every
// sink); a call that stored no changeset names none.
func TestChangesetAudit(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	table, err := audit.NewTable(ctx, f.db, "")
	require.NoError(t, err)
	recs := make(chan audit.Record, 10)
	opts := f.opts
	opts.Audit = []audit.Sink{table, audit.Func(func(_ context.Context, rec audit.Record) { recs <- rec })}
	reg := newRegistryOpts(t, f.db, &opts, changesetTools)
	for _, tc := range []struct {
		tool, args string
		stored     bool
	}{
		{"cs_add", `{"title": "Plans"}`, true},
		{"cs_untracked", `{"id": 7}`, false},
		{"cs_edit", `{"id": 1, "content": "more"}`, true},
	} {
		res := reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Args: []byte(tc.args)})
		require.False(t, res.IsError, res.Text())
		var want int64
		if tc.stored {
			require.NotZero(t, res.Changeset.ID)
			want = res.Changeset.ID
		}
		require.Equal(t, want, (<-recs).Changeset, tc.tool)
		var got int64
		require.NoError(t, f.db.QueryRow(`SELECT changeset FROM llmtool_audit WHERE tool = $1 ORDER BY at DESC LIMIT 1`, tc.tool).Scan(&got))
		require.Equal(t, want, got, tc.tool)
	}
}

// TestChangesetListTenants: List returns one tenant's entries, the
// tenant "" (a host without tenants) included, which the tenant index
// leaves out.
func TestChangesetListTenants(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	for _, tenant := range []string{"acme", "beta"} {
		require.NoError(t, f.reg.Tenants().SetWrites(ctx, tenant, true))
	}
	for _, c := range []struct{ tenant, title string }{{"", "mine"}, {"acme", "a1"}, {"beta", "b1"}, {"acme", "a2"}, {"", "mine too"}} {
		res := f.call(t, llmtool.WithTenant(ctx, c.tenant), "cs_add", fmt.Sprintf(`{"title": %q}`, c.title))
		require.False(t, res.IsError, res.Text())
	}
	for _, tc := range []struct {
		tenant string
		titles []string
	}{
		{"", []string{`"mine too"`, `"mine"`}},
		{"acme", []string{`"a2"`, `"a1"`}},
		{"beta", []string{`"b1"`}},
		{"nobody", nil},
	} {
		entries, err := changeset.List(ctx, f.db, changeset.Filter{Tenant: tc.tenant})
		require.NoError(t, err)
		var titles []string
		for _, e := range entries {
			require.Equal(t, tc.tenant, e.Tenant)
			titles = append(titles, string(e.Rows[0].After["title"]))
		}
		require.Equal(t, tc.titles, titles, "tenant %q", tc.tenant)
	}
}

// TestChangesetRetention: a registry with a retention deletes the entries
// older than it on its first tracked write (then at most once a minute),
// and keeps the newer ones.
func TestChangesetRetention(t *testing.T) {
	t.Parallel()
	f := newCSFixture(t)
	ctx := context.Background()
	for _, title := range []string{"old 1", "old 2", "new"} {
		res := f.call(t, ctx, "cs_add", fmt.Sprintf(`{"title": %q}`, title))
		require.False(t, res.IsError, res.Text())
	}
	_, err := f.db.Exec(`UPDATE llmtool_changes SET created_at = 0 WHERE id IN (SELECT id FROM llmtool_changes ORDER BY id LIMIT 2)`)
	require.NoError(t, err)

	f.opts.Changesets.Retention = time.Hour
	kept := f.registry(t, f.db)
	res := kept.Invoke(ctx, llmtool.Call{Tool: "cs_add", Args: []byte(`{"title": "newest"}`)})
	require.False(t, res.IsError, res.Text())
	entries, err := changeset.List(ctx, f.db, changeset.Filter{})
	require.NoError(t, err)
	var tools []string
	for _, e := range entries {
		tools = append(tools, string(e.Rows[0].After["title"]))
	}
	require.Equal(t, []string{`"newest"`, `"new"`}, tools)
}
