package llmtool

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/schema"
	"github.com/llmtool/llmtool/man"
)

// Module is a named set of tools: the unit a third party ships. Create one
// with DefineTools in a package-level variable and register it with
// NewRegistry or Registry.Add.
type Module struct {
	name     string
	tools    []*Tool
	entities []*Entity // entity kinds the module declares (WithEntities)
}

// Name returns the module's name.
func (m *Module) Name() string { return m.name }

// Tools returns the module's tools in definition order.
func (m *Module) Tools() []*Tool { return m.tools }

// DefineTools groups tools into a module. It panics if the module name is
// empty, a tool is nil or two tools share a name, so a module's own tests
// catch the mistake.
func DefineTools(module string, tools ...*Tool) *Module {
	if module == "" {
		panic("llmtool: DefineTools: the module needs a name")
	}
	seen := make(map[string]bool, len(tools))
	m := &Module{name: module}
	for i, t := range tools {
		if t == nil {
			panic(fmt.Sprintf("llmtool: module %q: tool %d is nil; is it defined in a package-level variable declared after this module?", module, i+1))
		}
		if seen[t.spec.Name] {
			panic(fmt.Sprintf("llmtool: module %q defines tool %q twice", module, t.spec.Name))
		}
		seen[t.spec.Name] = true
		// Each module gets its own copy, stamped with the module's name.
		c := *t
		c.spec.Module = module
		m.tools = append(m.tools, &c)
	}
	return m
}

// Call is one tool call, as an adapter received it.
type Call struct {
	// Tool is the tool's name.
	Tool string
	// Args are the arguments as sent by the model. Missing, null, "" and
	// {} all mean no arguments; an object sent as a JSON-encoded string is
	// accepted.
	Args json.RawMessage
}

// Result is the outcome of a call, ready for an adapter to send.
type Result struct {
	// JSON is the tool's output on success and {"error": "..."} on failure.
	// A success never has an "error" property.
	JSON []byte
	// IsError reports a failed call.
	IsError bool
	// Err is the error behind a failed call; errors.Is and errors.As work on
	// it (ErrUnknownTool, ErrToolDisabled, *Error, *PanicError, context
	// errors).
	Err error
	// Content holds the parts of a rich result, when the tool's Out is
	// Rich; nil otherwise. JSON holds the same parts.
	Content []Content

	msg string // the rendered error message
}

// Text returns the message the model sees: the error text for a failed
// call, the JSON for a successful one.
func (r Result) Text() string {
	if r.IsError {
		return r.msg
	}
	return string(r.JSON)
}

// Registry holds the tools an application serves and runs every call:
// both adapters call Invoke. It is safe for concurrent use.
type Registry struct {
	tx *dbconn.Pool

	mu      sync.RWMutex
	tools   map[string]*entry
	order   []*entry
	loaders []*loader
	specs   atomic.Pointer[[]*Spec] // enabled specs, rebuilt on change

	pending        atomic.Int32 // loaders not yet resolved
	log            atomic.Pointer[slog.Logger]
	validateOutput atomic.Bool

	entities atomic.Pointer[map[string]entityDecl] // declared entity kinds (guard.go)
	pol      policy                                // scopes, principal, authorizer, subscribers (policy.go)
	audits   atomic.Pointer[auditSinks]            // nil: the default slog sink (audit.go)
	pages    []man.Page                            // Options.ManPages, by name (catalog.go)
}

type entry struct {
	tool    *Tool
	enabled atomic.Bool
	builtin bool // llmtool's own tool (man): listed last, replaced by a host tool of the same name
}

type loader struct {
	name    string
	load    func(context.Context) (*Module, error)
	started atomic.Bool
	done    chan struct{}
	err     error
}

// Options configures a Registry. A nil *Options, like the zero value,
// gives the defaults; they are fixed when the registry is built.
type Options struct {
	// Logger receives internal errors, refused statements, uses of a
	// handler's context after it returned, and (unless Audit is set)
	// the audit records. Default: slog.Default().
	Logger *slog.Logger

	// Authorizer is consulted for every call and every listing; nil
	// allows whatever the scope allows. See Authorizer.
	Authorizer Authorizer

	// RequirePrincipal refuses every call without a principal in its
	// context and empties every listing without one. Turn it on when
	// tools must always run as an authenticated user, as behind the MCP
	// HTTP transport.
	RequirePrincipal bool

	// Audit lists the sinks that receive a record of every call. Nil
	// means one sink: Logger, at Info level. A TxAuditSink among them
	// writes its record inside each write's own transaction.
	Audit []AuditSink

	// ScopeCacheTTL is how long the registry keeps a scope's settings in
	// memory before reading them again. Changes made through this
	// registry (EnableWrites, DisableWrites, SetScopeTool, ResetScopeTool)
	// take effect at once whatever the TTL; a change made by another
	// process sharing the database is seen once the cached copy is older
	// than the TTL, and then reported to subscribers. Zero means
	// DefaultPolicyCacheTTL; NoScopeCache reads the settings on every
	// listing and call (a primary-key lookup), for several processes or
	// replicas sharing one database.
	ScopeCacheTTL time.Duration

	// WritesOffAction is the corrective next action of the refusal of a
	// write tool in a scope whose writes are off: how the user enables
	// them in the host application, such as "Ask the user to turn on
	// 'Allow changes' in the chat settings, then try again.". Default:
	// "Ask the user to enable write tools for this scope, then call
	// <tool> again.".
	WritesOffAction string

	// ValidateOutput checks every successful result against the tool's
	// output schema; a mismatch becomes an internal error. Test harnesses
	// turn it on; it costs a decode per call.
	ValidateOutput bool

	// ManPages are reference pages, such as a search syntax, that the
	// man tool lists after the tools (by name; each page's first
	// non-empty line is its summary) and shows by name. A tool of the
	// same name takes precedence over a page. See ManTool.
	ManPages map[string]string
}

// NoScopeCache, as Options.ScopeCacheTTL, makes the registry read a
// scope's settings on every listing and call.
const NoScopeCache time.Duration = -1

// NewRegistry returns a registry whose tools run against db, configured by
// opts (nil for the defaults), with the given modules registered and the
// built-in man tool (see ManTool). It refuses (with an error naming both
// modules) two tools of the same name, and a tool whose input references
// an entity kind no module declares (see Entity); the modules' entity
// kinds are gathered first, so their order does not matter.
//
// The core speaks database/sql only; for SQLite, open db with OpenSQLite or
// with equivalent settings (WAL, busy timeout, _txlock=immediate).
func NewRegistry(db *sql.DB, opts *Options, modules ...*Module) (*Registry, error) {
	r := &Registry{tx: dbconn.New(db), tools: make(map[string]*entry)}
	if err := r.setup(opts); err != nil {
		return nil, err
	}
	if opts != nil {
		r.configure(opts)
	}
	for _, m := range modules {
		if m == nil {
			continue // Add reports it
		}
		if err := r.declareLocked(m, true); err != nil {
			return nil, err
		}
	}
	for _, m := range modules {
		if err := r.Add(m); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers a module's tools. It refuses, with an error naming both
// modules, a tool whose name is already registered, and registers nothing
// from the module in that case.
func (r *Registry) Add(m *Module) error {
	r.mu.Lock()
	err := r.addLocked(m)
	r.mu.Unlock()
	if err == nil {
		r.notify("")
	}
	return err
}

func (r *Registry) addLocked(m *Module) error {
	if m == nil {
		return errors.New("llmtool: Add: nil module; is it defined in a package-level variable?")
	}
	for _, t := range m.tools {
		if err := ValidateName(t.spec.Name); err != nil {
			return fmt.Errorf("llmtool: module %q: %w", m.name, err)
		}
		if e, ok := r.tools[t.spec.Name]; ok && !e.builtin {
			return fmt.Errorf("llmtool: tool %q is defined by both module %q and module %q; rename one of them", t.spec.Name, e.tool.spec.Module, m.name)
		}
	}
	if err := r.declareLocked(m, false); err != nil {
		return err
	}
	if err := r.checkRefsLocked(m); err != nil {
		return err
	}
	_ = r.declareLocked(m, true)
	for _, t := range m.tools {
		r.dropBuiltinLocked(t.spec.Name)
		e := &entry{tool: t}
		e.enabled.Store(!t.disabled)
		r.tools[t.spec.Name] = e
		r.order = append(r.order, e)
	}
	r.specs.Store(nil)
	return nil
}

// AddLoader registers a module that is loaded lazily, to keep heavy modules
// out of the start-up path. load runs once, on the first listing or on the
// first call of a tool the registry does not know yet; concurrent first
// callers share that one run. A loader's error is reported by List and by
// such calls, every time, and is not retried.
func (r *Registry) AddLoader(name string, load func(ctx context.Context) (*Module, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loaders = append(r.loaders, &loader{name: name, load: load, done: make(chan struct{})})
	r.pending.Add(1)
}

// resolve runs every pending loader and waits for them all, or for ctx.
func (r *Registry) resolve(ctx context.Context) error {
	if r.pending.Load() == 0 {
		return r.loaderErr()
	}
	r.mu.RLock()
	ls := append([]*loader(nil), r.loaders...)
	r.mu.RUnlock()
	for _, l := range ls {
		if l.started.CompareAndSwap(false, true) {
			// Its own goroutine, so that every caller, the first included,
			// can stop waiting when its context ends.
			go r.runLoader(context.WithoutCancel(ctx), l)
		}
	}
	for _, l := range ls {
		select {
		case <-l.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return r.loaderErr()
}

func (r *Registry) runLoader(ctx context.Context, l *loader) {
	defer func() {
		if p := recover(); p != nil {
			l.err = fmt.Errorf("llmtool: loader %q panicked: %v", l.name, p)
		}
		r.pending.Add(-1)
		close(l.done)
	}()
	m, err := l.load(ctx)
	switch {
	case err != nil:
		l.err = fmt.Errorf("llmtool: loader %q: %w", l.name, err)
	case m == nil:
		l.err = fmt.Errorf("llmtool: loader %q returned no module and no error", l.name)
	default:
		if err := r.Add(m); err != nil {
			l.err = fmt.Errorf("llmtool: loader %q: %w", l.name, err)
		}
	}
	if l.err != nil {
		r.logger().Error("llmtool: module loader failed", "loader", l.name, "err", l.err)
	}
}

func (r *Registry) loaderErr() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var errs []error
	for _, l := range r.loaders {
		select {
		case <-l.done:
			if l.err != nil {
				errs = append(errs, l.err)
			}
		default:
		}
	}
	return errors.Join(errs...)
}

// List returns the specs of the tools ctx's caller may call, in
// registration order with the built-in man last, after running pending
// loaders: tools switched on, allowed in the scope of ctx (write tools only
// once the scope enabled writes; see EnableWrites) and for its principal
// (Options.RequirePrincipal, Options.Authorizer). The specs and their schema
// JSON are computed once; do not modify them. Filtering by scope uses the
// cached scope settings (see Options.ScopeCacheTTL) and allocates nothing
// unless per-tool settings or an Authorizer apply. A loader's failure is
// returned along with the tools that did load.
func (r *Registry) List(ctx context.Context) ([]*Spec, error) {
	err := r.resolve(ctx)
	return r.visible(ctx, nil, r.allSpecs()), err
}

// allSpecs returns the specs of the tools switched on, built-in ones last,
// computed once per change.
func (r *Registry) allSpecs() *[]*Spec {
	if p := r.specs.Load(); p != nil {
		return p
	}
	r.mu.RLock()
	specs := make([]*Spec, 0, len(r.order))
	for _, builtin := range []bool{false, true} {
		for _, e := range r.order {
			if e.enabled.Load() && e.builtin == builtin {
				specs = append(specs, &e.tool.spec)
			}
		}
	}
	r.mu.RUnlock()
	r.specs.Store(&specs)
	return &specs
}

// Specs returns the specs of every registered tool, switched on or off and
// whatever any scope allows, in registration order, after running pending
// loaders. It is for start-up checks (lint, a chat adapter's provider
// check) that must see tools no scope has enabled yet; listings for a model
// use List.
func (r *Registry) Specs(ctx context.Context) ([]*Spec, error) {
	err := r.resolve(ctx)
	r.mu.RLock()
	defer r.mu.RUnlock()
	specs := make([]*Spec, 0, len(r.order))
	for _, e := range r.order {
		specs = append(specs, &e.tool.spec)
	}
	return specs, err
}

// Tool returns the spec of the named tool, enabled or not, running pending
// loaders if the name is not known yet.
func (r *Registry) Tool(ctx context.Context, name string) (*Spec, bool) {
	e, _ := r.find(ctx, name)
	if e == nil {
		return nil, false
	}
	return &e.tool.spec, true
}

// SetEnabled switches a tool on or off for every scope at run time: the
// global kill switch. It returns an error for an unknown tool.
func (r *Registry) SetEnabled(name string, on bool) error {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("llmtool: SetEnabled: unknown tool %q", name)
	}
	e.enabled.Store(on)
	r.specs.Store(nil)
	r.notify("")
	return nil
}

// configure applies opts to a new registry.
func (r *Registry) configure(o *Options) {
	if o.Logger != nil {
		r.log.Store(o.Logger)
	}
	if o.Authorizer != nil {
		a := o.Authorizer
		r.pol.authz.Store(&a)
	}
	r.pol.requirePrincipal.Store(o.RequirePrincipal)
	if len(o.Audit) > 0 {
		r.setAuditSinks(o.Audit...)
	}
	switch {
	case o.ScopeCacheTTL < 0:
		r.pol.ttl.Store(0)
	case o.ScopeCacheTTL > 0:
		r.pol.ttl.Store(int64(o.ScopeCacheTTL))
	}
	if o.WritesOffAction != "" {
		action := o.WritesOffAction
		r.pol.writesOffNext.Store(&action)
	}
	r.validateOutput.Store(o.ValidateOutput)
}

func (r *Registry) logger() *slog.Logger {
	if l := r.log.Load(); l != nil {
		return l
	}
	return slog.Default()
}

func (r *Registry) lateUse(tool, op string) {
	r.logger().Error("llmtool: transaction used after its handler returned", "tool", tool, "op", op)
}

func (r *Registry) find(ctx context.Context, name string) (*entry, error) {
	r.mu.RLock()
	e := r.tools[name]
	r.mu.RUnlock()
	if e != nil {
		return e, nil
	}
	err := r.resolve(ctx)
	r.mu.RLock()
	e = r.tools[name]
	r.mu.RUnlock()
	if e != nil {
		return e, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, r.unknown(ctx, name)
}

// unknown reports a name the registry does not know, suggesting the
// closest names among the tools the caller's scope may call.
func (r *Registry) unknown(ctx context.Context, name string) error {
	specs, _ := r.List(ctx)
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		names = append(names, s.Name)
	}
	msg := fmt.Sprintf("Unknown tool %q.", name)
	next := "Call one of the tools you were given."
	if near := closest(name, names, 3); len(near) > 0 {
		next = "Did you mean " + quoteOr(near) + "?"
	}
	return &Error{Kind: KindNotFound, Message: msg, NextAction: next, err: ErrUnknownTool}
}

func quoteOr(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// closest returns up to n of names nearest to name by edit distance, for
// "did you mean" suggestions; names farther than a third of name's length are
// left out.
func closest(name string, names []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, c := range names {
		d := editDistance(name, c)
		if d <= max(2, len(name)/3) || strings.Contains(c, name) || strings.Contains(name, c) {
			cs = append(cs, cand{c, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Invoke runs one call: find the tool, check it is switched on, decode and
// validate the arguments (applying defaults), begin a read or write
// transaction, run the guards and the handler (recovering panics), encode
// the result inside the transaction, commit or roll back, run after-commit
// hooks. Nothing escapes as a Go error or a panic: every failure is a
// Result with IsError set and a message for the model.
//
// The principal and scope come from ctx (WithPrincipal, WithScope).
func (r *Registry) Invoke(ctx context.Context, call Call) Result {
	start := time.Now()
	var (
		res       Result
		committed bool
		write     bool
		refused   bool
		module    string
	)
	e, err := r.find(ctx, call.Tool)
	if err == nil {
		t := e.tool
		module, write = t.spec.Module, !t.spec.ReadOnly
		err = r.admit(ctx, e) // policy.go
		refused = err != nil
		var (
			args []byte
			fill uint64         // top-level defaults to set on In
			argv map[string]any // the decoded arguments, for a flat In
		)
		if err == nil {
			args, fill, argv, err = t.prepare(call.Args)
		}
		if err == nil {
			res.JSON, committed, err = r.exec(r.withAuditStart(ctx, start), t, args, prepared{fill: fill, argv: argv}, &res)
		}
	}
	if err != nil {
		res = r.failure(call.Tool, err)
	}
	r.audit(ctx, AuditRecord{
		Time: start, Tool: call.Tool, Module: module, Principal: principalID(ctx), Scope: ScopeFrom(ctx),
		Outcome: outcome(err, refused), Duration: time.Since(start), Write: write, Committed: committed,
	})
	return res
}

func (r *Registry) failure(tool string, err error) Result {
	if KindOf(err) == KindInternal {
		var p *PanicError
		if errors.As(err, &p) {
			r.logger().Error("llmtool: tool panicked", "tool", tool, "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
		} else {
			r.logger().Error("llmtool: tool failed", "tool", tool, "err", err)
		}
	}
	msg := render(tool, err)
	return Result{JSON: errorJSON(msg), IsError: true, Err: err, msg: msg}
}

// run calls the tool's handler, turning a panic into a *PanicError and
// validating the output when asked to.
func (r *Registry) run(t *Tool, c *ReadCtx, args []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &PanicError{Tool: t.spec.Name, Value: p, Stack: debug.Stack()}
		}
	}()
	out, err = t.run(c, args)
	if err == nil && r.validateOutput.Load() {
		err = t.validateOutput(out)
	}
	if err == nil && c.write != nil {
		err = r.auditTx(c) // audit.go: the record commits or rolls back with the write
	}
	return out, err
}

// prepare turns the model's arguments into validated JSON for In, the set
// of top-level defaults to apply after decoding it, and the decoded
// argument object when In can be filled from it directly.
func (t *Tool) prepare(raw json.RawMessage) ([]byte, uint64, map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, 0, nil, InvalidArgs("arguments: not valid JSON (%v). Send one JSON object, such as %s.", err, t.example())
		}
		raw = bytes.TrimSpace([]byte(s))
		if len(raw) > 0 && raw[0] != '{' {
			return nil, 0, nil, InvalidArgs("arguments: expected a JSON object, got a string. Send one JSON object, such as %s.", t.example())
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, 0, nil, InvalidArgs("arguments: expected a JSON object, got %s. Send one JSON object, such as %s.", jsonKind(raw), t.example())
	}
	v, err := schema.DecodeArguments(raw)
	if err != nil {
		return nil, 0, nil, InvalidArgs("arguments: not valid JSON (%v). Send one JSON object, such as %s.", err, t.example())
	}
	// Models often send null for an optional parameter they mean to leave
	// out; where null is not a value the parameter takes, it means absent.
	dropped := t.in.Root().DropNulls(v)
	if err := t.in.Validate(v); err != nil {
		return nil, 0, nil, invalidArgs(t.in.ValidationError(err))
	}
	if !t.in.NestedDefaults() {
		// A dropped null decodes as the zero value, as an absent field
		// does; absent fields with defaults are set on In by run.
		m, _ := v.(map[string]any)
		return raw, t.in.MissingDefaults(v), m, nil
	}
	if t.in.Root().ApplyDefaults(v) || dropped {
		b, err := marshal(v)
		return b, 0, nil, err
	}
	return raw, 0, nil, nil
}

func jsonKind(raw []byte) string {
	switch raw[0] {
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// example builds an example argument object from the required parameters.
func (t *Tool) example() string { return t.in.Example() }

func (t *Tool) validateOutput(out []byte) error {
	v, err := decodeAny(out)
	if err != nil {
		return fmt.Errorf("llmtool: tool %s: output is not JSON: %w", t.spec.Name, err)
	}
	if err := t.out.ValidateReference(v); err != nil {
		return fmt.Errorf("llmtool: tool %s: output does not match its output schema: %w", t.spec.Name, err)
	}
	return nil
}

func decodeAny(b []byte) (any, error) {
	if v, ok := schema.FastDecode(b); ok {
		return v, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// decodeArgs decodes validated arguments into a handler's In value.
func decodeArgs(args []byte, in any) error {
	if err := json.Unmarshal(args, in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return InvalidArgs("/%s: %s does not fit %s. Send a value in range for the parameter.", strings.ReplaceAll(te.Field, ".", "/"), te.Value, te.Type)
		}
		return InvalidArgs("arguments: %v. Send one JSON object that matches the tool's input schema.", err)
	}
	return nil
}

// encodeOut encodes a handler's result, inside its transaction.
func encodeOut(out any) ([]byte, error) {
	v := reflect.ValueOf(out)
	if v.Kind() == reflect.Map {
		if v.IsNil() {
			return []byte("{}"), nil
		}
		if v.MapIndex(reflect.ValueOf("error").Convert(v.Type().Key())).IsValid() {
			return nil, errors.New("llmtool: result map has an \"error\" key, which is reserved for failed calls")
		}
	}
	return marshal(out)
}

// marshal encodes v as compact JSON without HTML escaping.
func marshal(v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer func() {
		if e.buf.Cap() <= 64<<10 { // keep small buffers only
			encoders.Put(e)
		}
	}()
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	b := e.buf.Bytes()
	return bytes.Clone(b[:len(b)-1]), nil
}

// encoder is a reusable JSON encoder that does not escape HTML.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

func appendJSONString(b []byte, s string) []byte {
	m, _ := marshal(s)
	return append(b, m...)
}

// invalidArgs turns a schema refusal into the InvalidArgs error the model
// sees, keeping its cause.
func invalidArgs(e *schema.Invalid) *Error {
	return &Error{Kind: KindInvalidArgs, Message: e.Message, err: e.Err}
}
