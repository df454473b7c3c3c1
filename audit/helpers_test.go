package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/sqlite"
)

// openDB opens a fresh SQLite file with an items table holding item 1.
func openDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "test.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0);
		INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(t, err)
	return db
}

func countItems(t testing.TB, db *sql.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM items`).Scan(&n))
	return n
}

type GetItemIn struct {
	ID int `json:"id" desc:"ID of the item." minimum:"1"`
}

type ItemOut struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

type AddItemIn struct {
	Name string `json:"name" desc:"Name of the item." minLength:"1"`
	Fail string `json:"fail,omitempty" desc:"Test hook." enum:"error|conflict|panic"`
}

var getItem = llmtool.Read("get_item", "Read an item.",
	func(c *llmtool.ReadCtx, in GetItemIn) (ItemOut, error) {
		var out ItemOut
		err := c.QueryRow(`SELECT id, name FROM items WHERE id = ?`, in.ID).Scan(&out.ID, &out.Name)
		if errors.Is(err, sql.ErrNoRows) {
			return out, llmtool.NotFound("Item %d not found.", in.ID).Next("Call list_items to see the IDs.")
		}
		return out, err
	})

var addItem = llmtool.Write("add_item", "Add an item.",
	func(c *llmtool.WriteCtx, in AddItemIn) (ItemOut, error) {
		res, err := c.Exec(`INSERT INTO items (name) VALUES (?)`, in.Name)
		if err != nil {
			return ItemOut{}, err
		}
		id, _ := res.LastInsertId()
		switch in.Fail {
		case "error":
			return ItemOut{}, errors.New("disk on fire")
		case "conflict":
			return ItemOut{}, llmtool.Conflict("An item named %q exists.", in.Name).Next("Pick another name.")
		case "panic":
			panic("boom")
		}
		return ItemOut{ID: int(id), Name: in.Name}, nil
	})

var itemTools = llmtool.DefineTools("items", getItem, addItem)

// newReg returns a registry over db with opts, closed with the test.
func newReg(t testing.TB, db *sql.DB, opts *llmtool.Options) *llmtool.Registry {
	t.Helper()
	reg, err := llmtool.NewRegistry(db, opts, itemTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	return reg
}

func invoke(reg *llmtool.Registry, tool, args string) llmtool.Result {
	return reg.Invoke(context.Background(), llmtool.Call{Tool: tool, Args: []byte(args)})
}

func alice(ctx context.Context) context.Context {
	return llmtool.WithPrincipal(ctx, &llmtool.Principal{ID: "alice", Roles: []string{"editor"}})
}

// syncBuffer is a log destination safe for concurrent calls.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// recorder is a sink that keeps every record.
type recorder struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (r *recorder) Audit(_ context.Context, rec audit.Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) last() audit.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recs[len(r.recs)-1]
}
