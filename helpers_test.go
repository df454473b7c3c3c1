package llmtool_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/sqlite"
)

// openDB opens a fresh database with an items table: a SQLite file, or a
// PostgreSQL database when LLMTOOL_TEST_ENGINE=postgres.
func openDB(t testing.TB) *sql.DB {
	t.Helper()
	db, _ := openDBAt(t)
	return db
}

// openDBAt is openDB that also says where the database is, for openAgain:
// the SQLite file's path, or the PostgreSQL database's DSN.
func openDBAt(t testing.TB) (*sql.DB, string) {
	t.Helper()
	if pgtest.FromEnv() {
		dsn := pgtest.DSN(t)
		db := openAgain(t, dsn)
		_, err := db.Exec(`CREATE TABLE items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
		require.NoError(t, err)
		_, err = db.Exec(`INSERT INTO items (name, qty) VALUES ('apple', 3)`)
		require.NoError(t, err)
		return db, dsn
	}
	path := filepath.Join(t.TempDir(), "test.db")
	db := openAgain(t, path)
	_, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(t, err)
	return db, path
}

// openAgain opens another handle on the database at where (from
// openDBAt), as another process or replica would; it is closed when t
// ends.
func openAgain(t testing.TB, where string) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if pgtest.FromEnv() {
		db, err = sql.Open("pgx", where)
	} else {
		db, err = sqlite.Open(where)
	}
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// testEngine names the engine the tests run on: "postgres" with
// LLMTOOL_TEST_ENGINE=postgres, else "sqlite". Rows of engine-aware test
// tables name the engine they hold on (see runsOn).
func testEngine() string {
	if pgtest.FromEnv() {
		return "postgres"
	}
	return "sqlite"
}

// runsOn reports whether a table row for only ("sqlite", "postgres", or
// "" for both) runs on the engine under test.
func runsOn(only string) bool { return only == "" || only == testEngine() }

// readToolWriteErr is the error of a read tool whose INSERT into items,
// the statement stmt, the database refused: SQLite's authorizer, or
// PostgreSQL's read-only transaction.
func readToolWriteErr(tool, stmt string) string {
	if pgtest.FromEnv() {
		return "llmtool: tool " + tool + " is a read tool, so the database refuses its writes; declare it with llmtool.Write to change data: ERROR: cannot execute INSERT in a read-only transaction (SQLSTATE 25006)"
	}
	return "llmtool: statement refused: tool " + tool + " ran statement `" + stmt + "` inserts into items in a read tool; declare the tool with llmtool.Write to change data."
}

func countItems(t testing.TB, db *sql.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM items`).Scan(&n))
	return n
}

func newRegistry(t testing.TB, db *sql.DB, mods ...*llmtool.Module) *llmtool.Registry {
	t.Helper()
	return newRegistryOpts(t, db, &llmtool.Options{ValidateOutput: true}, mods...)
}

// newRegistryOpts is newRegistry with the given options, taken as given
// except that a nil Logger writes to the test's output. Unlike newRegistry
// it does not turn ValidateOutput on by itself.
func newRegistryOpts(t testing.TB, db *sql.DB, opts *llmtool.Options, mods ...*llmtool.Module) *llmtool.Registry {
	t.Helper()
	o := llmtool.Options{}
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	// Fields tagged ref:"note" need a declared entity kind; the core tests
	// exercise schemas, not entity guards, so every note exists here.
	notes := llmtool.DefineTools("test_entities").WithEntities(&llmtool.Entity{Kind: "note",
		Exists: func(*llmtool.ReadCtx, string) (bool, error) { return true, nil }})
	reg, err := llmtool.NewRegistry(db, &o, append(append([]*llmtool.Module(nil), mods...), notes)...)
	require.NoError(t, err)
	// Write tools are off in every tenant until enabled, the default tenant
	// included; these tests call write tools in the default tenant. The
	// built-in man tool is switched off so listings show the tests' tools only.
	require.NoError(t, reg.Tenants().SetWrites(context.Background(), "", true))
	require.NoError(t, reg.SetEnabled("man", false))
	return reg
}

func invoke(reg *llmtool.Registry, tool, args string) llmtool.Result {
	return reg.Invoke(context.Background(), llmtool.Call{Tool: tool, Args: []byte(args)})
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
