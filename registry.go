package llmtool

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/i18n"
	"github.com/llmtool/llmtool/internal/callinfo"
	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/man"
	"github.com/llmtool/llmtool/internal/signkey"
	"github.com/llmtool/llmtool/internal/toolname"
	"github.com/llmtool/llmtool/tenant"
)

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
	pol      policy                                // principal, authorizer (policy.go)
	tenants  *tenant.Settings                      // per-tenant switches, their cache and subscribers (tenant.go)
	watchers watchers                              // OnResourceUpdate functions (updates.go)
	approve  approvals                             // the approval tokens' key and lifetime (approval.go)
	audits   atomic.Pointer[auditSinks]            // nil: the default slog sink (audit.go)
	pages    []man.Page                            // Options.ManPages, by name (catalog.go)
	invoke   InvokeFunc                            // Options.Middleware around call (middleware.go)
	chained  bool                                  // there is middleware: invoke is not call
	tel      telemetry                             // Options.TracerProvider and MeterProvider (telemetry.go)
	demand   demand                                // Options.OnDemand: tools loaded per tenant (discover.go)
	tracked  *tracking                             // Options.Changesets; nil when no table is tracked (changesets.go)
	retryFor time.Duration                         // Options.RetryFor (retry.go)
	turns    turns                                 // a starving write's turn to run alone (retry.go)
	hooks    writeHooks                            // the features of the write path, at their points (hooks.go)
	msgs     *i18n.Catalog                         // Options.Messages: the words of changes (words.go)
}

type entry struct {
	tool     *Tool
	enabled  atomic.Bool
	builtin  bool // llmtool's own tool (man): listed last, replaced by a host tool of the same name
	onDemand bool // listed only where loaded (Options.OnDemand, discover.go)
}

type loader struct {
	name    string
	load    func(context.Context) (*Module, error)
	started atomic.Bool
	done    chan struct{}
	err     error
}

// NewRegistry returns a registry whose tools run against db, configured by
// opts (nil for the defaults), with the given modules registered and the
// built-in man tool (see Options.ManPages). It refuses (with an error naming both
// modules) two tools of the same name, and a tool whose input references
// an entity kind no module declares (see Entity); the modules' entity
// kinds are gathered first, so their order does not matter. It refuses an
// Options.ApprovalKey shorter than 16 bytes before touching db.
//
// The core speaks database/sql, and on SQLite installs modernc.org/sqlite's
// authorizer on the connections it runs calls on (a database opened with
// another driver, or a wrapper around its connections, is refused). For
// SQLite, open db with sqlite.Open
// (package github.com/llmtool/llmtool/sqlite) or with equivalent settings
// (WAL, busy timeout, _txlock=immediate); for PostgreSQL, with
// github.com/jackc/pgx/v5/stdlib. NewRegistry learns the
// engine (Options.Engine, or by asking the database) and brings llmtool's
// own tables (the tenant settings) to their current version: an idempotent
// step, safe to run from several replicas at once.
func NewRegistry(db *sql.DB, opts *Options, modules ...*Module) (*Registry, error) {
	if opts != nil {
		if err := signkey.Check("llmtool: Options.ApprovalKey", opts.ApprovalKey); err != nil {
			return nil, err
		}
	}
	var e engine.Engine
	if db != nil {
		var err error
		if e, err = openEngine(db, opts); err != nil {
			return nil, err
		}
	}
	r := &Registry{tx: dbconn.New(db, e), tools: make(map[string]*entry), retryFor: defaultRetryFor, turns: newTurns()}
	r.invoke = r.call
	r.tenants = r.newTenants(opts)
	if err := r.setup(opts); err != nil {
		return nil, err
	}
	if opts != nil {
		r.configure(opts)
	}
	r.approve.init(opts)
	if opts != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := r.initChangesets(ctx, opts.Changesets) // changesets.go
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if err := r.useRole(opts); err != nil { // role.go: after llmtool's tables exist
		return nil, err
	}
	r.initHooks() // hooks.go: once the features are configured
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
		r.tenants.Notify("")
	}
	return err
}

func (r *Registry) addLocked(m *Module) error {
	if m == nil {
		return errors.New("llmtool: Add: nil module; is it defined in a package-level variable?")
	}
	for _, t := range m.tools {
		if err := toolname.Validate(t.spec.Name); err != nil {
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
	if err := r.checkUpdatesLocked(m); err != nil {
		return err
	}
	_ = r.declareLocked(m, true)
	for _, t := range m.tools {
		r.dropBuiltinLocked(t.spec.Name)
		e := &entry{tool: t, onDemand: r.onDemand(t)}
		e.enabled.Store(true)
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

// Tool returns the spec of the named tool, enabled or not, running pending
// loaders if the name is not known yet.
func (r *Registry) Tool(ctx context.Context, name string) (*Spec, bool) {
	e, _ := r.find(ctx, name)
	if e == nil {
		return nil, false
	}
	return &e.tool.spec, true
}

// SetEnabled switches a tool on or off for every tenant at run time: the
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
	r.tenants.Notify("")
	return nil
}

// configure applies opts to a new registry.
func (r *Registry) configure(o *Options) {
	if o.Logger != nil {
		r.log.Store(o.Logger)
	}
	if o.Authorize != nil {
		a := o.Authorize
		r.pol.authz.Store(&a)
	}
	r.pol.requirePrincipal.Store(o.RequirePrincipal)
	if len(o.Audit) > 0 {
		r.setAuditSinks(o.Audit...)
	}
	if o.WritesOffAction != "" {
		action := o.WritesOffAction
		r.pol.writesOffNext.Store(&action)
	}
	r.validateOutput.Store(o.ValidateOutput)
	r.tx.WriteGrace = o.WriteGrace
	if o.RetryFor > 0 {
		r.retryFor = o.RetryFor
	}
	r.msgs = o.Messages
	r.invoke = r.chain(o.Middleware)
	r.chained = slices.ContainsFunc(o.Middleware, func(m Middleware) bool { return m != nil })
	if err := r.tel.init(o); err != nil {
		r.logger().Warn("llmtool: an OpenTelemetry instrument was refused; its measurements are not recorded", "err", err)
	}
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

// Invoke runs one call: find the tool, check it is switched on, decode and
// validate the arguments (applying defaults), begin a read or write
// transaction, run the guards and the handler (recovering panics), encode
// the result inside the transaction, commit or roll back, run after-commit
// hooks. Nothing escapes as a Go error or a panic: every failure is a
// Result with IsError set and a message for the model.
//
// The principal and tenant come from ctx (WithPrincipal, WithTenant).
//
// With Options.TracerProvider set, the call has a span, a child of the
// span in ctx (the host's, or the one an adapter took from the client's
// trace context): "execute_tool <tool>" ("read_resource <resource>",
// "get_prompt <prompt>"), with the attributes gen_ai.operation.name,
// gen_ai.tool.name, llmtool.module, llmtool.tenant, enduser.id (the
// principal's ID, when there is one), llmtool.outcome (the audit
// record's), llmtool.write, llmtool.committed, llmtool.attempts (write
// calls), llmtool.retry_wait_ms (a write run again: the audit record's
// RetryWait, in milliseconds) and llmtool.result.bytes; a failed call's
// span has status Error with the model's message, and error.type the
// Kind's name. The middleware and the call path run under it; while it is
// recording, the call path adds the child spans llmtool.lock_wait (a
// write's wait for its transaction: SQLite's write lock, a connection,
// BEGIN), llmtool.guards (entity checks and guards), llmtool.handler and
// llmtool.commit, again for each run of a write that lost to other writes
// and ran again (see Options.RetryFor), which a "retry" event on the
// call's span marks.
func (r *Registry) Invoke(ctx context.Context, call Call) Result {
	start := time.Now()
	name, kind := call.target()
	req := Request{Call: call, reg: r}
	var e *entry
	var err error
	if kind == kindResource {
		e, req.args, err = r.findResource(ctx, call.Resource) // resource.go
	} else {
		e, err = r.findKind(ctx, name, kind)
	}
	var span trace.Span
	if r.tel.tracer != nil {
		ctx, span = r.startSpan(ctx, start, &call, e, name, kind) // telemetry.go
	}
	var res Result
	var module string
	var t *Tool
	write := false
	if err != nil {
		res = r.failure(name, err)
	} else {
		t = e.tool
		req.entry, req.Spec = e, &t.spec
		req.Principal, req.Tenant = PrincipalFrom(ctx), TenantFrom(ctx)
		name, module, write = req.Spec.Name, req.Spec.Module, !req.Spec.ReadOnly
		res = r.invokeChain(r.withAuditStart(ctx, start), &req)
	}
	rec := audit.Record{
		Time: start, Tool: name, Module: module, Principal: principalID(ctx), Tenant: TenantFrom(ctx),
		Outcome: outcome(res.Err, req.refused), Duration: time.Since(start), Write: write, Committed: req.committed,
		Attempts: req.attempts, RetryWait: req.retryWait, Approval: approvalOutcome(previewModeOf(req.preview), res.Err),
	}
	if res.Changeset != nil && req.committed {
		rec.Changeset = res.Changeset.ID
	}
	r.audit(ctx, rec)
	if span != nil || r.tel.m != nil {
		r.endCall(ctx, span, t, &rec, &res) // telemetry.go
	}
	return res
}

// invokeChain runs the middleware and the call path, turning a
// middleware's panic into a failed Result as a handler's is.
func (r *Registry) invokeChain(ctx context.Context, req *Request) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			res = r.failure(req.Spec.Name, &panicError{Tool: req.Spec.Name, Value: p, Stack: debug.Stack()})
		}
	}()
	if !r.chained {
		return r.call(ctx, req)
	}
	// The middleware gets a copy, so that req, which they may keep, need
	// not live on the heap when there are none.
	h := new(Request)
	*h = *req
	res = r.invoke(ctx, h)
	*req = *h
	return res
}

// call is the registry's own call path, the innermost InvokeFunc: policy,
// arguments, approval, transaction, and the Result.
func (r *Registry) call(ctx context.Context, req *Request) Result {
	var res Result
	req.refused, req.committed, req.attempts, req.retryWait, req.preview = false, false, 0, 0, nil
	call, e := req.Call, req.entry
	if call.Resource != "" {
		call.Args = req.args
	}
	if call.OutputBudget > 0 {
		ctx = context.WithValue(ctx, budgetKey{}, call.OutputBudget)
	}
	t := e.tool
	ctx, err := r.admit(ctx, e) // policy.go
	req.refused = err != nil
	var (
		args []byte
		fill uint64 // top-level defaults to set on In
	)
	if err == nil {
		args, fill, err = t.prepare(call.Args)
	}
	var preview *previewState
	if err == nil {
		preview, err = r.prepareApproval(ctx, t, &call, args) // approval.go
		req.preview = preview
	}
	if err == nil {
		pa := prepared{fill: fill, preview: preview, traced: r.traced(ctx), conversation: call.Conversation, locale: call.Locale}
		res.JSON, req.committed, err = r.exec(ctx, t, args, &pa, &res)
		if err == nil && preview != nil && preview.mode == previewRequest {
			// A second run, rolled back as the first, tells the values
			// the tool makes afresh (approval_fresh.go).
			preview.first = preview.preview
			res.JSON, _, err = r.exec(ctx, t, args, &pa, &res)
		}
		req.attempts, req.retryWait = pa.attempts, pa.retryWait
		if preview != nil && preview.held && !req.committed {
			r.approve.release(preview.nonce) // the approval was not used
		}
		if err == nil && preview != nil {
			err = r.previewResult(ctx, t, args, preview, call.Locale, &res)
		}
		if req.committed && res.Changeset != nil {
			res.Changeset = r.changeWords(call.Locale).set(res.Changeset) // words.go
		}
		if req.committed && len(t.updates) > 0 {
			r.updated(t, args, res.JSON) // updates.go
		}
	}
	if err == nil && t.kind == kindPrompt {
		var po promptOut
		if err = json.Unmarshal(res.JSON, &po); err == nil {
			res.Messages = po.Messages
		}
	}
	if err != nil {
		asked, pv := res.Approval, res.Preview
		res = r.failure(t.spec.Name, err)
		res.Approval, res.Preview = asked, pv
	}
	return res
}

func (r *Registry) failure(tool string, err error) Result {
	if KindOf(err) == KindInternal {
		var p *panicError
		if errors.As(err, &p) {
			r.logger().Error("llmtool: tool panicked", "tool", tool, "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
		} else if errors.Is(err, callinfo.ErrInputRequired) {
			r.logger().Debug("llmtool: tool asked its client for input", "tool", tool, "err", err)
		} else {
			r.logger().Error("llmtool: tool failed", "tool", tool, "err", err)
		}
	}
	msg := render(tool, err)
	return Result{JSON: errorJSON(msg), IsError: true, Err: err, msg: msg}
}

// run calls the tool's handler, turning a panic into a *panicError and
// validating the output when asked to.
func (r *Registry) run(t *Tool, c *ReadCtx, args []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &panicError{Tool: t.spec.Name, Value: p, Stack: debug.Stack()}
		}
	}()
	out, err = t.run(c, args)
	// A result over its budget is cut here, inside the transaction, so
	// that one that cannot be cut rolls a write back (budget.go).
	if err == nil && t.kind == kindTool && !t.spec.Rich {
		if b := r.outputBudget(c.parent, t); b > 0 && len(out) > b {
			out, err = t.fit(c, args, out, b)
		}
	}
	if err == nil && r.validateOutput.Load() {
		err = t.validateOutput(out)
	}
	return out, err
}
