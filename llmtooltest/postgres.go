package llmtooltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// The PostgreSQL mode: which engine a harness runs on, and a database of
// its own on the server.

// The environment variables that run a suite on PostgreSQL, the same as
// llmtool's own tests read.
const (
	envEngine   = "LLMTOOL_TEST_ENGINE"   // "postgres" selects PostgreSQL
	envPostgres = "LLMTOOL_TEST_POSTGRES" // the server's DSN
	envCI       = "CI"                    // set under CI: a missing server fails
)

// The engines, named as llmtool.Options.Engine names them.
const (
	engineSQLite   = "sqlite"
	enginePostgres = "postgres"
)

// pgTimeout bounds creating and dropping a test's database.
const pgTimeout = 30 * time.Second

// chooseEngine returns the PostgreSQL DSN the harness runs on and where it
// came from ("Options.Postgres" or LLMTOOL_TEST_POSTGRES), or "" for
// SQLite. ok is false when it stopped the test: skipped it (PostgreSQL
// asked for but not named, outside CI) or failed it.
func chooseEngine(t TB, opts *Options) (dsn, source string, ok bool) {
	t.Helper()
	if opts.Postgres != "" {
		return opts.Postgres, "Options.Postgres", true
	}
	switch e := os.Getenv(envEngine); e {
	case "", engineSQLite:
		return "", "", true
	case enginePostgres:
		if dsn := os.Getenv(envPostgres); dsn != "" {
			return dsn, envPostgres, true
		}
		if os.Getenv(envCI) != "" {
			t.Fatalf("llmtooltest.New: %s=postgres asks for PostgreSQL, but %s is not set; under CI (%s is set) that fails rather than skips: set %s to the DSN of a role that may create databases, such as postgres://postgres@127.0.0.1:5432/postgres",
				envEngine, envPostgres, envCI, envPostgres)
			return "", "", false
		}
		t.Skipf("llmtooltest: PostgreSQL test skipped: %s=postgres asks for PostgreSQL, but %s is not set; set it to the DSN of a role that may create databases, such as postgres://postgres@127.0.0.1:5432/postgres",
			envEngine, envPostgres)
		return "", "", false
	default:
		t.Fatalf("llmtooltest.New: %s=%q: want %q, %q or unset", envEngine, e, enginePostgres, engineSQLite)
		return "", "", false
	}
}

// openPostgres creates a fresh database on the server dsn names, for this
// test only, and opens it with pgx. The database is closed and dropped
// (WITH (FORCE)) when the test ends. source names where dsn came from,
// for messages; the DSN itself, which may hold a password, is never
// printed.
func openPostgres(t TB, dsn, source string) (*sql.DB, bool) {
	t.Helper()
	admin, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("llmtooltest.New: %s is not a PostgreSQL DSN: %v", source, err)
		return nil, false
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "llmtooltest_" + hex.EncodeToString(b)

	ctx, cancel := context.WithTimeout(t.Context(), pgTimeout)
	defer cancel()
	if err := adminExec(ctx, *admin, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("llmtooltest.New: create a database for the test on the PostgreSQL server of %s (its role must be allowed to CREATE DATABASE): %v", source, err)
		return nil, false
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
		defer cancel()
		if err := adminExec(ctx, *admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("llmtooltest: drop the test's database %s on the PostgreSQL server of %s: %v", name, source, err)
		}
	})
	cfg := *admin
	cfg.Database = name
	return stdlib.OpenDB(cfg), true
}

// adminExec runs one statement on the server's own database, on a
// connection of its own.
func adminExec(ctx context.Context, cfg pgx.ConnConfig, stmt string) error {
	db := stdlib.OpenDB(cfg)
	defer db.Close()
	_, err := db.ExecContext(ctx, stmt)
	return err
}

// pgTables lists the tables of a PostgreSQL database: every ordinary or
// partitioned table outside the system schemas (partitions are read
// through their parent). A table of the current schema is named as is,
// others as schema.table. The definition is the columns (type, NOT NULL,
// default) and the constraints, as the catalog renders them.
const pgTables = `SELECT
	CASE WHEN n.nspname = current_schema() THEN c.relname ELSE n.nspname || '.' || c.relname END,
	n.nspname, c.relname,
	'(' || COALESCE((SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod)
			|| CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
			|| COALESCE(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), ''), ', ' ORDER BY a.attnum)
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '')
	|| COALESCE((SELECT string_agg(', CONSTRAINT ' || quote_ident(k.conname) || ' ' || pg_get_constraintdef(k.oid), '' ORDER BY k.conname)
		FROM pg_constraint k WHERE k.conrelid = c.oid), '') || ')'
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
	AND n.nspname NOT IN ('pg_catalog', 'information_schema')
	AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'
ORDER BY 1`
