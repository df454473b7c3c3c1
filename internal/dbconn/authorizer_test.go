package dbconn

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"

	"github.com/llmtool/llmtool/internal/engine"
)

// TestAllowed: what each mode lets an operation do, as SQLite presents it
// to the authorizer (the arguments seen for each statement are in the
// comments).
func TestAllowed(t *testing.T) {
	t.Parallel()
	type op struct {
		action                sqlite.AuthorizerActionCode
		arg1, arg2, db, inner string
	}
	tests := []struct {
		name                  string
		op                    op
		off, own, read, write bool
	}{
		{"SELECT", op{sqlite.AuthSelect, "", "", "", ""}, true, true, true, true},
		{"read a table", op{sqlite.AuthRead, "items", "name", "main", ""}, true, true, true, true},
		{"read sqlite_schema", op{sqlite.AuthRead, "sqlite_master", "sql", "main", ""}, true, true, true, true},
		{"count(*) of an own table", op{sqlite.AuthRead, "llmtool_audit", "", "main", ""}, true, true, false, false},
		{"read an own table, any case", op{sqlite.AuthRead, "LLMTool_Scope_Settings", "enabled", "main", ""}, true, true, false, false},
		{"read an own table through a view", op{sqlite.AuthRead, "llmtool_approvals", "nonce", "main", "v"}, true, false, false, false},
		{"read sqlite_dbpage", op{sqlite.AuthRead, "sqlite_dbpage", "data", "main", ""}, true, true, false, false},
		{"update sqlite_dbpage", op{sqlite.AuthUpdate, "sqlite_dbpage", "data", "main", ""}, true, true, false, false},
		{"insert", op{sqlite.AuthInsert, "items", "", "main", ""}, true, true, false, true},
		{"update an own table", op{sqlite.AuthUpdate, "llmtool_scope_settings", "enabled", "main", ""}, true, true, false, false},
		{"update an own table from a trigger", op{sqlite.AuthUpdate, "llmtool_scope_settings", "enabled", "main", "tg"}, true, false, false, false},
		{"delete from an own table", op{sqlite.AuthDelete, "llmtool_approvals", "", "main", ""}, true, true, false, false},
		{"a column named like an own table", op{sqlite.AuthUpdate, "items", "llmtool_id", "main", ""}, true, true, false, true},
		{"create table", op{sqlite.AuthCreateTable, "tags", "", "main", ""}, true, true, false, true},
		{"DDL's write to sqlite_master", op{sqlite.AuthInsert, "sqlite_master", "", "main", ""}, true, true, false, true},
		{"create an own table", op{sqlite.AuthCreateTable, "llmtool_x", "", "main", ""}, true, true, false, false},
		{"trigger on an own table", op{sqlite.AuthCreateTrigger, "tg", "llmtool_approvals", "main", ""}, true, true, false, false},
		{"index on an own table", op{sqlite.AuthCreateIndex, "ix", "llmtool_audit", "main", ""}, true, true, false, false},
		{"alter an own table", op{sqlite.AuthAlterTable, "main", "llmtool_audit", "", ""}, true, true, false, false},
		{"alter a table", op{sqlite.AuthAlterTable, "main", "items", "", ""}, true, true, false, true},
		{"trigger on a table", op{sqlite.AuthCreateTrigger, "tg", "items", "main", ""}, true, true, false, true},
		{"temp trigger", op{sqlite.AuthCreateTempTrigger, "spy", "items", "temp", ""}, true, true, false, false},
		{"trigger written 'temp'.spy", op{sqlite.AuthInsert, "sqlite_temp_master", "", "temp", ""}, true, true, false, false},
		{"read temp.sqlite_master", op{sqlite.AuthRead, "sqlite_master", "", "temp", ""}, true, true, false, false},
		{"temp table", op{sqlite.AuthCreateTempTable, "x", "", "temp", ""}, true, true, false, false},
		{"attach", op{sqlite.AuthAttach, "other.db", "", "", ""}, true, true, false, false},
		{"detach", op{sqlite.AuthDetach, "other", "", "", ""}, true, true, false, false},
		{"BEGIN", op{sqlite.AuthTransaction, "BEGIN", "", "", ""}, true, true, false, false},
		{"COMMIT", op{sqlite.AuthTransaction, "COMMIT", "", "", ""}, true, true, false, false},
		{"ROLLBACK", op{sqlite.AuthTransaction, "ROLLBACK", "", "", ""}, true, true, false, false},
		{"SAVEPOINT", op{sqlite.AuthSavepoint, "BEGIN", "a", "", ""}, true, true, false, false},
		{"RELEASE", op{sqlite.AuthSavepoint, "RELEASE", "a", "", ""}, true, true, false, false},
		{"PRAGMA table_info(items)", op{sqlite.AuthPragma, "table_info", "items", "", ""}, true, true, true, true},
		{"PRAGMA main.table_info(items)", op{sqlite.AuthPragma, "table_info", "items", "main", ""}, true, true, true, true},
		{"PRAGMA temp.table_info(x)", op{sqlite.AuthPragma, "table_info", "x", "temp", ""}, true, true, false, false},
		{"PRAGMA data_version (FTS5 runs it)", op{sqlite.AuthPragma, "data_version", "", "", ""}, true, true, true, true},
		{"PRAGMA query_only = 0", op{sqlite.AuthPragma, "query_only", "0", "", ""}, true, true, false, false},
		{"PRAGMA query_only, or = ''", op{sqlite.AuthPragma, "query_only", "", "", ""}, true, true, false, false},
		{"PRAGMA writable_schema = 1", op{sqlite.AuthPragma, "writable_schema", "1", "", ""}, true, true, false, false},
		{"a function", op{sqlite.AuthFunction, "", "llmtool_test_signal", "", ""}, true, true, true, true},
		{"ANALYZE", op{sqlite.AuthAnalyze, "items", "", "main", ""}, true, true, false, true},
		{"REINDEX", op{sqlite.AuthReindex, "ix", "", "main", ""}, true, true, false, true},
		{"drop an own table", op{sqlite.AuthDropTable, "llmtool_audit", "", "main", ""}, true, true, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for m, want := range map[Mode]bool{ModeOff: tc.off, ModeOwn: tc.own, ModeRead: tc.read, ModeWrite: tc.write} {
				o := tc.op
				require.Equal(t, want, allowed(m, o.action, o.arg1, o.arg2, o.db, o.inner), "mode %d", m)
			}
		})
	}
}

// TestDenialRecorded: a denied operation fails its statement and is
// recorded once, with what SQLite passed; Take forgets it.
func TestDenialRecorded(t *testing.T) {
	t.Parallel()
	db, pool := openPool(t)
	_, err := db.Exec(`CREATE TABLE llmtool_scope_settings (tenant TEXT, tool TEXT, enabled INTEGER)`)
	require.NoError(t, err)
	ctx := context.Background()
	w, err := pool.BeginWrite(ctx)
	require.NoError(t, err)
	w.Policy.SetMode(ModeWrite)
	_, err = w.Tx.ExecContext(ctx, `UPDATE main."LLMTOOL_scope_settings" SET enabled = 1 WHERE tool = ''`)
	require.ErrorContains(t, err, "not authorized")
	d := w.Policy.Take()
	require.Equal(t, &Denial{Action: sqlite.AuthUpdate, Arg1: "llmtool_scope_settings", Arg2: "enabled", DB: "main", Mode: ModeWrite}, d)
	require.Nil(t, w.Policy.Take())
	require.Equal(t, "statement `UPDATE main.\"LLMTOOL_scope_settings\" SET enabled = 1 WHERE tool = ''` updates llmtool_scope_settings, a table llmtool keeps for itself; llmtool's tables (llmtool_*) are not a tool's to read or change: change llmtool's settings through the Registry (Tenants().SetWrites, SetApproval, ...).",
		d.Refusal(`UPDATE main."LLMTOOL_scope_settings" SET enabled = 1 WHERE tool = ''`).Error())
	w.Policy.SetMode(ModeOwn)
	require.NoError(t, w.Tx.Rollback())
	pool.EndWrite(w, false)
}

// TestReadConnections: a reserved read connection is query_only with the
// authorizer in ModeRead during a call; Close hands it back writable and
// without the authorizer.
func TestReadConnections(t *testing.T) {
	t.Parallel()
	db, pool := openPool(t)
	ctx := context.Background()
	for range 2 {
		r, err := pool.BeginRead(ctx)
		require.NoError(t, err)
		require.True(t, r.rc.reserved)
		require.Equal(t, int32(ModeRead), r.rc.policy.mode.Load())
		var queryOnly int
		r.rc.policy.SetMode(ModeOwn) // to read the pragma
		require.NoError(t, r.rc.conn.QueryRowContext(ctx, `PRAGMA query_only`).Scan(&queryOnly))
		require.Equal(t, 1, queryOnly)
		r.rc.policy.SetMode(ModeRead)
		var n int
		require.NoError(t, r.Querier().QueryRowContext(ctx, `SELECT count(*) FROM items`).Scan(&n))
		require.Equal(t, 1, n)
		require.ErrorContains(t, r.Querier().QueryRowContext(ctx, `PRAGMA query_only`).Scan(&n), "not authorized")
		require.Equal(t, "query_only", r.rc.policy.Take().Arg1)
		require.Zero(t, pool.EndRead(r, false))
	}
	pool.Close()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	for _, q := range []string{`CREATE TEMP TABLE host_scratch (x)`, `INSERT INTO items (name) VALUES ('host')`, `PRAGMA query_only = 0`} {
		_, err := conn.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
}

func openPool(t *testing.T) (*sql.DB, *Pool) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "pool.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1 + 2*maxReservedReads)
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO items (name) VALUES ('apple')`)
	require.NoError(t, err)
	require.NoError(t, CheckAuthorizer(context.Background(), db))
	pool := New(db, engine.SQLite)
	t.Cleanup(pool.Close)
	return db, pool
}

// TestRecompiledInOwnMode: a statement a handler prepared is compiled
// again by SQLite when the schema changed since, under the mode of that
// moment. Run in ModeOwn (by a goroutine the handler left, while llmtool
// runs its own statements), its text is the one authorized in the
// handler's mode, but a view or trigger created since could lead it to
// llmtool's tables: what runs inside them is still checked, while
// llmtool's own statements run.
func TestRecompiledInOwnMode(t *testing.T) {
	t.Parallel()
	db, pool := openPool(t)
	_, err := db.Exec(`CREATE TABLE llmtool_x (n INTEGER); INSERT INTO llmtool_x VALUES (0)`)
	require.NoError(t, err)
	ctx := context.Background()
	w, err := pool.BeginWrite(ctx)
	require.NoError(t, err)
	w.Policy.SetMode(ModeWrite)
	_, err = w.Tx.ExecContext(ctx, `CREATE TABLE t (x)`)
	require.NoError(t, err)
	st, err := w.Tx.PrepareContext(ctx, `INSERT INTO t (x) VALUES (1)`)
	require.NoError(t, err)
	for _, q := range []string{
		`DROP TABLE t`,
		`CREATE VIEW t AS SELECT 1 AS x`,
		`CREATE TRIGGER tt INSTEAD OF INSERT ON t BEGIN UPDATE llmtool_x SET n = 1; END`,
	} {
		_, err = w.Tx.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.Nil(t, w.Policy.Take())

	w.Policy.SetMode(ModeOwn)
	_, err = st.ExecContext(ctx)
	require.ErrorContains(t, err, "not authorized")
	require.Equal(t, &Denial{Action: sqlite.AuthUpdate, Arg1: "llmtool_x", Arg2: "n", DB: "main", Inner: "tt", Mode: ModeOwn}, w.Policy.Take())
	_, err = w.Tx.ExecContext(ctx, `UPDATE llmtool_x SET n = 2`)
	require.NoError(t, err, "llmtool's own statement")
	require.NoError(t, st.Close())

	// The trigger is caught after the handler, before the commit.
	d := w.CheckTriggers(ctx)
	require.NotNil(t, d)
	require.Equal(t, "updates llmtool_x (through tt, a trigger, view or common table expression)", d.what())
	require.NoError(t, w.Tx.Rollback())
	pool.EndWrite(w, true)
}

// TestWriteConnectionKept: SQLite's writes run on one connection, its
// authorizer installed once, kept between them; a write whose connection
// may have changed (suspect) closes it, as does one database/sql found
// bad, and the next write takes another; Close hands it back to the host
// without the authorizer.
func TestWriteConnectionKept(t *testing.T) {
	t.Parallel()
	db, pool := openPool(t)
	ctx := context.Background()
	write := func(suspect bool) *sql.Conn {
		t.Helper()
		w, err := pool.BeginWrite(ctx)
		require.NoError(t, err)
		w.Policy.SetMode(ModeWrite)
		_, err = w.Tx.ExecContext(ctx, `INSERT INTO items (name) VALUES ('x')`)
		require.NoError(t, err)
		w.Policy.SetMode(ModeOwn)
		require.NoError(t, w.Tx.Commit())
		pool.EndWrite(w, suspect)
		return w.Conn
	}
	first := write(false)
	require.Same(t, first, write(true), "kept")
	second := write(false)
	require.NotSame(t, first, second, "the suspect one was closed")
	require.NoError(t, second.Close()) // as database/sql does with a bad connection
	third := write(false)
	require.NotSame(t, second, third)
	require.Same(t, third, pool.writer.conn)

	pool.Close()
	require.Nil(t, pool.writer)
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM items`).Scan(&n))
	require.Equal(t, 5, n)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	for _, q := range []string{`BEGIN`, `CREATE TEMP TABLE host_scratch (x)`, `INSERT INTO items (name) VALUES ('host')`, `COMMIT`} {
		_, err := conn.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
}
