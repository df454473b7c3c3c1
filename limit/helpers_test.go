package limit_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/sqlite"
)

// fixture is a registry on a fresh SQLite file with a notes table, its
// middleware under test, and the tools the tests call:
//
//   - create_note (write) inserts a note;
//   - count_notes (read) counts them;
//   - hold_read and hold_other (read) report their start on started, then
//     wait for release or the end of their context;
//   - hold_note (write) inserts a note, reports the insert's error on
//     inserted, then waits for the end of its context;
//   - slow_count (read) runs a query that never ends by itself;
//   - has_deadline (read) reports whether its context has a deadline;
//   - wait_conflict (read) waits for the end of its context and answers
//     it with a Conflict of its own.
type fixture struct {
	reg      *llmtool.Registry
	db       *sql.DB
	started  chan string   // the name of each hold tool that started
	release  chan struct{} // closed by letGo, to let the hold tools return
	inserted chan error    // hold_note's insert
	once     sync.Once

	mu      sync.Mutex
	records []audit.Record
}

type none struct{}

type TitleIn struct {
	Title string `json:"title" desc:"Title of the note." minLength:"1"`
}

type IDOut struct {
	ID int64 `json:"id"`
}

type CountOut struct {
	Count int `json:"count"`
}

type DeadlineOut struct {
	Deadline bool `json:"deadline"`
}

func newFixture(t *testing.T, mw ...llmtool.Middleware) *fixture {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "notes.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL)`)
	require.NoError(t, err)

	f := &fixture{db: db, started: make(chan string, 16), release: make(chan struct{}), inserted: make(chan error, 1)}
	hold := func(name string) *llmtool.Tool {
		return llmtool.Read(name, "Wait until released.", func(c *llmtool.ReadCtx, _ none) (none, error) {
			f.started <- name
			select {
			case <-f.release:
				return none{}, nil
			case <-c.Done():
				return none{}, c.Err()
			}
		})
	}
	tools := llmtool.DefineTools("notes",
		llmtool.Write("create_note", "Create a note.", func(c *llmtool.WriteCtx, in TitleIn) (IDOut, error) {
			res, err := c.Exec(`INSERT INTO notes (title) VALUES (?)`, in.Title)
			if err != nil {
				return IDOut{}, err
			}
			id, err := res.LastInsertId()
			return IDOut{ID: id}, err
		}),
		llmtool.Read("count_notes", "Count the notes.", func(c *llmtool.ReadCtx, _ none) (CountOut, error) {
			var out CountOut
			return out, c.QueryRow(`SELECT count(*) FROM notes`).Scan(&out.Count)
		}),
		hold("hold_read"),
		hold("hold_other"),
		llmtool.Write("hold_note", "Insert a note, then wait.", func(c *llmtool.WriteCtx, in TitleIn) (none, error) {
			_, err := c.Exec(`INSERT INTO notes (title) VALUES (?)`, in.Title)
			f.inserted <- err
			<-c.Done()
			return none{}, c.Err()
		}),
		llmtool.Read("slow_count", "Count forever.", func(c *llmtool.ReadCtx, _ none) (CountOut, error) {
			var out CountOut
			err := c.QueryRow(`WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r`).Scan(&out.Count)
			return out, err
		}),
		llmtool.Read("has_deadline", "Report the deadline.", func(c *llmtool.ReadCtx, _ none) (DeadlineOut, error) {
			_, ok := c.Deadline()
			return DeadlineOut{Deadline: ok}, nil
		}),
		llmtool.Read("wait_conflict", "Wait, then conflict.", func(c *llmtool.ReadCtx, _ none) (none, error) {
			<-c.Done()
			return none{}, llmtool.Conflict("The notes changed while they were counted.").Next("Call count_notes again.")
		}),
	)
	sink := audit.Func(func(_ context.Context, rec audit.Record) {
		f.mu.Lock()
		f.records = append(f.records, rec)
		f.mu.Unlock()
	})
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger:     slog.New(slog.NewTextHandler(t.Output(), nil)),
		Audit:      []audit.Sink{sink},
		Middleware: mw,
	}, tools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	t.Cleanup(f.letGo) // before the registry closes, should the test stop early
	require.NoError(t, reg.Tenants().SetWrites(context.Background(), "", true))
	f.reg = reg
	return f
}

// letGo lets the hold tools' calls return.
func (f *fixture) letGo() { f.once.Do(func() { close(f.release) }) }

// call invokes tool with args ("" for none) in ctx.
func (f *fixture) call(ctx context.Context, tool, args string) llmtool.Result {
	return f.reg.Invoke(ctx, llmtool.Call{Tool: tool, Args: json.RawMessage(args)})
}

// outcomes returns the audit outcome of each call so far, in the order the
// calls finished.
func (f *fixture) outcomes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.records {
		out = append(out, r.Tool+": "+r.Outcome)
	}
	return out
}

func (f *fixture) countNotes(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n))
	return n
}

// requireOK fails the test unless res succeeded, with no "error"
// property in its JSON.
func requireOK(t *testing.T, res llmtool.Result) {
	t.Helper()
	require.False(t, res.IsError, "unexpected failure: %s", res.Text())
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON, &m))
	require.NotContains(t, m, "error")
}

// requireLimited fails the test unless res failed with msg, of kind
// KindLimited, with its JSON {"error": msg}, and its Err wrapping sentinel.
func requireLimited(t *testing.T, res llmtool.Result, msg string, sentinel error) {
	t.Helper()
	require.True(t, res.IsError, "unexpected success: %s", res.JSON)
	require.Equal(t, msg, res.Text())
	require.Equal(t, llmtool.KindLimited, llmtool.KindOf(res.Err))
	require.ErrorIs(t, res.Err, sentinel)
	var m map[string]string
	require.NoError(t, json.Unmarshal(res.JSON, &m))
	require.Equal(t, map[string]string{"error": msg}, m)
}

// as returns ctx running as the principal id, or as no principal for "".
func as(id string) context.Context {
	ctx := context.Background()
	if id != "" {
		ctx = llmtool.WithPrincipal(ctx, &llmtool.Principal{ID: id})
	}
	return ctx
}
