// Package llmtooltest is the test harness for llmtool tool modules: it
// calls tools by name through the same Registry.Invoke path the MCP and
// chat adapters use, against a fresh SQLite database, and fails the test
// when a tool breaks llmtool's rules even though its answer looks right.
//
// A test opens a harness with its modules and the host's schema, calls
// tools, and asserts the literal error or a success:
//
//	func TestGetNote(t *testing.T) {
//		h := llmtooltest.New(t, notes.Tools, llmtooltest.Schema(notes.Migrate))
//		h.RequireError(h.Call("get_note", `{"noteId": "nope"}`), `Note "nope" not found. Call search_notes to find the ID.`)
//		note := h.RequireOK(h.Call("create_note", map[string]any{"title": "Hello"}))
//		...
//	}
//
// Every call is checked, whatever the test asserts:
//
//   - no goroutine started during the call is still running once it
//     returned (goroutines are attributed to the call with pprof labels,
//     which they inherit, so tests running in parallel do not disturb the
//     check; database/sql's and the runtime's own goroutines are ignored);
//   - no ctx or transaction of a handler was used after the handler
//     returned (Registry.LateUses; such uses fail with llmtool.ErrTxDone);
//   - a successful result matches the tool's output schema
//     (Options.ValidateOutput is on).
//
// Each broken rule fails the test with an error naming the tool.
package llmtooltest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	_ "modernc.org/sqlite" // the default driver, "sqlite"

	"github.com/llmtool/llmtool"
)

// TB is the part of testing.TB the harness uses. *testing.T, *testing.B
// and *testing.F satisfy it.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
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
	// DefaultScope is the scope calls run in unless the Scope option says
	// otherwise.
	DefaultScope = "test"
	// DefaultPrincipalID is the ID of the principal calls run as unless
	// the Principal option says otherwise.
	DefaultPrincipalID = "test-user"
	// DefaultDriver is the database/sql driver name of modernc.org/sqlite,
	// which the harness imports.
	DefaultDriver = "sqlite"
	// DefaultLeakGrace is how long the harness waits for goroutines started
	// during a call to finish, when some are still running as the call
	// returns, before it reports them.
	DefaultLeakGrace = time.Second
)

// pprofLabel is the goroutine label that attributes goroutines to a call.
const pprofLabel = "llmtooltest.call"

// lateUseMessage is the registry's log message for a use of a handler's ctx
// or transaction after it returned.
const lateUseMessage = "llmtool: transaction used after its handler returned"

// Option configures a harness. Pass options to New, among the modules.
type Option func(*config)

type config struct {
	driver    string
	schema    []func(context.Context, *sql.DB) error
	setup     []func(*llmtool.Registry) error
	principal *llmtool.Principal
	scope     string
	writesOff bool
	grace     time.Duration
	ignore    []string
	logLevel  slog.Level
}

// Schema adds a function that creates the host's tables and seeds them,
// run in order on the fresh database before the registry is built. Use the
// host application's own migration code, so tests run against the real
// schema.
func Schema(f func(ctx context.Context, db *sql.DB) error) Option {
	return func(c *config) { c.schema = append(c.schema, f) }
}

// SQL adds statements to run, in order, on the fresh database before the
// registry is built: a schema and seed rows written inline.
func SQL(statements ...string) Option {
	return Schema(func(ctx context.Context, db *sql.DB) error {
		for _, s := range statements {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%w, in: %s", err, s)
			}
		}
		return nil
	})
}

// Setup adds a function that configures the registry once it is built and
// before writes are enabled: loaders, an authorizer, audit sinks, kill
// switches.
func Setup(f func(reg *llmtool.Registry) error) Option {
	return func(c *config) { c.setup = append(c.setup, f) }
}

// Principal sets the user calls run as. The default has the ID
// DefaultPrincipalID and no roles. nil runs calls without a principal.
func Principal(p *llmtool.Principal) Option {
	return func(c *config) { c.principal = p }
}

// Scope sets the scope calls run in (DefaultScope by default).
func Scope(scope string) Option {
	return func(c *config) { c.scope = scope }
}

// WritesOff leaves write tools off in the harness's scope, as in a scope
// that never enabled them, to test the refusal. By default the harness
// enables writes in its scope.
func WritesOff() Option {
	return func(c *config) { c.writesOff = true }
}

// Driver sets the database/sql driver name that opens the SQLite file
// (DefaultDriver by default). The host imports the driver.
func Driver(name string) Option {
	return func(c *config) { c.driver = name }
}

// LeakGrace sets how long the harness waits for goroutines started during a
// call to finish before it reports them (DefaultLeakGrace by default). The
// harness does not wait at all when none is running.
func LeakGrace(d time.Duration) Option {
	return func(c *config) { c.grace = d }
}

// IgnoreTables leaves tables out of the dumps that RequireUnchanged
// compares, such as a log table the host writes on every call.
func IgnoreTables(names ...string) Option {
	return func(c *config) { c.ignore = append(c.ignore, names...) }
}

// LogLevel sets the lowest level of the registry's log lines that reach the
// test's output (slog.LevelInfo by default, which includes the audit line
// of each call).
func LogLevel(l slog.Level) Option {
	return func(c *config) { c.logLevel = l }
}

// Harness runs a test's tool calls. Create one per test with New. Its
// methods may be called from several goroutines, but a failure is reported
// on the TB given to New.
type Harness struct {
	t     TB
	db    *sql.DB
	reg   *llmtool.Registry
	ctx   context.Context
	grace time.Duration
	skip  map[string]bool // tables RequireUnchanged ignores

	mu       sync.Mutex
	calls    int
	lateSeen int64    // late uses already reported
	late     []string // "tool (op)" of each logged late use
	lateUsed int      // entries of late already reported
	closed   bool     // the test ended: log lines are dropped
}

// Result is the outcome of a harness call: the registry's Result and the
// name of the tool called, for messages.
type Result struct {
	llmtool.Result
	// Tool is the name of the tool called.
	Tool string
}

// New opens a fresh SQLite database in t.TempDir() with llmtool.OpenSQLite,
// runs the Schema and SQL options on it, builds a registry of the given
// modules that validates every result against its output schema and logs
// to t.Output(), runs the Setup options, and enables writes in the
// harness's scope unless WritesOff is given. Calls run as the harness's
// principal in its scope.
//
// Each argument after t is a *llmtool.Module, a []*llmtool.Module or an
// Option; New fails the test on anything else, and on any error while
// setting up. The database is closed when the test ends.
func New(t TB, modulesAndOptions ...any) *Harness {
	t.Helper()
	cfg := config{
		driver:    DefaultDriver,
		principal: &llmtool.Principal{ID: DefaultPrincipalID, Name: "Test User"},
		scope:     DefaultScope,
		grace:     DefaultLeakGrace,
		logLevel:  slog.LevelInfo,
	}
	var modules []*llmtool.Module
	for i, a := range modulesAndOptions {
		switch a := a.(type) {
		case *llmtool.Module:
			modules = append(modules, a)
		case []*llmtool.Module:
			modules = append(modules, a...)
		case Option:
			a(&cfg)
		default:
			t.Fatalf("llmtooltest.New: argument %d is a %T; pass *llmtool.Module values and llmtooltest options", i+2, a)
			return nil
		}
	}
	h := &Harness{t: t, grace: cfg.grace, skip: make(map[string]bool)}
	for _, name := range cfg.ignore {
		h.skip[name] = true
	}
	path := filepath.Join(t.TempDir(), "llmtooltest.db")
	db, err := llmtool.OpenSQLite(cfg.driver, path)
	if err != nil {
		t.Fatalf("llmtooltest.New: %v", err)
		return nil
	}
	h.db = db
	t.Cleanup(func() { db.Close() })
	t.Cleanup(h.finish)
	base := t.Context()
	for i, f := range cfg.schema {
		if err := f(base, db); err != nil {
			t.Fatalf("llmtooltest.New: schema function %d: %v", i+1, err)
			return nil
		}
	}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(&logHandler{h: h, next: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: cfg.logLevel})}), ValidateOutput: true}, modules...)
	if err != nil {
		t.Fatalf("llmtooltest.New: %v", err)
		return nil
	}
	h.reg = reg
	for i, f := range cfg.setup {
		if err := f(reg); err != nil {
			t.Fatalf("llmtooltest.New: setup function %d: %v", i+1, err)
			return nil
		}
	}
	ctx := llmtool.WithScope(base, cfg.scope)
	if cfg.principal != nil {
		ctx = llmtool.WithPrincipal(ctx, cfg.principal)
	}
	h.ctx = ctx
	if !cfg.writesOff {
		if err := reg.EnableWrites(ctx, cfg.scope); err != nil {
			t.Fatalf("llmtooltest.New: enable writes in scope %q: %v", cfg.scope, err)
			return nil
		}
	} else if _, err := reg.WritesEnabled(ctx, cfg.scope); err != nil {
		// Reading the settings creates the registry's settings table now,
		// rather than during the first call, where RequireUnchanged would
		// see it appear.
		t.Fatalf("llmtooltest.New: read the settings of scope %q: %v", cfg.scope, err)
		return nil
	}
	return h
}

// DB returns the harness's database, to seed rows or check what a call
// wrote.
func (h *Harness) DB() *sql.DB { return h.db }

// Registry returns the harness's registry.
func (h *Harness) Registry() *llmtool.Registry { return h.reg }

// Context returns the context calls run with: the test's context, with the
// harness's scope and principal. Derive from it to call with another
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
// with another principal (llmtool.WithPrincipal) or scope.
func (h *Harness) CallContext(ctx context.Context, name string, args any) Result {
	h.t.Helper()
	raw, err := encodeArgs(args)
	if err != nil {
		h.t.Fatalf("llmtooltest: tool %s: arguments: %v", name, err)
		return Result{Tool: name}
	}
	h.mu.Lock()
	h.calls++
	label := fmt.Sprintf("%p#%d", h, h.calls)
	h.mu.Unlock()

	var res llmtool.Result
	pprof.Do(ctx, pprof.Labels(pprofLabel, label), func(ctx context.Context) {
		res = h.reg.Invoke(ctx, llmtool.Call{Tool: name, Args: raw})
	})

	if leaks := h.leaked(label); len(leaks) > 0 {
		verb := "is"
		if len(leaks) > 1 {
			verb = "are"
		}
		h.t.Errorf("llmtooltest: tool %s: %s started during the call %s still running %v after it returned; a handler must finish all its work before it returns (its ctx and transaction are dead afterwards):\n%s",
			name, plural(len(leaks), "goroutine", "goroutines"), verb, h.grace, strings.Join(leaks, "\n"))
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
// Tables named by the IgnoreTables option, and SQLite's own, are left out.
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

// finish reports late uses that happened after the last call, once the
// test is over.
func (h *Harness) finish() {
	h.checkLate("")
	h.mu.Lock()
	h.closed = true // a TB's output may not be written once the test ended
	h.mu.Unlock()
}

// checkLate reports uses of a handler's ctx or transaction after it
// returned that were not reported yet. tool is the tool just called, or ""
// at the end of the test.
func (h *Harness) checkLate(tool string) {
	h.t.Helper()
	if h.reg == nil {
		return
	}
	n := h.reg.LateUses()
	h.mu.Lock()
	if n <= h.lateSeen {
		h.mu.Unlock()
		return
	}
	count := n - h.lateSeen
	h.lateSeen = n
	names := slices.Clone(h.late[h.lateUsed:])
	h.lateUsed = len(h.late)
	h.mu.Unlock()
	which := ""
	if len(names) > 0 {
		which = " by " + strings.Join(names, ", ")
	}
	when := "after the call to " + tool
	if tool == "" {
		when = "after the test's last call"
	}
	h.t.Errorf("llmtooltest: %s of a handler's ctx or transaction after the handler returned%s, seen %s: such uses fail with llmtool.ErrTxDone; finish all work before returning and start no goroutine that outlives the handler",
		plural(int(count), "use", "uses"), which, when)
}

// leaked waits, up to the harness's grace period, for the goroutines
// labelled with label to finish, and returns the stacks of those still
// running. It returns at once when none is running.
func (h *Harness) leaked(label string) []string {
	leaks := labelled(label)
	if len(leaks) == 0 {
		return nil
	}
	deadline := time.Now().Add(h.grace)
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		left := time.Until(deadline)
		if left <= 0 {
			return leaks
		}
		runtime.Gosched()
		time.Sleep(min(wait, left))
		if leaks = labelled(label); len(leaks) == 0 {
			return nil
		}
	}
}

// labelled returns the stacks of the running goroutines whose pprof label
// is label, leaving out database/sql's and the runtime's own.
func labelled(label string) []string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return nil
	}
	var out []string
	// The debug=1 profile groups goroutines by stack: a "N @ pcs" line, an
	// optional "# labels: {...}" line, then one "#\tpc\tfunc+off\tfile:line"
	// line per frame, innermost first; groups are separated by blank lines.
	for group := range strings.SplitSeq(buf.String(), "\n\n") {
		lines := strings.Split(strings.TrimSpace(group), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "# labels: ") {
			continue
		}
		var labels map[string]string
		if json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "# labels: ")), &labels) != nil || labels[pprofLabel] != label {
			continue
		}
		var frames []string
		for _, l := range lines[2:] {
			f := strings.Fields(strings.TrimPrefix(l, "#"))
			if len(f) >= 3 {
				fn := f[1]
				if i := strings.LastIndex(fn, "+0x"); i > 0 {
					fn = fn[:i]
				}
				frames = append(frames, fn+" "+f[2])
			}
		}
		if len(frames) == 0 || ignored(frames[len(frames)-1]) {
			continue
		}
		count, _, _ := strings.Cut(lines[0], " @")
		out = append(out, fmt.Sprintf("%s × goroutine:\n\t%s", count, strings.Join(frames, "\n\t")))
	}
	return out
}

// ignored reports whether a goroutine whose outermost frame is frame
// belongs to database/sql's or the runtime's own machinery, such as the
// watcher database/sql starts for each transaction.
func ignored(frame string) bool {
	fn, _, _ := strings.Cut(frame, " ")
	if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "runtime/") {
		return true
	}
	if rest, ok := strings.CutPrefix(fn, "database/sql."); ok {
		// Unexported functions and methods: (*Tx).awaitDone,
		// (*DB).connectionOpener and the like.
		if i := strings.LastIndex(rest, "."); i >= 0 {
			rest = rest[i+1:]
		}
		return rest != "" && rest[0] >= 'a' && rest[0] <= 'z'
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// logHandler passes the registry's log to the test's output and notes the
// tools that used their ctx or transaction after returning.
type logHandler struct {
	h     *Harness
	next  slog.Handler
	attrs []slog.Attr
}

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelError || l.next.Enabled(ctx, level)
}

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == lateUseMessage {
		var tool, op string
		visit := func(a slog.Attr) bool {
			switch a.Key {
			case "tool":
				tool = a.Value.String()
			case "op":
				op = a.Value.String()
			}
			return true
		}
		for _, a := range l.attrs {
			visit(a)
		}
		r.Attrs(visit)
		l.h.mu.Lock()
		l.h.late = append(l.h.late, fmt.Sprintf("%s (%s)", tool, op))
		l.h.mu.Unlock()
	}
	if !l.next.Enabled(ctx, r.Level) {
		return nil
	}
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	if l.h.closed {
		return nil
	}
	return l.next.Handle(ctx, r)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{h: l.h, next: l.next.WithAttrs(attrs), attrs: append(slices.Clone(l.attrs), attrs...)}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{h: l.h, next: l.next.WithGroup(name), attrs: l.attrs}
}
