package sqlcheck

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// FuzzCheckAgainstSQLite runs every text Check accepts on a real SQLite
// connection inside a read-only transaction, as a read tool's query runs,
// and fails if the connection's state changed: the transaction ended, a
// pragma flipped, a database was attached or a temp object created. The
// seeds run in every go test; go test -fuzz FuzzCheckAgainstSQLite
// explores further.
func FuzzCheckAgainstSQLite(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "PRAGMA query_only = 0", "SELECT 1; COMMIT", "EXPLAIN PRAGMA query_only=0",
		"pragma/**/query_only=0", "SELECT '; COMMIT'", "SELECT 1 -- ;COMMIT\n", "ATTACH ':memory:' AS x",
		"CREATE TEMP TABLE t(x)", "CREATE TABLE \"temp\".t(x)", "SELECT $a(;COMMIT)", "SAVEPOINT a; RELEASE a",
		"PRAGMA table_info(t)", "PRAGMA foreign_keys", "SELECT [a;COMMIT] FROM t", "SELECT `a;COMMIT` FROM t",
		"END", "ROLLBACK", "BEGIN", "VACUUM", "SELECT 1 /* ; */; PRAGMA foreign_keys=0",
		"WITH x AS (SELECT 1) SELECT * FROM x", "PRAGMA main.query_only(0)", "REINDEX", "ANALYZE",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "f.db")+"?_pragma=foreign_keys(1)")
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (a, b)"); err != nil {
		f.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, q string) {
		if Check(SQLite, q) != nil {
			return
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, s := range []string{"PRAGMA query_only = 1", "BEGIN"} {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		_, _ = conn.ExecContext(ctx, q)
		if rows, err := conn.QueryContext(ctx, q); err == nil {
			rows.Close()
		}
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatalf("accepted %q, and it ended the transaction: %v", q, err)
		}
		var qo, fk, attached, temp int
		err = conn.QueryRowContext(ctx, `SELECT (SELECT query_only FROM pragma_query_only()), (SELECT foreign_keys FROM pragma_foreign_keys()),
			(SELECT count(*) FROM pragma_database_list() WHERE name NOT IN ('main', 'temp')), (SELECT count(*) FROM temp.sqlite_master)`).Scan(&qo, &fk, &attached, &temp)
		if err != nil {
			t.Fatal(err)
		}
		if qo != 1 || fk != 1 || attached != 0 || temp != 0 {
			t.Fatalf("accepted %q, and it changed the connection: query_only=%d foreign_keys=%d attached=%d temp=%d", q, qo, fk, attached, temp)
		}
		if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 0"); err != nil {
			t.Fatal(err)
		}
		// As a write tool's statement: the transaction commits, and the
		// connection goes back to the pool.
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		_, _ = conn.ExecContext(ctx, q)
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatalf("accepted %q, and it ended the write transaction: %v", q, err)
		}
		err = conn.QueryRowContext(ctx, `SELECT (SELECT query_only FROM pragma_query_only()), (SELECT foreign_keys FROM pragma_foreign_keys()),
			(SELECT count(*) FROM pragma_database_list() WHERE name NOT IN ('main', 'temp')), (SELECT count(*) FROM temp.sqlite_master)`).Scan(&qo, &fk, &attached, &temp)
		if err != nil {
			t.Fatal(err)
		}
		if qo != 0 || fk != 1 || attached != 0 || temp != 0 {
			t.Fatalf("accepted %q, and in a write it changed the connection: query_only=%d foreign_keys=%d attached=%d temp=%d", q, qo, fk, attached, temp)
		}
		if strings.Contains(q, "\x00") {
			t.Fatalf("accepted a NUL byte in %q", q)
		}
	})
}
