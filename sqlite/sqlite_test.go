package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/sqlite"
)

func TestOpenPragmas(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "p.db"))
	require.NoError(t, err)
	defer db.Close()
	var mode string
	var fk, busy int
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.NoError(t, db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk))
	require.NoError(t, db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy))
	require.Equal(t, "wal", mode)
	require.Equal(t, 1, fk)
	require.Equal(t, 10000, busy)

	_, err = sqlite.Open(filepath.Join(t.TempDir(), "missing-dir", "x.db"))
	require.ErrorContains(t, err, "llmtool: open ")
}

// A path with '#' or '%' (t.TempDir of a subtest named twice has "#01")
// opens that very file, with the settings.
func TestOpenURICharacters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a#01 b%41.db")
	db, err := sqlite.Open(path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE t (x)`)
	require.NoError(t, err)
	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "wal", mode)
	_, err = os.Stat(path)
	require.NoError(t, err, "the database is not at the path given")
}
