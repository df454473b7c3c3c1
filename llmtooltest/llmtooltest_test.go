package llmtooltest_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/llmtooltest"
)

// fakeTB records what the harness reports instead of failing the real
// test, so the tests can assert that each broken rule is caught.
type fakeTB struct {
	t        *testing.T
	mu       sync.Mutex
	errs     []string
	fatal    string
	skipped  string
	cleanups []func()
	out      lockedBuffer
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.mu.Lock()
	f.skipped = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Logf(format string, args ...any) {}
func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}
func (f *fakeTB) TempDir() string          { return f.t.TempDir() }
func (f *fakeTB) Output() io.Writer        { return &f.out }
func (f *fakeTB) Context() context.Context { return f.t.Context() }

// errors returns the non-fatal failures reported so far.
func (f *fakeTB) errors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errs...)
}

// run runs body with a fake TB on its own goroutine, as the testing
// package runs a test (so Fatalf can end it), then runs the cleanups.
func run(t *testing.T, body func(tb *fakeTB)) *fakeTB {
	t.Helper()
	f := &fakeTB{t: t}
	for _, step := range []func(){
		func() { body(f) },
		func() {
			for i := len(f.cleanups) - 1; i >= 0; i-- {
				f.cleanups[i]()
			}
		},
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			step()
		}()
		<-done
	}
	return f
}

// A small inventory module: the host's schema and its tools. The tests run
// on the engine the environment selects (SQLite, or PostgreSQL with
// LLMTOOL_TEST_ENGINE=postgres and LLMTOOL_TEST_POSTGRES), so their SQL is
// portable but for the table's key.

// createItems is the host's migration code: it creates the items table
// with the engine's auto-incrementing key.
func createItems(ctx context.Context, db *sql.DB) error {
	ddl := `CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`
	var version string
	if db.QueryRowContext(ctx, `SELECT version()`).Scan(&version) == nil && strings.HasPrefix(version, "PostgreSQL ") {
		ddl = `CREATE TABLE items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`
	}
	_, err := db.ExecContext(ctx, ddl)
	return err
}

// seed is the first item, which gets the ID 1.
const seed = `INSERT INTO items (name, qty) VALUES ('apple', 3)`

// envEngine is the engine the environment selects for a harness without
// Options.Postgres.
func envEngine() string {
	if pgtest.FromEnv() {
		return "postgres"
	}
	return "sqlite"
}

type GetItemIn struct {
	ID int `json:"id" desc:"ID of the item." minimum:"1"`
}

type ItemOut struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Qty  int    `json:"qty"`
}

type AddItemIn struct {
	Name string `json:"name" desc:"Name of the item." minLength:"1"`
	Qty  int    `json:"qty,omitempty" desc:"How many (default 1)." default:"1"`
}

type WhoOut struct {
	Principal string `json:"principal"`
	Tenant    string `json:"tenant"`
}

var getItem = llmtool.Read("get_item", "Read an item.",
	func(c *llmtool.ReadCtx, in GetItemIn) (ItemOut, error) {
		var out ItemOut
		err := c.QueryRow(`SELECT id, name, qty FROM items WHERE id = ?`, in.ID).Scan(&out.ID, &out.Name, &out.Qty)
		if errors.Is(err, sql.ErrNoRows) {
			return out, llmtool.NotFound("Item %d not found.", in.ID).Next("Call list_items to see the IDs.")
		}
		return out, err
	})

var addItem = llmtool.Write("add_item", "Add an item.",
	func(c *llmtool.WriteCtx, in AddItemIn) (ItemOut, error) {
		var id, first int
		if err := c.QueryRow(`INSERT INTO items (name, qty) VALUES (?, ?) RETURNING id`, in.Name, in.Qty).Scan(&id); err != nil {
			return ItemOut{}, err
		}
		if err := c.QueryRow(`SELECT min(id) FROM items WHERE name = ?`, in.Name).Scan(&first); err != nil {
			return ItemOut{}, err
		}
		if id != first {
			return ItemOut{}, llmtool.Conflict("Item %q already exists.", in.Name).Next(fmt.Sprintf("Call get_item with ID %d to read it.", first))
		}
		return ItemOut{ID: id, Name: in.Name, Qty: in.Qty}, nil
	})

var whoAmI = llmtool.Read("who_am_i", "Tell who and where the call runs.",
	func(c *llmtool.ReadCtx, _ struct{}) (WhoOut, error) {
		out := WhoOut{Tenant: llmtool.TenantFrom(c)}
		if p := llmtool.PrincipalFrom(c); p != nil {
			out.Principal = p.ID
		}
		return out, nil
	})

// countItems counts in a goroutine joined before the handler returns:
// allowed at run time (llmtoolvet reports it; see its documentation).
var countItems = llmtool.Read("count_items", "Count the items.",
	func(c *llmtool.ReadCtx, _ struct{}) (struct {
		N int `json:"n"`
	}, error) {
		var n int
		var err error
		var wg sync.WaitGroup
		wg.Go(func() { //llmtoolvet:ignore joined before return, to show the harness accepts it
			err = c.QueryRow(`SELECT count(*) FROM items`).Scan(&n)
		})
		wg.Wait()
		return struct {
			N int `json:"n"`
		}{n}, err
	})

var inventory = llmtool.DefineTools("inventory", getItem, addItem, whoAmI, countItems)

// Tools that break the rules, each caught by the harness.
type Status struct {
	Status string `json:"status" enum:"open|closed"`
}

type Counted struct {
	N int `json:"n,string"` // encodes as "1", but the schema says integer
}

func brokenModule(release <-chan struct{}, wrote chan<- error) *llmtool.Module {
	return llmtool.DefineTools("broken",
		llmtool.Read("leak_goroutine", "Leak a goroutine.",
			func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
				go func() { <-release }() // plain values only: llmtoolvet is silent, the harness is not
				return struct{}{}, nil
			}),
		llmtool.Read("leak_many", "Leak many goroutines with one stack.",
			func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
				// More than any other group of the profile, so this group
				// comes first in it.
				for range 500 {
					go func() { <-release }()
				}
				return struct{}{}, nil
			}),
		llmtool.Write("late_write", "Write from a goroutine after returning.",
			func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) {
				//llmtoolvet:ignore deliberate, to show the harness catches it
				go func() {
					for c.Err() == nil { // until the handler has returned
						runtime.Gosched()
					}
					_, err := c.Exec(`INSERT INTO items (name) VALUES ('late')`)
					wrote <- err
				}()
				return struct{}{}, nil
			}),
		llmtool.Read("bad_status", "Answer a status outside its enum.",
			func(c *llmtool.ReadCtx, _ struct{}) (Status, error) { return Status{Status: "bogus"}, nil }),
		llmtool.Read("bad_count", "Answer a number as a string.",
			func(c *llmtool.ReadCtx, _ struct{}) (Counted, error) { return Counted{N: 1}, nil }),
		llmtool.Resource("leaky_page", "leak://{id}", "A resource that leaks a goroutine.",
			func(c *llmtool.ReadCtx, in struct {
				ID string `json:"id"`
			}) (llmtool.Rich, error) {
				go func() { <-release }()
				return llmtool.Rich{Content: []llmtool.Content{llmtool.TextContent(in.ID)}}, nil
			}),
		llmtool.Prompt("leaky_prompt", "A prompt that leaks a goroutine.",
			func(c *llmtool.ReadCtx, _ struct{}) ([]llmtool.Message, error) {
				go func() { <-release }()
				return []llmtool.Message{{Role: "user", Content: llmtool.TextContent("hi")}}, nil
			}),
	)
}

func TestHarnessCatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// body breaks a rule.
		body      func(t *testing.T, h *llmtooltest.Harness)
		opts      llmtooltest.Options // on top of the schema and seed
		wantErrs  []string            // substrings of Errorf reports, each required
		wantFatal string              // substring of the Fatalf report, if any
	}{
		{
			name: "leaked goroutine",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireOK(h.Call("leak_goroutine", nil))
			},
			opts:     llmtooltest.Options{LeakGrace: 10 * time.Millisecond},
			wantErrs: []string{"llmtooltest: tool leak_goroutine: 1 goroutine started during the call is still running 10ms after it returned; a handler must finish all its work before it returns", "llmtooltest_test.brokenModule.func1.1"},
		},
		{
			name: "many leaked goroutines",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireOK(h.Call("leak_many", nil))
			},
			opts:     llmtooltest.Options{LeakGrace: llmtooltest.NoLeakGrace},
			wantErrs: []string{"llmtooltest: tool leak_many: 500 goroutines started during the call are still running 0s after it returned", "llmtooltest_test.brokenModule.func2.1"},
		},
		{
			name: "write from a goroutine after return",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireOK(h.Call("late_write", nil))
			},
			wantErrs: []string{"llmtooltest: 1 use of a handler's ctx or transaction after the handler returned by late_write (Exec), seen after "},
		},
		{
			name: "resource leaks a goroutine",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				res := h.RequireOK(h.Invoke(h.Context(), llmtool.Call{Resource: "leak://7"}))
				require.Equal(t, map[string]any{"content": []any{map[string]any{"type": "text", "text": "7"}}}, res)
			},
			opts:     llmtooltest.Options{LeakGrace: llmtooltest.NoLeakGrace},
			wantErrs: []string{"llmtooltest: tool leak://7: 1 goroutine started during the call is still running 0s after it returned"},
		},
		{
			name: "prompt leaks a goroutine",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireOK(h.Invoke(h.Context(), llmtool.Call{Prompt: "leaky_prompt"}))
			},
			opts:     llmtooltest.Options{LeakGrace: llmtooltest.NoLeakGrace},
			wantErrs: []string{"llmtooltest: tool leaky_prompt: 1 goroutine started during the call is still running 0s after it returned"},
		},
		{
			name: "output outside its enum",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.Call("bad_status", nil)
			},
			wantErrs: []string{"llmtooltest: tool bad_status: its result does not match its output schema: llmtool: tool bad_status: output does not match its output schema"},
		},
		{
			name: "number encoded as a string",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.Call("bad_count", nil)
			},
			wantErrs: []string{"llmtooltest: tool bad_count: its result does not match its output schema"},
		},
		{
			name: "wrong exact message",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireError(h.Call("get_item", `{"id": 9}`), "Item 9 not found.")
			},
			wantFatal: "llmtooltest: tool get_item: wrong error message\n got: Item 9 not found. Call list_items to see the IDs.\nwant: Item 9 not found.",
		},
		{
			name: "error where a success is expected",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireOK(h.Call("get_item", `{"id": 9}`))
			},
			wantFatal: "llmtooltest: tool get_item: want a success, got the error: Item 9 not found. Call list_items to see the IDs.",
		},
		{
			name: "success where an error is expected",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireError(h.Call("get_item", `{"id": 1}`), "Item 1 not found.")
			},
			wantFatal: `llmtooltest: tool get_item: want the error "Item 1 not found.", got a success: {"id":1,"name":"apple","qty":3}`,
		},
		{
			name: "success with an error property",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireOK(llmtooltest.Result{Tool: "handmade", Result: llmtool.Result{JSON: []byte(`{"error":"oops"}`)}})
			},
			wantFatal: `llmtooltest: tool handmade: a success must not have an "error" property; got {"error":"oops"}`,
		},
		{
			name: "changed table",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireUnchanged(func() {
					h.RequireOK(h.Call("add_item", map[string]any{"name": "pear", "qty": 2}))
				})
			},
			wantFatal: "llmtooltest: RequireUnchanged: the database changed:\ntable items: 0 rows removed, 1 added (a changed row is both)\n  + id=2, name=\"pear\", qty=2\n",
		},
		{
			name: "changed row",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireUnchanged(func() {
					_, err := h.DB().Exec(`UPDATE items SET qty = 4 WHERE id = 1`)
					require.NoError(t, err)
				})
			},
			wantFatal: "table items: 1 rows removed, 1 added (a changed row is both)\n  - id=1, name=\"apple\", qty=3\n  + id=1, name=\"apple\", qty=4\n",
		},
		{
			name: "changed definition",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireUnchanged(func() {
					_, err := h.DB().Exec(`ALTER TABLE items ADD COLUMN note TEXT`)
					require.NoError(t, err)
				})
			},
			wantFatal: "table items: definition changed\n",
		},
		{
			name: "created table",
			body: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireUnchanged(func() {
					_, err := h.DB().Exec(`CREATE TABLE tags (name TEXT PRIMARY KEY)`)
					require.NoError(t, err)
				})
			},
			wantFatal: "llmtooltest: RequireUnchanged: the database changed:\ntable tags: created (0 rows)\n",
		},
		{
			name:      "contradicting options",
			opts:      llmtooltest.Options{Principal: &llmtool.Principal{ID: "bob"}, NoPrincipal: true},
			wantFatal: `llmtooltest.New: Options.NoPrincipal is set along with Options.Principal "bob"; set one of them`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			wrote := make(chan error, 1)
			f := run(t, func(tb *fakeTB) {
				opts := tt.opts
				opts.Schema, opts.SQL = createItems, []string{seed}
				defer close(release)
				h := llmtooltest.New(tb, &opts, inventory, brokenModule(release, wrote))
				tt.body(t, h)
				if tt.name == "write from a goroutine after return" {
					// The late write fails and is counted before the
					// test ends, whenever the harness reports it.
					require.ErrorIs(t, <-wrote, sql.ErrTxDone)
				}
			})
			if tt.wantFatal == "" {
				require.Empty(t, f.fatal)
			} else {
				require.Contains(t, f.fatal, tt.wantFatal)
			}
			errs := strings.Join(f.errors(), "\n")
			for _, want := range tt.wantErrs {
				require.Contains(t, errs, want)
			}
			if len(tt.wantErrs) == 0 {
				require.Empty(t, errs)
			}
		})
	}
}

func TestHarnessPasses(t *testing.T) {
	t.Parallel()
	f := run(t, func(tb *fakeTB) {
		h := llmtooltest.New(tb, &llmtooltest.Options{Schema: createItems, SQL: []string{seed}}, inventory)
		require.Equal(t, envEngine(), h.Engine())

		// Arguments as a JSON string, bytes, a map, a struct, or none.
		for _, args := range []any{`{"id": 1}`, []byte(`{"id": 1}`), map[string]int{"id": 1}, GetItemIn{ID: 1}} {
			var item ItemOut
			obj := h.RequireOK(h.Call("get_item", args), &item)
			require.Equal(t, ItemOut{ID: 1, Name: "apple", Qty: 3}, item)
			require.Equal(t, "apple", obj["name"])
		}
		// A failed call writes nothing: its insert is rolled back.
		h.RequireUnchanged(func() {
			h.RequireError(h.Call("add_item", `{"name": "apple"}`), `Item "apple" already exists. Call get_item with ID 1 to read it.`)
		})
		added := h.RequireOK(h.Call("add_item", `{"name": "pear"}`))
		require.Equal(t, "1", fmt.Sprint(added["qty"]), "the default applies")
		var n int
		require.NoError(t, h.DB().QueryRow(`SELECT count(*) FROM items`).Scan(&n))
		require.Equal(t, 2, n)

		// A goroutine joined before the handler returns is no leak.
		h.RequireOK(h.Call("count_items", nil))

		// The harness's principal and tenant reach the handler.
		who := h.RequireOK(h.Call("who_am_i", nil))
		require.Equal(t, map[string]any{"principal": "test-user", "tenant": "test"}, who)
		other := llmtool.WithPrincipal(h.Context(), &llmtool.Principal{ID: "alice"})
		who = h.RequireOK(h.CallContext(other, "who_am_i", nil))
		require.Equal(t, "alice", who["principal"])
	})
	require.Empty(t, f.fatal)
	require.Empty(t, f.errors())
	require.Contains(t, f.out.String(), "msg=\"llmtool call\" tool=add_item", "the registry logs to the test's output")
}

func TestHarnessOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts llmtooltest.Options // Schema and SQL default to createItems and the seed
		call func(t *testing.T, h *llmtooltest.Harness)
	}{
		{
			name: "writes off",
			opts: llmtooltest.Options{WritesOff: true},
			call: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireUnchanged(func() {
					h.RequireError(h.Call("add_item", `{"name": "pear"}`),
						`Tool "add_item" changes data, and write tools are off in tenant "test". Ask the user to enable write tools for this tenant, then call add_item again.`)
				})
			},
		},
		{
			name: "principal and tenant",
			opts: llmtooltest.Options{Principal: &llmtool.Principal{ID: "bob"}, Tenant: "wiki-7"},
			call: func(t *testing.T, h *llmtooltest.Harness) {
				require.Equal(t, map[string]any{"principal": "bob", "tenant": "wiki-7"}, h.RequireOK(h.Call("who_am_i", nil)))
				h.RequireOK(h.Call("add_item", `{"name": "pear"}`)) // writes enabled in that tenant
			},
		},
		{
			name: "no principal",
			opts: llmtooltest.Options{NoPrincipal: true},
			call: func(t *testing.T, h *llmtooltest.Harness) {
				require.Equal(t, "", h.RequireOK(h.Call("who_am_i", nil))["principal"])
			},
		},
		{
			name: "schema function and setup",
			opts: llmtooltest.Options{
				// Schema runs first, SQL after it.
				Schema: func(ctx context.Context, db *sql.DB) error {
					if err := createItems(ctx, db); err != nil {
						return err
					}
					_, err := db.ExecContext(ctx, seed)
					return err
				},
				SQL:   []string{`INSERT INTO items (name) VALUES ('fig')`},
				Setup: func(reg *llmtool.Registry) error { return reg.SetEnabled("add_item", false) },
			},
			call: func(t *testing.T, h *llmtooltest.Harness) {
				require.Equal(t, "fig", h.RequireOK(h.Call("get_item", `{"id": 2}`))["name"])
				h.RequireError(h.Call("add_item", `{"name": "pear"}`), `Tool "add_item" is switched off. Use another tool, or ask the user to have an administrator enable it.`)
			},
		},
		{
			name: "ignored tables",
			opts: llmtooltest.Options{IgnoreTables: []string{"items"}},
			call: func(t *testing.T, h *llmtooltest.Harness) {
				h.RequireUnchanged(func() { h.RequireOK(h.Call("add_item", `{"name": "pear"}`)) })
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := run(t, func(tb *fakeTB) {
				opts := tt.opts
				if opts.Schema == nil {
					opts.Schema, opts.SQL = createItems, []string{seed}
				}
				h := llmtooltest.New(tb, &opts, inventory)
				tt.call(t, h)
			})
			require.Empty(t, f.fatal)
			require.Empty(t, f.errors())
		})
	}
}

// A nil module, such as a package variable not yet initialized, fails
// the test with its position.
func TestNewNilModule(t *testing.T) {
	t.Parallel()
	var missing *llmtool.Module
	f := run(t, func(tb *fakeTB) {
		llmtooltest.New(tb, nil, inventory, missing)
	})
	require.Equal(t, "llmtooltest.New: module 2 is nil", f.fatal)
}

// Goroutines are attributed to the call that started them, so a harness
// whose tool leaks does not make another test's harness fail, even while
// both run at once.
func TestHarnessIsolation(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	leaking := make(chan struct{})
	var wg sync.WaitGroup
	var leaky, clean *fakeTB
	wg.Go(func() {
		leaky = run(t, func(tb *fakeTB) {
			h := llmtooltest.New(tb, &llmtooltest.Options{LeakGrace: time.Millisecond}, brokenModule(release, nil))
			h.Call("leak_goroutine", nil)
			close(leaking)
		})
	})
	wg.Go(func() {
		<-leaking // the leaked goroutine is running during every call below
		clean = run(t, func(tb *fakeTB) {
			h := llmtooltest.New(tb, &llmtooltest.Options{Schema: createItems, SQL: []string{seed}}, inventory)
			for range 5 {
				h.RequireOK(h.Call("get_item", `{"id": 1}`))
			}
		})
	})
	wg.Wait()
	require.Len(t, leaky.errors(), 1)
	require.Empty(t, clean.errors())
	require.Empty(t, clean.fatal)
}

// *testing.T, *testing.B and *testing.F are what tests pass to New.
var (
	_ llmtooltest.TB = (*testing.T)(nil)
	_ llmtooltest.TB = (*testing.B)(nil)
	_ llmtooltest.TB = (*testing.F)(nil)
)

func TestWithTestingT(t *testing.T) {
	t.Parallel()
	h := llmtooltest.New(t, &llmtooltest.Options{Schema: createItems, SQL: []string{seed}}, inventory)
	require.Equal(t, envEngine(), h.Engine())
	var item ItemOut
	h.RequireOK(h.Call("add_item", AddItemIn{Name: "plum", Qty: 4}), &item)
	require.Equal(t, ItemOut{ID: 2, Name: "plum", Qty: 4}, item)
	h.RequireError(h.Call("get_item", `{"id": 3}`), "Item 3 not found. Call list_items to see the IDs.")
}
