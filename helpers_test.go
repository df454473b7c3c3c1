package llmtool_test

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
)

// openDB opens a fresh SQLite file with an items table.
func openDB(t testing.TB) *sql.DB {
	t.Helper()
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
	reg, err := llmtool.NewRegistry(db, mods...)
	require.NoError(t, err)
	reg.SetValidateOutput(true)
	reg.SetLogger(slog.New(slog.NewTextHandler(t.Output(), nil)))
	return reg
}

func invoke(reg *llmtool.Registry, tool, args string) llmtool.Result {
	return reg.Invoke(context.Background(), llmtool.Call{Tool: tool, Args: []byte(args)})
}
