package sqlcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	ok := []string{
		"SELECT 1",
		"select * from notes where id = ?",
		"  -- a comment\n SELECT 1;",
		"SELECT 1; SELECT 2;",
		"WITH x AS (SELECT 1) SELECT * FROM x",
		"INSERT INTO t (a) VALUES ('BEGIN; COMMIT')",
		"INSERT INTO t (a) VALUES ('it''s; COMMIT') RETURNING id",
		`UPDATE "commit" SET "end" = 1`,
		"UPDATE [begin] SET `rollback` = 1",
		"DELETE FROM t /* ; COMMIT */ WHERE a = 1",
		"REPLACE INTO t VALUES (1)",
		"CREATE TABLE t (temp INTEGER, b TEXT)",
		"CREATE INDEX IF NOT EXISTS i ON t (temp)",
		"CREATE VIEW v AS SELECT temp FROM t",
		"DROP TABLE IF EXISTS main.t",
		"ALTER TABLE t ADD COLUMN c TEXT",
		"CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE u SET n = CASE WHEN 1 THEN 2 END; INSERT INTO log VALUES (1); END",
		"CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (1); END; SELECT 1",
		"PRAGMA table_info(notes)",
		"PRAGMA main.table_info('notes')",
		"pragma query_only",
		"PRAGMA foreign_keys;",
		"PRAGMA integrity_check",
		"SELECT * FROM pragma_table_info('notes')",
		"EXPLAIN QUERY PLAN SELECT 1",
		"EXPLAIN SELECT 1",
		"ANALYZE",
		"VALUES (1), (2)",
		"SELECT $a, :b, @c, ?1, ?",
		"",
		";;",
		"SELECT 'unterminated",
	}
	for _, q := range ok {
		require.Nil(t, Check(SQLite, q), "%q", q)
	}

	refused := []struct{ q, want string }{
		{"BEGIN", "statement `BEGIN` controls the transaction; " + txInstead},
		{"commit", "statement `commit` controls the transaction; " + txInstead},
		{"END TRANSACTION", "statement `END TRANSACTION` controls the transaction; " + txInstead},
		{"ROLLBACK TO a", "statement `ROLLBACK TO a` controls the transaction; " + txInstead},
		{"SAVEPOINT a", "statement `SAVEPOINT a` controls the transaction; " + txInstead},
		{"RELEASE SAVEPOINT a", "statement `RELEASE SAVEPOINT a` controls the transaction; " + txInstead},
		{"SELECT 1; COMMIT", "statement `COMMIT` controls the transaction; " + txInstead},
		{"SELECT 'a'';'; COMMIT", "statement `COMMIT` controls the transaction; " + txInstead},
		{"SELECT 1 /* x */; /**/COMMIT", "statement `COMMIT` controls the transaction; " + txInstead},
		{"SELECT 1 -- x\n;\tROLLBACK", "statement `ROLLBACK` controls the transaction; " + txInstead},
		{"PRAGMA query_only = 0", "statement `PRAGMA query_only = 0` sets a pragma, which changes the connection's settings; " + pragmaInstead},
		{"PRAGMA query_only=false", "statement `PRAGMA query_only=false` sets a pragma, which changes the connection's settings; " + pragmaInstead},
		{"PRAGMA main.query_only(0)", "statement `PRAGMA main.query_only(0)` sets a pragma, which changes the connection's settings; " + pragmaInstead},
		{`PRAGMA "query_only" = 0`, "statement `PRAGMA \"query_only\" = 0` sets a pragma, which changes the connection's settings; " + pragmaInstead},
		{"pragma/**/query_only=0", "statement `pragma/**/query_only=0` sets a pragma, which changes the connection's settings; " + pragmaInstead},
		{"PRAGMA foreign_keys = OFF", "statement `PRAGMA foreign_keys = OFF` sets a pragma, which changes the connection's settings; " + pragmaInstead},
		{"PRAGMA wal_checkpoint", "statement `PRAGMA wal_checkpoint` changes the database or the connection outside the call's transaction; " + pragmaInstead},
		{"EXPLAIN PRAGMA query_only = 0", "statement `EXPLAIN PRAGMA query_only = 0` sets a pragma, which changes the connection's settings; " + pragmaInstead},
		{"ATTACH DATABASE 'x.db' AS x", "statement `ATTACH DATABASE 'x.db' AS x` attaches another database to the connection; " + attachInstead},
		{"DETACH x", "statement `DETACH x` detaches a database from the connection; " + attachInstead},
		{"VACUUM INTO '/tmp/x.db'", "statement `VACUUM INTO '/tmp/x.db'` rewrites the database outside the call's transaction; run VACUUM from the host's maintenance code."},
		{"CREATE TEMP TABLE x (a)", "statement `CREATE TEMP TABLE x (a)` creates or changes an object that lives with the connection, not the database; " + tempInstead},
		{"CREATE TEMPORARY TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END", "statement `CREATE TEMPORARY TRIGGER t AFTER INSERT ON x BEGIN SELECT 1` creates or changes an object that lives with the connection, not the database; " + tempInstead},
		{"CREATE TRIGGER temp.t AFTER INSERT ON x BEGIN SELECT 1; END", "statement `CREATE TRIGGER temp.t AFTER INSERT ON x BEGIN SELECT 1` creates or changes an object that lives with the connection, not the database; " + tempInstead},
		{`CREATE TABLE "temp".x (a)`, "statement `CREATE TABLE \"temp\".x (a)` names an object in the temp schema, which lives with the connection, not the database; " + tempInstead},
		{"CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END; COMMIT", "statement `COMMIT` controls the transaction; " + txInstead},
		{"SELECT load_extension('x')", "statement `SELECT load_extension('x')` calls load_extension, which changes the connection's state; " + setInstead},
		{"SELECT 1\x00; COMMIT", "statement `SELECT 1\\0; COMMIT` contains a NUL byte, which would hide the rest of the text from the database; pass values as query arguments, not in the SQL text."},
		{"GRANT ALL ON t TO x", "statement `GRANT ALL ON t TO x` is not a statement a tool may run; " + otherInstead},
	}
	for _, c := range refused {
		r := Check(SQLite, c.q)
		if c.want == "" {
			require.NotNil(t, r, "%q", c.q)
			continue
		}
		require.NotNil(t, r, "%q", c.q)
		require.Equal(t, c.want, r.Error(), "%q", c.q)
	}
}

func TestCheckPostgres(t *testing.T) {
	t.Parallel()
	ok := []string{
		"SELECT $$; COMMIT$$",
		"SELECT $tag$ a; COMMIT $tag$",
		"SELECT E'\\'; COMMIT; --'",
		"SELECT $1, $2",
		"SELECT 1 /* /* nested */ ; COMMIT */",
		"(SELECT 1)",
		"TRUNCATE t",
		"LOCK TABLE t IN SHARE MODE",
	}
	for _, q := range ok {
		require.Nil(t, Check(Postgres, q), "%q", q)
	}
	refused := map[string]string{
		"SET default_transaction_read_only = off":                  setReason,
		"SELECT set_config('transaction_read_only', 'off', false)": "calls set_config, which changes the session's settings",
		"START TRANSACTION":          "controls the transaction",
		"SELECT E'\\\\'; COMMIT":     "controls the transaction",
		"PRAGMA query_only":          "is not a statement a tool may run",
		"SELECT pg_advisory_lock(1)": "calls pg_advisory_lock, which takes a session-level advisory lock, which outlives the call's transaction",
		"DISCARD ALL":                "discards the session's state (prepared statements, temporary tables, plans), which belongs to the host",
	}
	for q, want := range refused {
		r := Check(Postgres, q)
		require.NotNil(t, r, "%q", q)
		require.Equal(t, want, r.Reason, "%q", q)
	}
	// SQLite reads $$ as parameters and '\' as a whole string: the
	// Postgres hiding places are open text there.
	require.NotNil(t, Check(SQLite, "SELECT E'\\'; COMMIT; --'"))
}

func BenchmarkCheck(b *testing.B) {
	q := `SELECT n.note_id, n.title, n.type, n.mime, n.is_protected, n.date_modified FROM notes n WHERE n.note_id = ? AND n.is_deleted = 0`
	for b.Loop() {
		if Check(SQLite, q) != nil {
			b.Fatal("refused")
		}
	}
}

func BenchmarkCacheHit(b *testing.B) {
	q := `SELECT n.note_id, n.title, n.type, n.mime, n.is_protected, n.date_modified FROM notes n WHERE n.note_id = ? AND n.is_deleted = 0`
	var c Cache
	for b.Loop() {
		if c.Check(SQLite, q) != nil {
			b.Fatal("refused")
		}
	}
}

func TestCacheRemembersOnlyAccepted(t *testing.T) {
	t.Parallel()
	var c Cache
	require.Nil(t, c.Check(SQLite, "SELECT 1"))
	require.Nil(t, c.Check(SQLite, "SELECT 1"))
	require.NotNil(t, c.Check(SQLite, "COMMIT"))
	require.NotNil(t, c.Check(SQLite, "COMMIT"), "a refusal is never cached as accepted")
	require.Equal(t, int32(1), c.n.Load())
	for i := range maxCached + 10 {
		require.Nil(t, c.Check(SQLite, "SELECT "+string(rune('a'+i%26))+" FROM t"+itoa(i)))
	}
	require.Equal(t, int32(maxCached), c.n.Load(), "the cache stops growing at its bound")
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}
