package sqlcheck

// Tests against a real PostgreSQL server (internal/pgtest: skipped with a
// message without LLMTOOL_TEST_POSTGRES, failed under CI).

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/pgtest"
)

// TestRebindOnPostgres runs SQLite-style texts on SQLite as they are and
// on PostgreSQL as Rebind rewrites them, with the same arguments, and
// checks that both return the same values.
func TestRebindOnPostgres(t *testing.T) {
	t.Parallel()
	pg := pgtest.Open(t)
	lite, err := sql.Open("sqlite", ":memory:")
	require.NoError(t, err)
	t.Cleanup(func() { lite.Close() })
	ctx := context.Background()

	both := []struct {
		q    string
		args []any
		want []string
	}{
		{"SELECT CAST(? AS TEXT), CAST(? AS TEXT)", []any{"a", "b"}, []string{"a", "b"}},
		{"SELECT CAST(?2 AS TEXT), CAST(?1 AS TEXT), CAST(? AS TEXT)", []any{"a", "b", "c"}, []string{"b", "a", "c"}},
		{"SELECT CAST(? AS TEXT), CAST(?3 AS TEXT), CAST(? AS TEXT), CAST(?2 AS TEXT)", []any{"a", "b", "c", "d"}, []string{"a", "c", "d", "b"}},
		{"SELECT CAST(?1 AS TEXT) || CAST(? AS TEXT) || CAST(?1 AS TEXT)", []any{"a", "b"}, []string{"aba"}},
		{"SELECT '?' || CAST(? AS TEXT), \"x?\".v FROM (SELECT 'it''s ?' AS v) AS \"x?\" -- ?\n WHERE CAST(? AS TEXT) = 'b' /* ? */",
			[]any{"a", "b"}, []string{"?a", "it's ?"}},
		{"SELECT CAST(? AS TEXT)||'%', CASE WHEN CAST(? AS INTEGER) > 1 THEN'x'ELSE'y'END", []any{"a", 2}, []string{"a%", "x"}},
	}
	for _, c := range both {
		text, changed := Rebind(c.q)
		require.True(t, changed, c.q)
		require.Equal(t, c.want, queryStrings(ctx, t, lite, c.q, c.args...), "SQLite: %s", c.q)
		require.Equal(t, c.want, queryStrings(ctx, t, pg, text, c.args...), "PostgreSQL: %s", text)
	}

	// PostgreSQL's own lexical forms, around rewritten placeholders.
	pgOnly := []struct {
		q    string
		args []any
		want []string
	}{
		{"SELECT ?::text, E'it\\'s ?', $$?$$, $q$ ? $q$, ?::int + 1", []any{"a", 41}, []string{"a", "it's ?", "?", " ? ", "42"}},
		{"SELECT /* ? /* ? */ ? */ ?::text", []any{"a"}, []string{"a"}},
		{`SELECT '{"k": 1}'::jsonb ?? 'k', '{"k": 1}'::jsonb ??| array['x', ?::text], ?2::text`, []any{"k", "z"}, []string{"true", "true", "z"}},
		{`SELECT '{"k": 1}'::jsonb ? 'k', $1::text`, []any{"a"}, []string{"true", "a"}}, // $N: unchanged
		{"SELECT ?::text WHERE true AND?::int = 1", []any{"a", 1}, []string{"a"}},
	}
	for _, c := range pgOnly {
		text, _ := Rebind(c.q)
		require.Equal(t, c.want, queryStrings(ctx, t, pg, text, c.args...), "PostgreSQL: %s", text)
	}

	// A tool's statements, with the values coming back.
	for _, q := range []string{
		"CREATE TABLE notes (id int PRIMARY KEY, title text, tags jsonb)",
		"INSERT INTO notes VALUES (1, 'a?', '[\"x\"]'), (2, 'b', '[\"y\"]')",
	} {
		_, err := pg.ExecContext(ctx, q)
		require.NoError(t, err)
	}
	text, _ := Rebind("INSERT INTO notes (id, title, tags) VALUES (?, ?, ?) RETURNING title")
	require.Equal(t, []string{"c?"}, queryStrings(ctx, t, pg, text, 3, "c?", `["z"]`))
	text, _ = Rebind("UPDATE notes SET title = ?2 || '!' WHERE id = ?1 RETURNING id, title")
	require.Equal(t, []string{"2", "b2!"}, queryStrings(ctx, t, pg, text, 2, "b2"))
	text, _ = Rebind("SELECT count(*) FROM notes WHERE title LIKE '%?' AND tags ??| array[?] AND id <> ?")
	require.Equal(t, []string{"1"}, queryStrings(ctx, t, pg, text, "z", 1))
}

// queryStrings runs q and returns its one row's columns as text.
func queryStrings(ctx context.Context, t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.QueryContext(ctx, q, args...)
	require.NoError(t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.True(t, rows.Next(), "%s: no row", q)
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.NoError(t, rows.Scan(ptrs...))
	require.False(t, rows.Next(), "%s: more than one row", q)
	require.NoError(t, rows.Err())
	out := make([]string, len(vals))
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		out[i] = fmt.Sprint(v)
	}
	return out
}

// TestPostgresRefusalsMatter shows, on one connection of a pool, what a
// sample of the refused statements would leave behind or reach.
func TestPostgresRefusalsMatter(t *testing.T) {
	t.Parallel()
	db := pgtest.Open(t)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	exec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			_, err := conn.ExecContext(ctx, q)
			require.NoError(t, err, q)
		}
	}
	one := func(q string) string {
		t.Helper()
		var s string
		require.NoError(t, conn.QueryRowContext(ctx, q).Scan(&s), q)
		return s
	}
	refused := func(q string) {
		t.Helper()
		require.NotNil(t, Check(Postgres, q), "%s must be refused", q)
	}

	// A session-level advisory lock outlives even a rolled-back call.
	q := "SELECT pg_advisory_lock(42)"
	refused(q)
	exec("BEGIN", q, "ROLLBACK")
	require.Equal(t, "1", one("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"))
	exec("SELECT pg_advisory_unlock_all()")
	require.Nil(t, Check(Postgres, "SELECT pg_advisory_xact_lock(42)"))
	exec("BEGIN", "SELECT pg_advisory_xact_lock(42)", "ROLLBACK")
	require.Equal(t, "0", one("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"))

	// query_to_xml runs the SQL it is given, unchecked.
	q = "SELECT query_to_xml('SELECT pg_advisory_lock(7)', true, false, '')"
	refused(q)
	exec("BEGIN", q, "ROLLBACK")
	require.Equal(t, "1", one("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"))
	exec("SELECT pg_advisory_unlock_all()")

	// So does a prepared statement.
	q = "PREPARE llmtool_p AS SELECT 1"
	refused(q)
	exec("BEGIN", q, "ROLLBACK")
	require.Equal(t, "1", one("SELECT count(*) FROM pg_prepared_statements WHERE name = 'llmtool_p'"))
	exec("DEALLOCATE llmtool_p")

	// A setting changed by set_config (or SET) is undone by ROLLBACK,
	// but a write tool's call commits, and then the next call on this
	// pooled connection runs with it.
	q = "SELECT set_config('search_path', 'llmtool_elsewhere', false)"
	refused(q)
	exec("BEGIN", q, "ROLLBACK")
	require.Equal(t, `"$user", public`, one("SHOW search_path"))
	exec("BEGIN", q, "COMMIT")
	require.Equal(t, "llmtool_elsewhere", one("SHOW search_path"))
	exec("RESET search_path")

	// A cursor WITH HOLD, LISTEN and a temporary table outlive a
	// committed call.
	for _, c := range []struct{ q, left string }{
		{"DECLARE llmtool_c CURSOR WITH HOLD FOR SELECT 1", "SELECT count(*) FROM pg_cursors WHERE name = 'llmtool_c'"},
		{"LISTEN llmtool_ch", "SELECT count(*) FROM pg_listening_channels() AS c WHERE c = 'llmtool_ch'"},
		{"CREATE TEMP TABLE llmtool_t (a int)", "SELECT count(*) FROM pg_class WHERE relname = 'llmtool_t' AND relnamespace = pg_my_temp_schema()"},
		{"SELECT 1 AS a INTO TEMP llmtool_t2", "SELECT count(*) FROM pg_class WHERE relname = 'llmtool_t2' AND relnamespace = pg_my_temp_schema()"},
	} {
		refused(c.q)
		exec("BEGIN", c.q, "COMMIT")
		require.Equal(t, "1", one(c.left), c.q)
	}
	exec("CLOSE llmtool_c", "UNLISTEN *", "DISCARD TEMP")

	// SET TRANSACTION READ WRITE, before the first query, turns llmtool's
	// read-only transaction into one that writes.
	q = "SET TRANSACTION READ WRITE"
	refused(q)
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, q)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "CREATE TABLE llmtool_written (a int)")
	require.NoError(t, err, "the read-only transaction wrote")
	require.NoError(t, tx.Rollback())

	// Without arguments a text runs as several statements. PostgreSQL
	// reads ? as an operator, so E'\'' after it is one escape string and
	// the COMMIT is a statement of its own: it ends the call's
	// transaction, and what the call did stays.
	q = "SELECT '{}'::jsonb ?E'\\'' ; COMMIT; SELECT 'x' --'"
	refused(q)
	exec("CREATE TABLE llmtool_marker (a int)", "BEGIN", "INSERT INTO llmtool_marker VALUES (1)", q, "ROLLBACK")
	require.Equal(t, "1", one("SELECT count(*) FROM llmtool_marker"), "the COMMIT ran")

	// Where the host runs with standard_conforming_strings off, 'x\''
	// is one string, and the COMMIT after it runs.
	q = "SELECT 'x\\'' ; COMMIT; SELECT ' --'"
	refused(q)
	exec("TRUNCATE llmtool_marker", "SET standard_conforming_strings = off", "BEGIN", "INSERT INTO llmtool_marker VALUES (1)", q, "ROLLBACK", "RESET standard_conforming_strings")
	require.Equal(t, "1", one("SELECT count(*) FROM llmtool_marker"), "the COMMIT ran")

	// CALL is allowed: a procedure cannot end llmtool's transaction.
	exec("CREATE PROCEDURE commits_inside() LANGUAGE plpgsql AS $$ BEGIN COMMIT; END $$")
	require.Nil(t, Check(Postgres, "CALL commits_inside()"))
	exec("BEGIN")
	_, err = conn.ExecContext(ctx, "CALL commits_inside()")
	require.ErrorContains(t, err, "invalid transaction termination")
	exec("ROLLBACK")
}

// sessionState describes what a call may not leave on its connection.
const sessionState = `SELECT
	(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks,
	(SELECT count(*) FROM pg_prepared_statements WHERE from_sql) AS prepared,
	(SELECT count(*) FROM pg_cursors WHERE name <> '') AS cursors,
	(SELECT count(*) FROM pg_listening_channels()) AS listening,
	(SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()) AS temp,
	(SELECT coalesce(string_agg(name || '=' || setting, ', ' ORDER BY name), '') FROM pg_settings WHERE source = 'session') AS settings,
	current_user = session_user AS same_user`

// FuzzCheckAgainstPostgres runs every text Check accepts on one pooled
// PostgreSQL connection, inside a transaction that is rolled back as a
// read tool's is and then one that commits as a write tool's does, and
// fails if the text ended the transaction or left state on the session:
// advisory locks, prepared statements, cursors, LISTEN, temporary
// objects, settings, a role. The seeds (the accepted and refused forms of
// the other tests) run in every go test with LLMTOOL_TEST_POSTGRES set;
// go test -fuzz FuzzCheckAgainstPostgres explores further (its worker
// processes are killed at the end, so their llmtool_t_* databases stay
// behind).
func FuzzCheckAgainstPostgres(f *testing.F) {
	for _, s := range pgAccepted {
		f.Add(s)
	}
	for _, s := range []string{
		"SELECT pg_advisory_lock(1)", "SELECT \"set_config\"('search_path', 'x', false)", "PREPARE p AS SELECT 1",
		"DECLARE c CURSOR WITH HOLD FOR SELECT 1", "LISTEN ch", "CREATE TEMP TABLE t (a int)", "SELECT 1 INTO TEMP t",
		"SELECT '{}'::jsonb ?E'\\'' ; COMMIT; SELECT 'x' --'", "SELECT 0A$a$; COMMIT; SELECT $a$ $a$", "SET ROLE postgres",
		"CREATE TABLE pg_temp.t (a int)", "SELECT 1; COMMIT", "DO $$ BEGIN PERFORM pg_advisory_lock(1); END $$",
		"SELECT $$; COMMIT$$", "SELECT E'\\'; COMMIT; --'", "SELECT 1 /* /* */ ; COMMIT */", "SET CONSTRAINTS ALL IMMEDIATE",
		"UPDATE pg_settings SET setting = 'x, public' WHERE name = 'search_path'", `UPDATE U&"pg\005Fsettings" SET setting = 'x' WHERE name = 'role'`,
		"CREATE VIEW s AS SELECT * FROM pg_settings", "SELECT setseed(0.5)",
	} {
		f.Add(s)
	}
	u, err := url.Parse(pgtest.DSN(f))
	if err != nil {
		f.Fatal(err)
	}
	qv := u.Query()
	qv.Set("statement_timeout", "2000") // sent as run-time parameters
	qv.Set("lock_timeout", "1000")
	u.RawQuery = qv.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	var clean string
	if err := db.QueryRowContext(ctx, "SELECT s::text FROM ("+sessionState+") AS s").Scan(&clean); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if Check(Postgres, q) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, write := range []bool{false, true} {
			for _, s := range []string{"DROP TABLE IF EXISTS llmtool_marker CASCADE", "CREATE TABLE llmtool_marker (a int)", "BEGIN", "INSERT INTO llmtool_marker VALUES (1)"} {
				if _, err := conn.ExecContext(ctx, s); err != nil {
					t.Fatal(s, err)
				}
			}
			_, _ = conn.ExecContext(ctx, q)
			end := "ROLLBACK"
			if write {
				end = "COMMIT" // of an aborted transaction, a ROLLBACK
			}
			if _, err := conn.ExecContext(ctx, end); err != nil {
				t.Fatal(end, err)
			}
			var marked int
			var state string
			err := conn.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM llmtool_marker), s::text FROM ("+sessionState+") AS s").Scan(&marked, &state)
			if err != nil {
				t.Fatalf("accepted %q, and then: %v", q, err)
			}
			if !write && marked != 0 {
				t.Fatalf("accepted %q, and it committed the call's transaction", q)
			}
			if state != clean {
				t.Fatalf("accepted %q, and it left state on the connection (write=%v):\n%s\nnot\n%s", q, write, state, clean)
			}
		}
		if strings.Contains(q, "\x00") {
			t.Fatalf("accepted a NUL byte in %q", q)
		}
	})
}

// TestPostgresSpellingsReach shows that every spelling Check refuses of
// llmtool's tables and of pg_settings reaches them on a real server: a
// refusal is not a guess about PostgreSQL's rules. Each statement runs in
// a transaction that is rolled back.
func TestPostgresSpellingsReach(t *testing.T) {
	t.Parallel()
	db := pgtest.Open(t)
	ctx := context.Background()
	for _, q := range []string{
		"CREATE SCHEMA app",
		"CREATE TABLE llmtool_scope_settings (tenant text PRIMARY KEY, writes boolean NOT NULL)",
		"INSERT INTO llmtool_scope_settings VALUES ('team', false)",
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })

	tests := []struct {
		q     string
		probe string // what the statement changed, seen in its transaction
		want  string
	}{
		{`UPDATE U&"llmtool\005Fscope_settings" SET writes = true`, "SELECT writes::text FROM llmtool_scope_settings", "true"},
		{`update u&"llmtool\005fscope_settings" set writes = true`, "SELECT writes::text FROM llmtool_scope_settings", "true"},
		{`UPDATE U&"llmtool!005Fscope_settings" UESCAPE '!' SET writes = true`, "SELECT writes::text FROM llmtool_scope_settings", "true"},
		{`UPDATE U&"llmtool\+00005Fscope_settings" SET writes = true`, "SELECT writes::text FROM llmtool_scope_settings", "true"},
		{`UPDATE "public".U&"llmtool\005Fscope_settings" SET writes = true`, "SELECT writes::text FROM llmtool_scope_settings", "true"},
		{`UPDATE Public.LLMTOOL_SCOPE_SETTINGS SET writes = true`, "SELECT writes::text FROM llmtool_scope_settings", "true"},
		{`DELETE/**/FROM/* x */llmtool_scope_settings`, "SELECT count(*)::text FROM llmtool_scope_settings", "0"},
		{`SELECT 'team' AS tenant, true AS writes INTO app.llmtool_scope_settings`, "SELECT count(*)::text FROM app.llmtool_scope_settings", "1"},
		{`UPDATE pg_settings SET setting = 'app, public' WHERE name = 'search_path'`, "SHOW search_path", "app, public"},
		{`UPDATE U&"pg\005Fsettings" SET setting = 'app, public' WHERE name = 'search_path'`, "SHOW search_path", "app, public"},
		{`UPDATE "pg_catalog"."pg_settings" SET setting = 'app, public' WHERE name = 'search_path'`, "SHOW search_path", "app, public"},
	}
	for _, tt := range tests {
		require.NotNil(t, Check(Postgres, tt.q), "%s must be refused", tt.q)
		_, err := conn.ExecContext(ctx, "BEGIN")
		require.NoError(t, err)
		_, err = conn.ExecContext(ctx, tt.q)
		require.NoError(t, err, tt.q)
		var got string
		require.NoError(t, conn.QueryRowContext(ctx, tt.probe).Scan(&got), tt.q)
		require.Equal(t, tt.want, got, tt.q)
		_, err = conn.ExecContext(ctx, "ROLLBACK")
		require.NoError(t, err)
	}

	// A view over pg_settings passes writes on to its rule, even for a
	// role that owns nothing.
	q := "CREATE VIEW s AS SELECT name, setting FROM pg_settings"
	require.NotNil(t, Check(Postgres, q))
	for _, s := range []string{"BEGIN", q, "UPDATE s SET setting = 'app, public' WHERE name = 'search_path'"} {
		_, err := conn.ExecContext(ctx, s)
		require.NoError(t, err, s)
	}
	var path string
	require.NoError(t, conn.QueryRowContext(ctx, "SHOW search_path").Scan(&path))
	require.Equal(t, "app, public", path)
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
}
