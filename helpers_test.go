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
)

// openDB opens a fresh database with an items table: a SQLite file, or a
// PostgreSQL database when LLMTOOL_TEST_ENGINE=postgres.
func openDB(t testing.TB) *sql.DB {
	t.Helper()
	if pgtest.FromEnv() {
		db := pgtest.Open(t)
		_, err := db.Exec(`CREATE TABLE items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
		require.NoError(t, err)
		_, err = db.Exec(`INSERT INTO items (name, qty) VALUES ('apple', 3)`)
		require.NoError(t, err)
		return db
	}
	db, err := llmtool.OpenSQLite("sqlite", filepath.Join(t.TempDir(), "test.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(t, err)
	return db
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
	// Write tools are off in every scope until enabled, the default scope
	// included; these tests call write tools in the default scope. The
	// built-in man tool is switched off so listings show the tests' tools only.
	require.NoError(t, reg.SetWrites(context.Background(), "", true))
	require.NoError(t, reg.SetEnabled("man", false))
	return reg
}

func invoke(reg *llmtool.Registry, tool, args string) llmtool.Result {
	return reg.Invoke(context.Background(), llmtool.Call{Tool: tool, Args: []byte(args)})
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
