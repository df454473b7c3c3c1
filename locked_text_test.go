package llmtool_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/sqlite"
)

// TestLockTextIsNotALock: issue 37. A model could stall every tenant's
// writes with rename_note {"noteId": "database is locked"}: the entity
// check's not-found message quoted the argument, the registry took
// SQLite's busy text for a lock, and the call ran again and again until
// RetryFor, holding the write lock between runs. A handler's error that
// says "database is locked", or "cached plan must not change result
// type", or "connection refused", or that quotes such an argument, is the
// handler's: the call runs once, fails at once with its own message, and
// the next write of another tenant is not held up. On SQLite and, with
// LLMTOOL_TEST_POSTGRES, on PostgreSQL.
func TestLockTextIsNotALock(t *testing.T) {
	t.Parallel()
	for _, e := range []struct {
		name string
		open func(t *testing.T) *sql.DB
	}{
		{"sqlite", func(t *testing.T) *sql.DB {
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "lock.db"))
			require.NoError(t, err)
			t.Cleanup(func() { db.Close() })
			_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
			require.NoError(t, err)
			return db
		}},
		{"postgres", func(t *testing.T) *sql.DB {
			db, _ := openPG(t) // skipped without LLMTOOL_TEST_POSTGRES
			return db
		}},
	} {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			lockTextRunsOnce(t, e.open(t))
		})
	}
}

func lockTextRunsOnce(t *testing.T, db *sql.DB) {
	type noteIn struct {
		NoteID string `json:"noteId" ref:"note" desc:"ID of the note."`
	}
	type sayIn struct {
		Say string `json:"say" desc:"What the handler's error says."`
	}
	var runs atomic.Int32
	failing := llmtool.Write("fail_with", "Fail with the given text.", func(c *llmtool.WriteCtx, in sayIn) (rowsOut, error) {
		runs.Add(1)
		if _, err := c.Exec(`INSERT INTO items (name) VALUES ('x')`); err != nil {
			return rowsOut{}, err
		}
		return rowsOut{}, errors.New(in.Say)
	})
	rename := llmtool.Write("rename_note", "Rename a note.", func(c *llmtool.WriteCtx, in noteIn) (rowsOut, error) {
		runs.Add(1)
		return rowsOut{}, nil
	})
	quoting := llmtool.Write("touch_note", "Touch a note.", func(c *llmtool.WriteCtx, in sayIn) (rowsOut, error) {
		runs.Add(1)
		return rowsOut{}, llmtool.NotFound("Note %q not found.", in.Say).Next("Call search_notes to find its ID.")
	})
	notes := llmtool.DefineTools("notes", failing, rename, quoting).WithEntities(&llmtool.Entity{Kind: "note",
		Exists: func(c *llmtool.ReadCtx, id string) (bool, error) {
			var n int
			err := c.QueryRow(`SELECT count(*) FROM items WHERE name = ?`, id).Scan(&n)
			return n > 0, err
		}})
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{RetryFor: 20 * time.Second, Logger: quietLogger()}, notes, securityTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	bg := context.Background()
	require.NoError(t, reg.Tenants().SetWrites(bg, "a", true))
	require.NoError(t, reg.Tenants().SetWrites(bg, "b", true))
	a, b := llmtool.WithTenant(bg, "a"), llmtool.WithTenant(bg, "b")

	items := countItems(t, db)
	const internal = "Internal error in fail_with; the details were logged. Try again once; if it fails again, tell the user the tool is failing."
	for _, tt := range []struct {
		tool, args, text string
		runs             int32
	}{
		{"rename_note", `{"noteId": "database is locked"}`, `Note "database is locked" (noteId) does not exist. Send the ID of an existing note.`, 0},
		{"touch_note", `{"say": "database is locked"}`, `Note "database is locked" not found. Call search_notes to find its ID.`, 1},
		{"touch_note", `{"say": "cached plan must not change result type"}`, `Note "cached plan must not change result type" not found. Call search_notes to find its ID.`, 1},
		{"fail_with", `{"say": "database is locked"}`, internal, 1},
		{"fail_with", `{"say": "SQLITE_BUSY: database is locked (5)"}`, internal, 1},
		{"fail_with", `{"say": "ERROR: cached plan must not change result type (SQLSTATE 0A000)"}`, internal, 1},
		{"fail_with", `{"say": "dial tcp: connection refused"}`, internal, 1},
		{"fail_with", `{"say": "unexpected EOF"}`, internal, 1},
		{"fail_with", `{"say": "database disk image is malformed"}`, internal, 1},
	} {
		runs.Store(0)
		start := time.Now()
		res := reg.Invoke(a, llmtool.Call{Tool: tt.tool, Args: []byte(tt.args)})
		took := time.Since(start)
		require.True(t, res.IsError, "%s %s", tt.tool, tt.args)
		require.Equal(t, tt.text, res.Text(), "%s %s", tt.tool, tt.args)
		require.Equal(t, tt.runs, runs.Load(), "%s %s: the handler ran once, or never", tt.tool, tt.args)
		require.Less(t, took, 10*time.Second, "%s %s: not run again until RetryFor", tt.tool, tt.args)

		// Another tenant's write goes through at once.
		add := reg.Invoke(b, llmtool.Call{Tool: "add_item", Args: []byte(`{"name": "fig"}`)})
		require.False(t, add.IsError, add.Text())
	}
	require.Equal(t, items+9, countItems(t, db), "fail_with's inserts rolled back; b's nine adds committed")
}
