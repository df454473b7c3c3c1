package llmtool_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/changeset"
)

// PostgreSQL's own side of changesets: what NewRegistry refuses to track,
// what the capture triggers survive, values of every kind written back,
// and concurrent calls that each see their own rows only. They need
// LLMTOOL_TEST_POSTGRES.

func TestChangesetPGRefusesTables(t *testing.T) {
	t.Parallel()
	f := newCSFixtureOn(t, true, "")
	_, err := f.db.Exec(`CREATE VIEW note_titles AS SELECT id, title FROM notes`)
	require.NoError(t, err)
	for _, tt := range []struct{ table, err string }{
		{"missing", "llmtool: Options.Changesets: tracked table missing does not exist; create it first, or remove it from Changesets.Tables"},
		{"scratch", `llmtool: Options.Changesets: tracked table scratch has no primary key, which its changes are recorded and undone by; add one (ALTER TABLE "scratch" ADD PRIMARY KEY (...))`},
		{"note_titles", `llmtool: Options.Changesets: note_titles is not an ordinary table (pg_class.relkind "v"); track tables, not views or partitioned tables`},
	} {
		_, err := llmtool.NewRegistry(f.db, &llmtool.Options{Logger: quietLogger(), Changesets: changeset.Config{Tables: []string{"notes", tt.table}}})
		require.EqualError(t, err, tt.err)
	}
}

// TestChangesetPGKeepsItsTriggers: a tool's SQL cannot take the capture
// away from the tracked tables: naming the triggers is refused by the
// statement check, and a schema change that disables or loses them
// fails the call.
func TestChangesetPGKeepsItsTriggers(t *testing.T) {
	t.Parallel()
	f := newCSFixtureOn(t, true, "")
	ctx := context.Background()
	require.False(t, f.call(t, ctx, "cs_add", `{"title": "A"}`).IsError)
	const instead = "change tracked tables' triggers in the host's migrations, and restart the application so that llmtool installs its triggers again."
	for _, tt := range []struct{ sql, err string }{
		{`DROP TRIGGER llmtool_capture ON notes`, refusedBy("cs_sql", "DROP TRIGGER llmtool_capture ON notes", ownRefusal, ownInstead)},
		{`ALTER TABLE notes DISABLE TRIGGER USER`, refusedBy("cs_sql", "ALTER TABLE notes DISABLE TRIGGER USER",
			"leaves tracked table notes without llmtool's capture triggers, so its changes would no longer be recorded", instead)},
		{`DROP TABLE stats; CREATE TABLE stats (k TEXT PRIMARY KEY, n INTEGER NOT NULL)`, refusedBy("cs_sql", "DROP TABLE stats",
			"leaves tracked table stats without llmtool's capture triggers, so its changes would no longer be recorded", instead)},
	} {
		res := f.call(t, ctx, "cs_sql", string(mustJSON(t, csSQLIn{SQL: strings.Split(tt.sql, "; ")})))
		require.True(t, res.IsError, tt.sql)
		require.EqualError(t, res.Err, tt.err, tt.sql)
	}
	edit := f.call(t, ctx, "cs_edit", `{"id": 1, "title": "B"}`)
	require.False(t, edit.IsError, edit.Text())
	require.Len(t, edit.Changeset.Rows, 1, "the triggers still record")

	// Dropping a tracked table is the host's business: allowed, and not
	// undoable.
	drop := f.call(t, ctx, "cs_sql", `{"sql": ["DROP TABLE children"]}`)
	require.False(t, drop.IsError, drop.Text())
	require.Equal(t, "it changed the schema (DROP TABLE children)", drop.Changeset.NotUndoable)
}

// refusedBy is the error of a call of tool whose statement was refused.
func refusedBy(tool, stmt, reason, instead string) string {
	return "llmtool: statement refused: tool " + tool + " ran statement `" + stmt + "` " + reason + "; " + instead
}

// TestChangesetPGNotUndoable: what the triggers and the text see that
// cannot be undone: a TRUNCATE, written or run by a host function; a
// table this registry does not track, changed by a trigger; a value over
// the limit.
func TestChangesetPGNotUndoable(t *testing.T) {
	t.Parallel()
	f := newCSFixtureOn(t, true, "")
	ctx := context.Background()
	require.False(t, f.call(t, ctx, "cs_add", `{"title": "A"}`).IsError)
	_, err := f.db.Exec(`CREATE FUNCTION wipe_children() RETURNS void LANGUAGE sql AS $$ TRUNCATE children $$`)
	require.NoError(t, err)

	res := f.call(t, ctx, "cs_sql", `{"sql": ["TRUNCATE children"]}`)
	require.False(t, res.IsError, res.Text())
	require.Equal(t, "it emptied tables (TRUNCATE children)", res.Changeset.NotUndoable)
	res = f.call(t, ctx, "cs_sql", `{"sql": ["SELECT wipe_children()"]}`)
	require.False(t, res.IsError, res.Text())
	require.Equal(t, "it truncated table children", res.Changeset.NotUndoable)

	// A registry that tracks notes alone: the host's count trigger
	// reaches stats, and the cascade children, whose triggers (another
	// registry's) record them; the first is named.
	opts := f.opts
	opts.Changesets = changeset.Config{Tables: []string{"notes"}, MaxValue: 16, Tools: true}
	narrow := newRegistryOpts(t, f.db, &opts, changesetTools)
	_, err = f.db.Exec(`INSERT INTO children (note_id, body) VALUES (1, 'x')`)
	require.NoError(t, err)
	res = narrow.Invoke(ctx, llmtool.Call{Tool: "cs_sql", Args: []byte(`{"sql": ["DELETE FROM notes WHERE id = 1"]}`)})
	require.False(t, res.IsError, res.Text())
	require.Equal(t, `it changed table stats, which is not tracked`, res.Changeset.NotUndoable)

	res = narrow.Invoke(ctx, llmtool.Call{Tool: "cs_add", Args: []byte(`{"title": "a title longer than sixteen bytes"}`)})
	require.False(t, res.IsError, res.Text())
	require.Equal(t, "notes.title: value larger than the limit, not recorded", res.Changeset.NotUndoable)
	require.JSONEq(t, `{"$omitted": 35}`, string(res.Changeset.Rows[0].After["title"]), "the length of its JSON")
	undo := narrow.Invoke(ctx, llmtool.Call{Tool: "undo_changes", Args: fmt.Appendf(nil, `{"id": %d}`, res.Changeset.ID)})
	require.True(t, undo.IsError)
	require.Equal(t, fmt.Sprintf("Change %d cannot be undone: notes.title: value larger than the limit, not recorded.", res.Changeset.ID), undo.Text())
}

// TestChangesetPGValues: every kind of column comes back exactly:
// identity and generated columns, timestamps, numerics with their scale,
// floats, arrays, jsonb, bytea, NULL.
func TestChangesetPGValues(t *testing.T) {
	t.Parallel()
	f := newCSFixtureOn(t, true, "")
	ctx := context.Background()
	_, err := f.db.Exec(`CREATE TABLE kinds (
	id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name TEXT NOT NULL,
	upper_name TEXT GENERATED ALWAYS AS (upper(name)) STORED,
	at TIMESTAMPTZ, amount NUMERIC, ratio DOUBLE PRECISION, tags TEXT[], doc JSONB, raw BYTEA, nothing TEXT
)`)
	require.NoError(t, err)
	opts := f.opts
	opts.Changesets = changeset.Config{Tables: []string{"kinds"}, Tools: true}
	reg := newRegistryOpts(t, f.db, &opts, changesetTools)
	run := func(sql string) llmtool.Result {
		t.Helper()
		res := reg.Invoke(ctx, llmtool.Call{Tool: "cs_sql", Args: mustJSON(t, csSQLIn{SQL: []string{sql}})})
		require.False(t, res.IsError, res.Text())
		return res
	}
	dump := func() string {
		t.Helper()
		var s string
		require.NoError(t, f.db.QueryRow(`SELECT coalesce(json_agg(to_jsonb(k.*) ORDER BY id)::text, '') FROM kinds k`).Scan(&s))
		return s
	}
	undo := func(res llmtool.Result) {
		t.Helper()
		u := reg.Invoke(ctx, llmtool.Call{Tool: "undo_changes", Args: fmt.Appendf(nil, `{"id": %d}`, res.Changeset.ID)})
		require.False(t, u.IsError, u.Text())
	}
	run(`INSERT INTO kinds (name, at, amount, ratio, tags, doc, raw) VALUES
	('alpha', '2024-01-02 03:04:05.123456+00', 1.50, 0.1, '{a,"b c"}', '{"k": [1, 2.50, "<&>"]}', '\x00ff'),
	('beta', NULL, 'NaN', 'Infinity', '{}', 'null', '')`)
	before := dump()

	update := run(`UPDATE kinds SET name = 'gamma', amount = amount * 2, ratio = 1e300, tags = tags || '{d}', doc = '[]', raw = NULL, nothing = 'x'`)
	require.Len(t, update.Changeset.Rows, 2)
	require.Equal(t, `"\\x00ff"`, string(update.Changeset.Rows[0].Before["raw"]))
	require.Equal(t, `{"k":[1,2.50,"<&>"]}`, string(update.Changeset.Rows[0].Before["doc"]))
	undo(update)
	require.Equal(t, before, dump())

	del := run(`DELETE FROM kinds`)
	undo(del)
	require.Equal(t, before, dump(), "identity and generated columns come back too")
}

// TestChangesetPGConcurrent: calls that run side by side each get their
// own rows, and leave nothing behind; a registry that tracks nothing
// records nothing. Under SERIALIZABLE some of them run again (reading
// llmtool_capture and writing the history can complete a cycle), so
// this also holds that a serialization failure anywhere in the capture
// or the history is retried, not reported.
func TestChangesetPGConcurrent(t *testing.T) {
	t.Parallel()
	f := newCSFixtureOn(t, true, "")
	ctx := context.Background()
	const clients, calls = 8, 20
	for i := range clients {
		require.False(t, f.call(t, ctx, "cs_add", fmt.Sprintf(`{"title": "note %d"}`, i)).IsError)
	}
	var wg sync.WaitGroup
	results := make([][]llmtool.Result, clients)
	for i := range clients {
		wg.Go(func() {
			for k := range calls {
				results[i] = append(results[i], f.call(t, ctx, "cs_edit", fmt.Sprintf(`{"id": %d, "content": "by client %d, call %d"}`, i+1, i, k)))
			}
		})
	}
	wg.Wait()
	for i, rs := range results {
		for k, res := range rs {
			require.False(t, res.IsError, res.Text())
			require.Len(t, res.Changeset.Rows, 1)
			require.JSONEq(t, fmt.Sprint(i+1), string(res.Changeset.Rows[0].Key["id"]))
			require.JSONEq(t, fmt.Sprintf(`"by client %d, call %d"`, i, k), string(res.Changeset.Rows[0].After["content"]))
		}
	}
	require.Zero(t, f.count(t, "llmtool_capture"))

	plain := newRegistryOpts(t, f.db, &llmtool.Options{Logger: quietLogger()}, changesetTools)
	res := plain.Invoke(ctx, llmtool.Call{Tool: "cs_edit", Args: []byte(`{"id": 1, "title": "untracked"}`)})
	require.False(t, res.IsError, res.Text())
	require.Nil(t, res.Changeset)
	require.Zero(t, f.count(t, "llmtool_capture"))
}

// A call whose statements name no tracked table skips reading the
// capture; when it changed tracked rows anyway, the check at commit fails
// the run and the registry runs it again, reading them, so its changeset
// and its history are exact.
func TestChangesetPGUnnamedChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fixture := func(t *testing.T) *csFixture {
		f := newCSFixtureOn(t, true, "")
		_, err := f.db.Exec(`CREATE FUNCTION bump_notes_stat() RETURNS integer LANGUAGE sql AS 'UPDATE stats SET n = n + 10 WHERE k = ''notes'' RETURNING n'`)
		require.NoError(t, err)
		require.False(t, f.call(t, ctx, "cs_add", `{"title": "A"}`).IsError)
		return f
	}
	for _, tc := range []struct {
		name, sql, table, column, before, after string
	}{
		{"a data-changing WITH", `WITH u AS (UPDATE notes SET title = title || 'B' WHERE id = 1 RETURNING id) SELECT count(*) FROM u`, "notes", "title", `"A"`, `"AB"`},
		{"a function", `SELECT bump_notes_stat()`, "stats", "n", `1`, `11`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := fixture(t)
			for run := range 2 { // the check's run again, then the tool reading the capture at once
				res := f.call(t, ctx, "cs_sql", fmt.Sprintf(`{"sql": [%q]}`, tc.sql))
				require.False(t, res.IsError, res.Text())
				require.NotNil(t, res.Changeset)
				require.Len(t, res.Changeset.Rows, 1)
				row := res.Changeset.Rows[0]
				require.Equal(t, tc.table, row.Table)
				if run == 0 {
					require.JSONEq(t, tc.before, string(row.Before[tc.column]))
					require.JSONEq(t, tc.after, string(row.After[tc.column]))
				}
				entries, err := changeset.List(ctx, f.db, changeset.Filter{})
				require.NoError(t, err)
				require.Equal(t, res.Changeset.ID, entries[0].ID, "the history has the change")
				require.Zero(t, f.count(t, "llmtool_capture"))
			}
		})
	}

	// SET CONSTRAINTS ALL IMMEDIATE runs the check before llmtool reads
	// what the call changed: the statement is refused, and nothing is
	// saved.
	f := fixture(t)
	res := f.call(t, ctx, "cs_sql", `{"sql": ["UPDATE notes SET title = 'C' WHERE id = 1", "SET CONSTRAINTS ALL IMMEDIATE"]}`)
	require.True(t, res.IsError)
	require.EqualError(t, res.Err, refusedBy("cs_sql", "SET CONSTRAINTS ALL IMMEDIATE",
		"runs llmtool's check of the changes to tracked tables before llmtool has read them",
		"name the constraints to check at once (SET CONSTRAINTS name, ... IMMEDIATE) rather than ALL."))
	var title string
	require.NoError(t, f.db.QueryRow(`SELECT title FROM notes WHERE id = 1`).Scan(&title))
	require.Equal(t, "A", title)
	require.Zero(t, f.count(t, "llmtool_capture"))
}

// TestChangesetPGWriterSession: the write connections a tracking
// registry keeps have the capture on for their session, and none goes
// back to the host's pool with it on: every connection the host holds
// after Close has llmtool.capture unset, and the host's own writes record
// nothing (a row left in llmtool_capture would fail their commit).
func TestChangesetPGWriterSession(t *testing.T) {
	t.Parallel()
	f := newCSFixtureOn(t, true, "")
	const open = 5 // a reserved read connection or two, one reserved writer
	db := f.open(t)
	db.SetMaxOpenConns(open)
	db.SetMaxIdleConns(open)
	f.reg = f.registry(t, db)
	ctx := context.Background()
	results := make([]llmtool.Result, 4)
	var wg sync.WaitGroup
	for i := range results { // concurrent writes: the reserved writer and pooled ones
		wg.Go(func() {
			results[i] = f.call(t, ctx, "cs_sql", fmt.Sprintf(`{"sql": ["INSERT INTO notes (title) VALUES ('n%d')"]}`, i))
		})
	}
	wg.Wait()
	for _, res := range results {
		require.False(t, res.IsError, res.Text())
		require.Len(t, res.Changeset.Rows, 2, "the note and its count in stats")
	}
	require.NoError(t, f.reg.Close())

	conns := make([]*sql.Conn, open)
	for i := range conns {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		defer c.Close()
		conns[i] = c
	}
	for _, c := range conns {
		var on sql.NullString
		require.NoError(t, c.QueryRowContext(ctx, `SELECT current_setting('llmtool.capture', true)`).Scan(&on))
		require.NotEqual(t, "on", on.String)
		_, err := c.ExecContext(ctx, `INSERT INTO notes (title) VALUES ('host')`)
		require.NoError(t, err)
	}
	require.Zero(t, f.count(t, "llmtool_capture"))
}

// TestChangesetPGWriteAfterTerminate: the write connections a tracking
// registry keeps lose their server sessions (a restart, an
// administrator's pg_terminate_backend); the next tracked writes begin on
// fresh connections and record their changes, rather than fail on the
// dead ones.
func TestChangesetPGWriteAfterTerminate(t *testing.T) {
	t.Parallel()
	f := newCSFixtureOn(t, true, "")
	ctx := context.Background()
	write := func(title string) {
		t.Helper()
		res := f.call(t, ctx, "cs_sql", `{"sql": ["INSERT INTO notes (title) VALUES ('`+title+`')"]}`)
		require.False(t, res.IsError, res.Text())
		require.Len(t, res.Changeset.Rows, 2, "the note and its count in stats")
	}
	write("before")
	admin := f.open(t)
	var ended int
	require.NoError(t, admin.QueryRow(`SELECT count(*) FROM (SELECT pid FROM pg_stat_activity
	WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' OFFSET 0) s
WHERE pg_terminate_backend(s.pid, 5000)`).Scan(&ended))
	require.Positive(t, ended)
	write("after")
	write("again")
}
