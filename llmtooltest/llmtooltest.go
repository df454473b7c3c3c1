// Package llmtooltest is the test harness for llmtool tool modules: it
// calls tools by name through the same Registry.Invoke path the MCP and
// chat adapters use, against a fresh database of the test's own, and fails
// the test when a tool breaks llmtool's rules even though its answer looks
// right.
//
// A test opens a harness with its options (the host's schema, nil for
// none) and its modules, calls tools, and asserts the literal error or a
// success:
//
//	func TestGetNote(t *testing.T) {
//		h := llmtooltest.New(t, &llmtooltest.Options{Schema: notes.Migrate}, notes.Tools)
//		h.RequireError(h.Call("get_note", `{"noteId": "nope"}`), `Note "nope" not found. Call search_notes to find the ID.`)
//		note := h.RequireOK(h.Call("create_note", map[string]any{"title": "Hello"}))
//		...
//	}
//
// Resources and prompts (llmtool.Resource, llmtool.Prompt) are read and
// rendered with Harness.Invoke, whose llmtool.Call names the URI or the
// prompt.
//
// Every call is checked, whatever the test asserts:
//
//   - no goroutine started during the call is still running once it
//     returned (goroutines are attributed to the call with pprof labels,
//     which they inherit, so tests running in parallel do not disturb the
//     check; the goroutines of database/sql, of the harness's drivers
//     (modernc.org/sqlite, pgx) and of the runtime are ignored);
//   - no ctx or transaction of a handler was used after the handler
//     returned (such uses fail with sql.ErrTxDone, and the registry
//     logs each one, which the harness reads from its log);
//   - a successful result matches the tool's output schema
//     (llmtool.Options.ValidateOutput is on).
//
// Each broken rule fails the test with an error naming the tool.
//
// # Engines
//
// A harness runs on SQLite by default: a fresh file in t.TempDir(). It runs
// on PostgreSQL when Options.Postgres names a server, or when the
// environment asks for it, so that a whole suite runs on PostgreSQL without
// a change to its code:
//
//	LLMTOOL_TEST_ENGINE=postgres LLMTOOL_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/postgres go test ./...
//
// Each test then gets a database of its own on that server, created by New
// and dropped when the test ends. With LLMTOOL_TEST_ENGINE=postgres but
// no LLMTOOL_TEST_POSTGRES, New skips the test with a message saying what
// to set, or fails it when CI is set in the environment, so that a suite
// is never silently passed on the wrong engine. LLMTOOL_TEST_ENGINE unset
// or "sqlite" runs on SQLite; any other value fails the test.
//
// Handlers' SQL runs unchanged on both engines (llmtool rewrites SQLite's ?
// placeholders for PostgreSQL). Options.Schema, Options.SQL and the
// statements a test runs on Harness.DB go to the database as written: use
// the host's own migration code, which knows its engine, or SQL both
// engines accept ($1 placeholders, RETURNING rather than LastInsertId).
package llmtooltest

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	_ "modernc.org/sqlite" // the default driver, "sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/sqlite"
)

// TB is the part of testing.TB the harness uses. *testing.T, *testing.B
// and *testing.F satisfy it.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	// Skipf skips the test: New calls it when the environment asks for
	// PostgreSQL without naming a server (see the package
	// documentation).
	Skipf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	// Output is where the registry's log goes, so it shows with the
	// test's own output.
	Output() io.Writer
	// Context is the base of the context calls run with; the harness's
	// calls are cancelled when it is.
	Context() context.Context
}

// Default settings of a harness.
const (
	// defaultTenant is the tenant calls run in unless Options.Tenant says
	// otherwise.
	defaultTenant = "test"
	// defaultPrincipalID is the ID of the principal calls run as unless
	// Options.Principal or Options.NoPrincipal says otherwise.
	defaultPrincipalID = "test-user"
	// defaultLeakGrace is how long the harness waits for goroutines started
	// during a call to finish, when some are still running as the call
	// returns, before it reports them.
	defaultLeakGrace = time.Second
)

// pprofLabel is the goroutine label that attributes goroutines to a call.
const pprofLabel = "llmtooltest.call"

// lateUseMessage is the registry's log message for a use of a handler's ctx
// or transaction after it returned.
const lateUseMessage = "llmtool: transaction used after its handler returned"

// NoLeakGrace, as Options.LeakGrace, reports goroutines still running
// when a call returns at once, without waiting for them.
const NoLeakGrace time.Duration = -1

// Options configures a harness. A nil *Options, like the zero value, gives
// every field's default: an empty SQLite database (or PostgreSQL, when the
// environment asks for it), the default principal and tenant, writes
// enabled.
type Options struct {
	// Schema creates the host's tables and seeds them, on the fresh
	// database before the registry is built. Use the host application's
	// own migration code, so tests run against the real schema; on
	// PostgreSQL it gets the test's own database. Default: nil, nothing to
	// run.
	Schema func(ctx context.Context, db *sql.DB) error

	// SQL are statements run in order after Schema, before the registry
	// is built: a schema and seed rows written inline, or extra rows on
	// top of Schema's. They go to the engine as written (see Engines in
	// the package documentation). Default: none.
	SQL []string

	// Setup configures the registry once it is built and before writes
	// are enabled: loaders, an authorizer, audit sinks, kill switches.
	// Default: nil, nothing to run.
	Setup func(reg *llmtool.Registry) error

	// Principal is the user calls run as. Default (nil): a principal with
	// the ID "test-user" and no roles, unless NoPrincipal is set.
	Principal *llmtool.Principal

	// NoPrincipal runs calls without a principal; Principal must then be
	// nil. Default: false.
	NoPrincipal bool

	// Tenant is the tenant calls run in. Default (""): "test".
	Tenant string

	// WritesOff leaves write tools off in the harness's tenant, as in a
	// tenant that never enabled them, to test the refusal. Default: false,
	// the harness enables writes in its tenant.
	WritesOff bool

	// Postgres runs the harness on PostgreSQL rather than SQLite: it is
	// the DSN of a server, as a URL (postgres://user:pass@host:5432/db)
	// or in key=value form, for a role that may CREATE DATABASE. New
	// creates a fresh database on that server for the test, opens it with
	// pgx (github.com/jackc/pgx/v5/stdlib, the "pgx" driver, which the
	// harness imports), runs Schema, SQL and Setup on it, and drops it
	// (DROP DATABASE ... WITH (FORCE), PostgreSQL 13 or later) when the
	// test ends. The DSN's own database is used only to create and drop
	// the test's. Default (""): LLMTOOL_TEST_POSTGRES when the
	// environment sets LLMTOOL_TEST_ENGINE=postgres (see the package
	// documentation), SQLite otherwise.
	Postgres string

	// LeakGrace is how long the harness waits for goroutines started
	// during a call to finish before it reports them; it does not wait at
	// all when none is running. Default (0): a second;
	// NoLeakGrace (or any negative duration) reports them without
	// waiting.
	LeakGrace time.Duration

	// IgnoreTables are left out of the dumps that RequireUnchanged
	// compares, such as a log table the host writes on every call. On
	// PostgreSQL a table outside the current schema (public, usually) is
	// named schema.table. Default: none.
	IgnoreTables []string

	// LogLevel is the lowest level of the registry's log lines that reach
	// the test's output. Default: slog.LevelInfo, the zero value, which
	// includes the audit line of each call.
	LogLevel slog.Level
}

// Harness runs a test's tool calls. Create one per test with New. Its
// methods may be called from several goroutines, but a failure is reported
// on the TB given to New.
type Harness struct {
	t      TB
	db     *sql.DB
	engine string // "sqlite" or "postgres"
	reg    *llmtool.Registry
	ctx    context.Context
	grace  time.Duration
	skip   map[string]bool // tables RequireUnchanged ignores

	mu         sync.Mutex
	calls      int
	late       []string // "tool (op)" of each late use the registry logged
	lateReport int      // entries of late already reported
	closed     bool     // the test ended: log lines are dropped
}

// Result is the outcome of a harness call: the registry's Result and the
// name of the tool called, for messages.
type Result struct {
	llmtool.Result
	// Tool is the name of the tool called.
	Tool string
}

// New opens a fresh database for the test: a SQLite file in t.TempDir(),
// opened with sqlite.Open's settings, or on PostgreSQL (opts.Postgres, or the
// environment: see the package documentation) a database created for the
// test. It runs opts.Schema and opts.SQL on it, builds a registry of
// modules that validates every result against its output schema and logs
// to t.Output(), runs opts.Setup, and enables writes in the harness's
// tenant unless opts.WritesOff is set. Calls run as the harness's principal
// in its tenant. opts may be nil for the defaults.
//
// New fails the test on a nil module, on Options that contradict each
// other, and on any error while setting up, and skips it when the
// environment asks for PostgreSQL without naming a server (outside CI).
// The database is closed when the test ends, and on PostgreSQL dropped.
func New(t TB, opts *Options, modules ...*llmtool.Module) *Harness {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	for i, m := range modules {
		if m == nil {
			t.Fatalf("llmtooltest.New: module %d is nil", i+1)
			return nil
		}
	}
	principal := opts.Principal
	switch {
	case opts.NoPrincipal && principal != nil:
		t.Fatalf("llmtooltest.New: Options.NoPrincipal is set along with Options.Principal %q; set one of them", principal.ID)
		return nil
	case principal == nil && !opts.NoPrincipal:
		principal = &llmtool.Principal{ID: defaultPrincipalID, Name: "Test User"}
	}
	tenant := cmp.Or(opts.Tenant, defaultTenant)
	grace := opts.LeakGrace
	switch {
	case grace == 0:
		grace = defaultLeakGrace
	case grace < 0:
		grace = 0
	}
	h := &Harness{t: t, grace: grace, skip: make(map[string]bool)}
	for _, name := range opts.IgnoreTables {
		h.skip[name] = true
	}
	dsn, source, ok := chooseEngine(t, opts)
	if !ok {
		return nil
	}
	var db *sql.DB
	if dsn != "" {
		if db, ok = openPostgres(t, dsn, source); !ok {
			return nil
		}
		h.engine = enginePostgres
	} else {
		path := filepath.Join(t.TempDir(), "llmtooltest.db")
		var err error
		if db, err = sqlite.Open(path); err != nil {
			t.Fatalf("llmtooltest.New: %v", err)
			return nil
		}
		h.engine = engineSQLite
	}
	h.db = db
	t.Cleanup(func() { db.Close() })
	t.Cleanup(h.finish)
	base := t.Context()
	if opts.Schema != nil {
		if err := opts.Schema(base, db); err != nil {
			t.Fatalf("llmtooltest.New: Options.Schema: %v", err)
			return nil
		}
	}
	for _, s := range opts.SQL {
		if _, err := db.ExecContext(base, s); err != nil {
			t.Fatalf("llmtooltest.New: Options.SQL: %v, in: %s", err, s)
			return nil
		}
	}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Engine: h.engine, Logger: slog.New(&logHandler{h: h, next: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: opts.LogLevel})}), ValidateOutput: true}, modules...)
	if err != nil {
		t.Fatalf("llmtooltest.New: %v", err)
		return nil
	}
	h.reg = reg
	if opts.Setup != nil {
		if err := opts.Setup(reg); err != nil {
			t.Fatalf("llmtooltest.New: Options.Setup: %v", err)
			return nil
		}
	}
	ctx := llmtool.WithTenant(base, tenant)
	if principal != nil {
		ctx = llmtool.WithPrincipal(ctx, principal)
	}
	h.ctx = ctx
	if !opts.WritesOff {
		if err := reg.Tenants().SetWrites(ctx, tenant, true); err != nil {
			t.Fatalf("llmtooltest.New: enable writes in tenant %q: %v", tenant, err)
			return nil
		}
	} else if _, err := reg.Tenants().Writes(ctx, tenant); err != nil {
		// Reading the settings creates the registry's settings table now,
		// rather than during the first call, where RequireUnchanged would
		// see it appear.
		t.Fatalf("llmtooltest.New: read the settings of tenant %q: %v", tenant, err)
		return nil
	}
	return h
}

// DB returns the harness's database, to seed rows or check what a call
// wrote: the SQLite file's, or on PostgreSQL the test's own database,
// opened with pgx. Statements on it go to the driver as written, so on
// PostgreSQL they take $1 placeholders, not ?.
func (h *Harness) DB() *sql.DB { return h.db }

// Engine returns the harness's engine, "sqlite" or "postgres", as
// llmtool.ReadCtx.Engine names it, for the rare assertion that differs
// between them.
func (h *Harness) Engine() string { return h.engine }

// Registry returns the harness's registry.
func (h *Harness) Registry() *llmtool.Registry { return h.reg }

// Context returns the context calls run with: the test's context, with the
// harness's tenant and principal. Derive from it to call with another
// principal through CallContext.
func (h *Harness) Context() context.Context { return h.ctx }

// Call invokes the named tool with args through Registry.Invoke, as an
// adapter would, in the harness's context. args is a JSON string, []byte,
// json.RawMessage, nil (no arguments), or any other value, marshalled to
// JSON.
//
// After the call, Call fails the test (without stopping it), naming the
// tool, if a goroutine started during the call is still running, if a
// handler's ctx or transaction was used after the handler returned, or if
// the result does not match the tool's output schema. It does not judge
// the result otherwise: use RequireOK or RequireError.
func (h *Harness) Call(name string, args any) Result {
	h.t.Helper()
	return h.CallContext(h.ctx, name, args)
}

// CallContext is Call with a context of the caller's, such as h.Context()
// with another principal (llmtool.WithPrincipal) or tenant.
func (h *Harness) CallContext(ctx context.Context, name string, args any) Result {
	h.t.Helper()
	raw, err := encodeArgs(args)
	if err != nil {
		h.t.Fatalf("llmtooltest: tool %s: arguments: %v", name, err)
		return Result{Tool: name}
	}
	return h.Invoke(ctx, llmtool.Call{Tool: name, Args: raw})
}

// Invoke is CallContext for any call: a tool's, a resource read
// (Call.Resource, the URI) or a prompt's rendering (Call.Prompt). It runs
// the same checks; Result.Tool names the tool, the URI or the prompt.
func (h *Harness) Invoke(ctx context.Context, call llmtool.Call) Result {
	h.t.Helper()
	name := call.Tool
	switch {
	case call.Resource != "":
		name = call.Resource
	case call.Prompt != "":
		name = call.Prompt
	}
	h.mu.Lock()
	h.calls++
	label := fmt.Sprintf("%p#%d", h, h.calls)
	h.mu.Unlock()

	var res llmtool.Result
	pprof.Do(ctx, pprof.Labels(pprofLabel, label), func(ctx context.Context) {
		res = h.reg.Invoke(ctx, call)
	})

	if leaks, n := h.leaked(label); n > 0 {
		verb := "is"
		if n > 1 {
			verb = "are"
		}
		h.t.Errorf("llmtooltest: tool %s: %s started during the call %s still running %v after it returned; a handler must finish all its work before it returns (its ctx and transaction are dead afterwards):\n%s",
			name, plural(n, "goroutine", "goroutines"), verb, h.grace, strings.Join(leaks, "\n"))
	}
	h.checkLate(name)
	if res.IsError && llmtool.KindOf(res.Err) == llmtool.KindInternal {
		var ve *jsonschema.ValidationError
		if errors.As(res.Err, &ve) && strings.Contains(res.Err.Error(), "output schema") {
			h.t.Errorf("llmtooltest: tool %s: its result does not match its output schema: %v", name, res.Err)
		}
	}
	return Result{Result: res, Tool: name}
}

func encodeArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case string:
		return json.RawMessage(a), nil
	case []byte:
		return json.RawMessage(a), nil
	case json.RawMessage:
		return a, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("cannot marshal %T to JSON: %w", args, err)
	}
	return b, nil
}

// RequireError stops the test unless res is a failure whose message (the
// text the model sees) is exactly want, and whose JSON is
// {"error": want}.
func (h *Harness) RequireError(res Result, want string) {
	h.t.Helper()
	if !res.IsError {
		h.t.Fatalf("llmtooltest: tool %s: want the error %q, got a success: %s", res.Tool, want, res.JSON)
		return
	}
	if got := res.Text(); got != want {
		h.t.Fatalf("llmtooltest: tool %s: wrong error message\n got: %s\nwant: %s", res.Tool, got, want)
		return
	}
	var body map[string]any
	if err := json.Unmarshal(res.JSON, &body); err != nil || len(body) != 1 || body["error"] != want {
		h.t.Fatalf("llmtooltest: tool %s: an error result's JSON must be {\"error\": message}; got %s", res.Tool, res.JSON)
	}
}

// RequireOK stops the test unless res is a success whose JSON is an object
// without an "error" property, and returns that object. If into is given
// (one pointer), the JSON is also unmarshalled into it.
func (h *Harness) RequireOK(res Result, into ...any) map[string]any {
	h.t.Helper()
	if res.IsError {
		h.t.Fatalf("llmtooltest: tool %s: want a success, got the error: %s", res.Tool, res.Text())
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(res.JSON))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil || obj == nil {
		h.t.Fatalf("llmtooltest: tool %s: a success must be a JSON object; got %s", res.Tool, res.JSON)
		return nil
	}
	if _, ok := obj["error"]; ok {
		h.t.Fatalf("llmtooltest: tool %s: a success must not have an \"error\" property; got %s", res.Tool, res.JSON)
		return nil
	}
	if len(into) > 1 {
		h.t.Fatalf("llmtooltest: RequireOK takes at most one value to unmarshal into, got %d", len(into))
		return nil
	}
	if len(into) == 1 {
		if err := json.Unmarshal(res.JSON, into[0]); err != nil {
			h.t.Fatalf("llmtooltest: tool %s: unmarshal the result into %T: %v", res.Tool, into[0], err)
			return nil
		}
	}
	return obj
}

// RequireUnchanged runs f and stops the test if any table of the database
// differs afterwards: rows added, removed or changed, tables created or
// dropped. Use it to prove that a refused or failed call wrote nothing.
// Tables named in Options.IgnoreTables, and the engine's own (SQLite's
// sqlite_ tables, PostgreSQL's system schemas), are left out. On
// PostgreSQL a table's definition is its columns (type, NOT NULL,
// default) and constraints, and both dumps are read in a snapshot.
func (h *Harness) RequireUnchanged(f func()) {
	h.t.Helper()
	before, err := h.dump()
	if err != nil {
		h.t.Fatalf("llmtooltest: RequireUnchanged: dump the database: %v", err)
		return
	}
	f()
	after, err := h.dump()
	if err != nil {
		h.t.Fatalf("llmtooltest: RequireUnchanged: dump the database: %v", err)
		return
	}
	if diff := diffDumps(before, after); diff != "" {
		h.t.Fatalf("llmtooltest: RequireUnchanged: the database changed:\n%s", diff)
	}
}
