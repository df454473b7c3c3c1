// Package mcpadapter serves a llmtool.Registry over the Model Context
// Protocol, with github.com/mark3labs/mcp-go: over stdio (ServeStdio), over
// streamable HTTP (Handler) and over stateless streamable HTTP for replicas
// behind a load balancer (StatelessHandler).
//
// The adapter translates wire formats only. tools/list is the registry's
// precomputed specs for the caller's scope and principal, converted once per
// spec; every tools/call goes through Registry.Invoke:
//
//   - a success returns structuredContent with the tool's JSON, and the same
//     JSON as a text block (for a large result and a client that reads
//     structuredContent, a one-sentence pointer to it: Options.TextCopyLimit);
//   - a tool whose Out is llmtool.Rich returns its content blocks (text,
//     image, audio, embedded resources);
//   - a failed call returns isError with the message the model should read,
//     the same text the chat adapter sends;
//   - a tool the caller may not call (switched off, write tools off for
//     the scope, refused by Options.Authorize or by an entity's
//     permission) returns isError with the registry's sentence, such as
//     how to enable writes; it is not listed, but a call reaches
//     Registry.Invoke, on every transport and revision;
//   - a tool the registry does not know is a JSON-RPC invalid-params error
//     (-32602), as the MCP specification prescribes, whose message is the
//     registry's sentence ("Unknown tool ... Did you mean ...?").
//
// Resources, resource templates and prompts are the registry's too
// (llmtool.Resource, llmtool.Prompt): resources/list, resources/templates/list
// and prompts/list show what the caller may use; resources/read and
// prompts/get go through Registry.Invoke, so entity guards and the policy
// apply, and a refusal is the request's error with the registry's sentence;
// completion/complete answers from Registry.Complete (enum values, entity
// IDs). A session subscribed to a resource (resources/subscribe, or a
// subscriptions/listen filter at 2026-07-28) gets
// notifications/resources/updated when a write tool that declared
// llmtool.Changes commits a change to it.
//
// Handlers report progress and log lines with ReadCtx.Progress and
// ReadCtx.Log (notifications/progress when the client sent a progress token,
// notifications/message at or above the level the client asked for: with
// logging/setLevel, or at 2026-07-28 in each request's _meta, without
// which a request gets no log notifications), and a tool can ask the client
// for a completion, for user input or for its roots with ask.Sample,
// ask.Elicit and ask.Roots.
//
// # Asking the client
//
// The adapter asks by running the handler again (an ask.Rerunner; see
// package ask for what a handler sees). A run that asks something not yet
// answered fails, so its transaction rolls back, and the call ends with an
// input-required result (SEP-2322, protocol revision 2026-07-28): the
// requests, under their keys, and a requestState. The client answers and
// calls again with inputResponses and the requestState; the handler runs
// again, in a new transaction, and gets the answers. Clients of earlier
// revisions are asked within the one tools/call: mcp-go sends them
// elicitation/create, sampling/createMessage and roots/list requests and
// runs the handler again with their answers. No transaction is open while
// a person answers, so write tools may ask too. A request the client did
// not declare the capability for (in initialize, or at 2026-07-28 in the
// request's _meta) gets ask.ErrUnsupported instead.
//
// The requestState carries the answers of the earlier rounds. It is signed
// with HMAC-SHA256 (Options.RequestStateKey) and bound to the tool, the
// arguments, the principal and the scope; it expires after
// Options.RequestStateTTL, and each one is good for one retry. A retry
// whose state fails any of this gets a JSON-RPC error (-32603, as mcp-go
// reports handler errors) with a sentence saying why and to call again
// without requestState, and the tool does not run. A retry without
// requestState is a first round: its inputResponses answer the requests
// of the first run by key.
//
// # Approval
//
// A call that needs a person's approval (llmtool.NeedsApproval, or
// Registry.Tenants().SetApproval for the scope) comes back from Registry.Invoke with
// an approval.Request: the registry ran it, previewed it and rolled
// it back. The adapter then asks the client's user, with the machinery
// above: an elicitation under the key "llmtool-approval" whose message is
// the preview (Preview.String(), and the result when it is short) and
// whose form is one boolean, "approve", unticked by default. The approval
// token travels in the sealed requestState, never to the model; the retry
// that brings the answer invokes the call with llmtool.Call.Approval at
// once, so a call runs twice in all: the preview and the commit. Accepting
// with approve true approves; approve false, a decline or a cancel denies
// (the token is spent, nothing is saved). If the data changed since the
// preview, the registry asks again and so does the adapter, with the new
// preview, in a new round. A client that cannot ask its user (it declared
// no elicitation, or it is a stateless request of a revision before
// 2026-07-28) gets isError with the registry's sentence, the preview and a
// sentence saying that this client cannot ask for approval and what the
// user can do; nothing the model sends can approve. The audit record's
// Approval says requested, approved, denied, changed or refused. MCP has
// no dry-run request, so llmtool.Call.DryRun is left to hosts that call
// Invoke (and to the chat adapter).
//
// The HTTP handlers authenticate every request with the Authenticator, pick
// the scope with the ScopeFunc, refuse DNS-rebinding requests on loopback
// listeners and bound request bodies. When the registry reports that a
// scope's callable tools changed, sessions of that scope receive
// notifications/tools/list_changed.
//
// # Streams
//
// In the revisions that have resumability (2025-03-26 through 2025-11-25)
// every SSE event of a session carries an ID, and an event store keeps the
// recent events of each stream (Options.ReplayEvents, Options.ReplayAge): a
// GET with Last-Event-ID gets the events after it on its stream, then the
// rest of the stream, a tools/call's result included; an ID whose
// following events are no longer kept, or that names no event of the
// session, gets 400 with a JSON-RPC error saying so. At 2025-11-25 a
// call's stream opens with a priming event (an ID, a retry field, no
// data), and a tool may close its connection with CloseStream while it
// runs on (SEP-1699). A call on a resumable stream does not end when its
// connection does; notifications/cancelled or the session's end stops it.
// Under 2026-07-28 notifications go on subscriptions/listen streams only,
// as their filters ask: tools/list_changed for the stream's scope,
// prompts/list_changed and resources/list_changed when the registry's
// modules change, resources/updated for the subscribed URIs (listen.go).
//
// # Messages on the HTTP wire
//
// A body that is not a valid JSON-RPC message gets 400 Bad Request and an
// Invalid Request error (-32600), and nothing runs: a request's id must be
// a string or an integer (not an object, array, boolean, null or fraction),
// a message needs a method or, as a response, an id with exactly one of
// result and error. The error's id is null when the id itself is invalid.
//
// A JSON-RPC batch (a JSON array) is served in protocol revision
// 2025-03-26, the only one that has batches: its messages run in turn, and
// the answer is a JSON array of the responses to its requests (202
// Accepted, with no body, when it held only notifications and responses).
// initialize must not be batched. In other revisions (2024-11-05, and
// 2025-06-18 onwards, which removed batches) a batch gets 400 and an
// Invalid Request error saying so. A session's revision is the one its
// initialize negotiated; without a session it is the Mcp-Protocol-Version
// header's, or 2025-03-26 without one, as the specification prescribes.
//
// # Sessions
//
// Handler keeps at most 1000 sessions open (Options.MaxSessions), at most
// 100 per principal (Options.MaxSessionsPerPrincipal), and ends a session
// after 30 minutes without a request while none of its calls or GET streams
// is open (Options.SessionIdleTimeout). An initialize beyond a limit gets 503 Service
// Unavailable with a JSON-RPC error (-32000) that says the limit and what
// to do: a 5xx, because MCP clients take a 4xx answer to initialize for a
// server of the older HTTP+SSE transport, and because the condition passes
// as sessions end. A request naming a session that ended (idle, or by
// DELETE) or never existed gets 404 Not Found, which tells the client to
// initialize a new session; the memory of an ended session is released,
// in the adapter and in mcp-go.
//
// # Protocol revisions
//
// The adapter speaks the session-oriented revisions 2024-11-05 through
// 2025-11-25 and the stateless core of 2026-07-28, from the same handlers
// (Handler, StatelessHandler, ServeStdio): the client's revision decides,
// per request. A request of 2026-07-28 (its Mcp-Protocol-Version header or
// its _meta says so) has no session: it is authenticated, scoped, bounded
// and checked against DNS rebinding like any other, then served by
// mcp-go's implementation of the revision: server/discover instead of
// initialize, the Mcp-Protocol-Version, Mcp-Method and Mcp-Name header
// rules (-32020, 400), client capabilities, identity and log level in
// each request's _meta (no log notifications without a level), resultType
// and caching hints on results, subscriptions/listen, and 404 with -32601
// for the methods the revision removed (initialize, ping,
// logging/setLevel, resources/subscribe). A batch, GET or DELETE of
// 2026-07-28 is refused (400, 405). A tool that asks the client for a
// completion or for input under 2026-07-28 without the client declaring
// sampling or elicitation in _meta gets a
// MissingRequiredClientCapabilityError (-32021, HTTP 400) naming the
// capability.
//
// # Tracing and metrics
//
// A call's span is the registry's (llmtool.Options.TracerProvider; see
// Registry.Invoke). The adapter makes it continue the client's trace: the
// W3C trace context (traceparent, tracestate) of the request's
// params._meta, for tools/call, resources/read and prompts/get, or else of
// the HTTP request's headers, unless the request's context already has a
// span (the host's HTTP instrumentation). Options.MeterProvider counts the
// open sessions (llmtool.mcp.sessions).
//
// # Configuration
//
// New takes one *Options, nil for the defaults; every field says its
// default. mcp-go's own types stay inside the adapter: serve a Server with
// ServeStdio, Handler or StatelessHandler, and wrap Handler with ordinary
// net/http middleware (CORS, request logging, context values) for what the
// Options do not cover.
package mcpadapter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/metric"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/internal/callinfo"
)

// protocolVersions returns the revisions the adapter serves, newest first:
// the stateless core of 2026-07-28, and those with sessions,
// server-to-client requests and logging/setLevel.
func protocolVersions() []string {
	return []string{
		mcp.ProtocolVersion20260728,
		mcp.ProtocolVersion20251125,
		mcp.ProtocolVersion20250618,
		mcp.ProtocolVersion20250326,
		mcp.ProtocolVersion20241105,
	}
}

// Server is a registry projected into an MCP server. Create one with New
// and serve it with ServeStdio, Handler or StatelessHandler. It is safe for
// concurrent use.
type Server struct {
	reg *llmtool.Registry
	cfg config
	mcp *server.MCPServer

	mu    sync.RWMutex
	tools map[string]*toolEntry // registered with mcp (the tools called), by name

	listings    listings     // the callers' tools/list listings (listing.go)
	lists       sync.Map     // context.Context of a tools/list being served → *listRequest
	hostFilters bool         // the host added mcp-go tool filters (Options.ServerOptions)
	listHooks   int          // the AfterListTools hooks at New, afterList the last (listing.go)
	preEncoded  atomic.Int64 // tools/list pages answered with pre-encoded tools (listing.go)

	sessions sync.Map // session ID → *sessionInfo
	levels   sync.Map // session ID → mcp.LoggingLevel from logging/setLevel
	pending  sync.Map // request ID → *clientRequest sent during HTTP calls
	calls    sync.Map // context.Context of a tools/call being served → *callMark
	nextID   atomic.Int64
	spent    spentStates // requestStates already used (mrtr.go)

	counts    sessionCounts    // open sessions, for the limits
	now       func() time.Time // the clock of idle timeouts
	sweepOnce sync.Once
	closed    chan struct{} // closed by Close; stops the sweeper
	closeOnce sync.Once

	unsubscribe func()
	extras      extras // resources and prompts registered with mcp-go (resources.go)

	handlers *handlerPool // the goroutines of HTTP tools/call handlers (handlers.go)
	primers  sync.Pool    // stopped *time.Timer of the pumps of HTTP tools/calls (httpcall.go)
	bodies   sync.Pool    // *[]byte buffers that HTTP request bodies are read into (http.go)
	events   *eventStore  // the events of Handler's SSE streams; nil: not resumable (eventstore.go)
	streams  sync.Map     // store ID → *callStream of a tools/call in progress (streams.go)
	listens  sync.Map     // mcp-go session → *listenInfo of an open subscriptions/listen (listen.go)

	openSessions metric.Int64UpDownCounter // llmtool.mcp.sessions; nil without Options.MeterProvider (tracing.go)
}

// toolEntry is a spec converted once into its MCP form.
type toolEntry struct {
	spec *llmtool.Spec
	tool mcp.Tool
}

// New returns an MCP server for reg's tools. opts, nil for the defaults,
// name the server and configure who the calls run as (Options.Principal
// and Options.Scope, or per HTTP request Options.Authenticator and
// Options.ScopeFunc), the HTTP checks and the session limits.
func New(reg *llmtool.Registry, opts *Options) *Server {
	cfg := newConfig(opts)
	s := &Server{reg: reg, cfg: cfg, tools: make(map[string]*toolEntry), now: time.Now, closed: make(chan struct{})}
	s.handlers = newHandlerPool(s.closed)
	if cfg.replayEvents > 0 {
		s.events = newEventStore(cfg.replayEvents, cfg.replayAge)
	}
	s.initMetrics()

	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(s.onRegister)
	hooks.AddOnUnregisterSession(s.onUnregister)
	hooks.AddAfterInitialize(s.afterInitialize)
	hooks.AddAfterSetLevel(s.afterSetLevel)
	hooks.AddBeforeListTools(s.beforeList)
	hooks.AddBeforeCallTool(s.beforeCall)
	// A subscriptions/listen stream (revision 2026-07-28) that nothing
	// was subscribed on ends at once: its acknowledgement must be on the
	// wire before its response (see callNotes.awaitEvents).
	hooks.AddAfterSubscriptionsListen(func(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		if n := notesFrom(ctx); n != nil {
			n.sent.Add(1)
			n.awaitEvents(ctx)
		}
	})
	hooks.AddAfterCallTool(func(ctx context.Context, _ any, _ *mcp.CallToolRequest, _ any) { s.unmarkCall(ctx) })
	hooks.AddOnError(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any, _ error) {
		switch method {
		case mcp.MethodToolsCall:
			s.unmarkCall(ctx)
		case mcp.MethodToolsList:
			s.lists.Delete(ctx)
		}
	})

	sopts := []server.ServerOption{
		// listChanged is advertised by afterInitialize and sent per scope by
		// scopeChanged; mcp-go itself must not broadcast it whenever the
		// adapter registers a tool it meets for the first time.
		server.WithToolCapabilities(false),
		server.WithLogging(),
		server.WithHooks(hooks),
		server.WithToolFilter(s.filter),
		server.WithPaginationLimit(cfg.pageSize),
	}
	sopts = append(sopts, s.extraOptions(hooks)...)
	s.listenOptions(hooks)
	if cfg.instructions != "" {
		sopts = append(sopts, server.WithInstructions(cfg.instructions))
	}
	s.mcp = newMCPServer(cfg, hooks, sopts) // hostopts.go
	// afterList runs after every AfterListTools hook registered so far
	// (the adapter's, and the host's of Options.ServerOptions).
	final := s.mcp.GetHooks()
	final.AddAfterListTools(s.afterList)
	s.listHooks = len(final.OnAfterListTools)
	s.hostFilters = countToolFilters(s.mcp) > 1
	unsubscribe, unwatch := reg.Tenants().Subscribe(s.scopeChanged), reg.OnResourceChange(s.resourceChanged)
	s.unsubscribe = func() { unsubscribe(); unwatch() }
	return s
}

// Close stops listening to the registry's changes, stops ending idle
// sessions, and ends the idle goroutines that run HTTP tool calls (a
// goroutine serves one call after another and ends after 10 to 20
// seconds without one). Serving functions return on their own when their
// context ends.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.unsubscribe()
		close(s.closed)
	})
	return nil
}

// callContext gives ctx the configured principal and scope
// (Options.Principal, Options.Scope) when it carries none of its own.
func (s *Server) callContext(ctx context.Context) context.Context {
	if s.cfg.principal != nil && llmtool.PrincipalFrom(ctx) == nil {
		ctx = llmtool.WithPrincipal(ctx, s.cfg.principal)
	}
	if s.cfg.scope != "" && llmtool.ScopeFrom(ctx) == "" {
		ctx = llmtool.WithScope(ctx, s.cfg.scope)
	}
	return ctx
}

// filter keeps the tools the caller's scope and principal may call. mcp-go
// runs it on every listing and on every call (the one tool named). A call
// that beforeCall marked passes at once: Registry.Invoke decides it, so a
// tool the caller may not call answers with the registry's sentence (how
// to enable writes, say), not with mcp-go's "tool not found". A listing
// that beforeList marked gets the requested page of the caller's cached
// listing (listing.go), whatever tools mcp-go has registered.
func (s *Server) filter(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if len(tools) == 1 {
		if m := s.callMark(ctx); m != nil && m.name == tools[0].Name {
			return tools
		}
	}
	if v, ok := s.lists.Load(ctx); ok {
		return s.listPage(ctx, v.(*listRequest))
	}
	ls := s.listed(ctx)
	out := tools[:0]
	for _, t := range tools {
		if ls.has(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// callMark is what beforeCall learned of a tools/call, for the filter and
// the handler that see the same context. The adapter's HTTP call path
// keeps it in the call's run (httpcall.go), found under markKey; other
// calls keep it in Server.calls, by context.
type callMark struct {
	name string // "" while unmarked
	id   any    // the JSON-RPC request ID
}

// markKey is the context key of a call's own callMark.
type markKey struct{}

// markCall records m for the call of ctx.
func (s *Server) markCall(ctx context.Context, m callMark) {
	if slot, ok := ctx.Value(markKey{}).(*callMark); ok {
		*slot = m
		return
	}
	p := new(callMark) // m stays on the stack when the run has a slot
	*p = m
	s.calls.Store(ctx, p)
}

// callMark returns the mark of the call of ctx, nil if it has none.
func (s *Server) callMark(ctx context.Context) *callMark {
	if slot, ok := ctx.Value(markKey{}).(*callMark); ok {
		if slot.name == "" {
			return nil
		}
		return slot
	}
	if v, ok := s.calls.Load(ctx); ok {
		return v.(*callMark)
	}
	return nil
}

// unmarkCall forgets the mark of the call of ctx, which ended.
func (s *Server) unmarkCall(ctx context.Context) {
	if slot, ok := ctx.Value(markKey{}).(*callMark); ok {
		*slot = callMark{}
		return
	}
	s.calls.Delete(ctx)
}

// beforeCall runs before mcp-go looks the called tool up. It registers the
// tool with mcp-go if the registry knows it and no call has registered it
// yet (listings do not register tools: see listing.go),
// and marks the call so that the filter lets it reach the handler and
// Registry.Invoke, which refuses a tool the caller may not call with its
// own sentence. A tool the registry does not know still goes through
// Registry.Invoke, so that every call has its audit record, and mcp-go's
// invalid-params error for it carries the registry's sentence (see
// callNotes).
func (s *Server) beforeCall(ctx context.Context, id any, req *mcp.CallToolRequest) {
	cctx := s.callContext(ctx)
	name := req.Params.Name
	spec, known := s.reg.Tool(cctx, name)
	if !known {
		res := s.reg.Invoke(withMetaTrace(cctx, req.Params.Meta), llmtool.Call{Tool: name, Args: req.Params.RawArguments})
		if n := notesFrom(ctx); n != nil {
			n.noteUnknown(id, res.Text())
		}
		return
	}
	s.mu.RLock()
	e := s.tools[name]
	s.mu.RUnlock()
	if e == nil || e.spec != spec {
		s.register([]*llmtool.Spec{spec})
	}
	s.markCall(ctx, callMark{name: name, id: id})
}

// register converts and registers the specs mcp-go does not have yet.
func (s *Server) register(specs []*llmtool.Spec) {
	s.mu.RLock()
	missing := false
	for _, sp := range specs {
		if e := s.tools[sp.Name]; e == nil || e.spec != sp {
			missing = true
			break
		}
	}
	s.mu.RUnlock()
	if !missing {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var add []server.ServerTool
	for _, sp := range specs {
		if e := s.tools[sp.Name]; e != nil && e.spec == sp {
			continue
		}
		e := &toolEntry{spec: sp, tool: convertSpec(sp)}
		s.tools[sp.Name] = e
		add = append(add, server.ServerTool{Tool: e.tool, Handler: s.handler(e)})
	}
	if len(add) > 0 {
		s.mcp.AddTools(add...)
	}
}

// Definition returns a tool's entry in a tools/list answer, as the server
// lists it: name, title, description, the input schema, the output schema
// (none for a tool with Rich output, which answers with content blocks),
// and the four annotations, all explicit. It is for applications that
// measure or publish the listing (package cost counts its tokens).
func Definition(spec *llmtool.Spec) (json.RawMessage, error) {
	b, err := json.Marshal(convertSpec(spec))
	if err != nil {
		return nil, fmt.Errorf("mcpadapter: tool %q: encoding its listing entry: %w", spec.Name, err)
	}
	return b, nil
}

// convertSpec builds a tool's MCP listing: title, schemas verbatim, and all
// four annotations explicit.
func convertSpec(sp *llmtool.Spec) mcp.Tool {
	t := mcp.Tool{
		Name:           sp.Name,
		Title:          sp.FriendlyName,
		Description:    sp.Description,
		RawInputSchema: sp.InputSchema,
		Annotations: mcp.ToolAnnotation{
			Title:           sp.FriendlyName,
			ReadOnlyHint:    mcp.ToBoolPtr(sp.ReadOnly),
			DestructiveHint: mcp.ToBoolPtr(sp.Destructive),
			IdempotentHint:  mcp.ToBoolPtr(sp.Idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(sp.OpenWorld),
		},
	}
	// A rich tool answers with content blocks, not structured content, so it
	// declares no output schema (which would oblige structuredContent).
	if !sp.Rich {
		t.RawOutputSchema = sp.OutputSchema
	}
	return t
}

// handler returns the mcp-go handler of one tool: every call goes through
// Registry.Invoke. A call whose handler asked the client (ask.Elicit,
// ask.Sample, ask.Roots) and had no answer yet, or that needs the user's
// approval (approval.go), ends with an input-required result (mrtr.go); a
// retry brings the answers and a requestState, which is verified first: a
// refused one is a JSON-RPC error, and the tool does not run.
func (s *Server) handler(e *toolEntry) server.ToolHandlerFunc {
	name, rich := e.spec.Name, e.spec.Rich
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mctx := ctx                                              // mcp-go's, which the call's mark is keyed by
		ctx = withMetaTrace(s.callContext(ctx), req.Params.Meta) // tracing.go
		notes := notesFrom(mctx)
		args := req.Params.RawArguments
		if args == nil && req.Params.Arguments != nil {
			b, err := json.Marshal(req.Params.Arguments)
			if err != nil {
				return nil, err
			}
			args = b
		}
		cp := new(callPeer)
		if err := s.initPeer(ctx, cp, name, name, args, req.Params.MultiRoundTripParams); err != nil {
			return nil, err
		}
		p := &cp.peer
		if m := req.Params.Meta; m != nil {
			p.token = m.ProgressToken
		}
		w := &cp.watch
		w.peer = p
		cp.rep = countingReporter{peer: p, notes: notes}
		// p reports progress and logs, and asks the client
		ctx = ask.With(callinfo.WithReporter(ctx, &cp.rep), w)
		// A retry that answers the approval question commits, or is denied,
		// at once (approval.go).
		answer := p.round.approvalAnswer()
		res := s.reg.Invoke(ctx, llmtool.Call{Tool: name, Args: args, Approval: answer, OutputBudget: s.cfg.budget})
		notes.awaitEvents(ctx)
		if res.IsError && errors.Is(res.Err, ask.ErrInputRequired) {
			return s.inputRequired(ctx, name, args, p.round)
		}
		if res.Approval != nil && errors.Is(res.Err, approval.ErrRequired) {
			if !canElicit(ctx) {
				return cannotAsk(name, res), nil
			}
			if err := p.round.askApproval(name, res.Approval, answer != nil); err != nil {
				return nil, err
			}
			return s.inputRequired(ctx, name, args, p.round)
		}
		if capability := w.missing(); capability != "" && res.IsError && errors.Is(res.Err, ask.ErrUnsupported) {
			// Revision 2026-07-28: a request that needs a capability its
			// _meta does not declare is refused with -32021, which
			// callNotes writes in place of mcp-go's internal error.
			if m := s.callMark(mctx); m != nil && notes != nil {
				notes.noteMissing(m.id, capability)
				return nil, errors.New(res.Text())
			}
		}
		return callResult(res, rich, s.textLimit(mctx)), nil
	}
}

// textLimit is the size over which a result's text copy is a pointer to
// structuredContent for the client of ctx: Options.TextCopyLimit for
// revisions with structuredContent, 0 (never) for others.
func (s *Server) textLimit(ctx context.Context) int {
	if s.cfg.textLimit == 0 || server.RequestProtocolVersion(ctx) < mcp.ProtocolVersion20250618 {
		return 0 // revisions compare as dates; "" (unknown) is earlier
	}
	return s.cfg.textLimit
}

// callResult renders a registry result as an MCP tool result; a structured
// result longer than textLimit bytes (0: no limit) gets a pointer to
// structuredContent as its text (textcopy.go).
func callResult(res llmtool.Result, rich bool, textLimit int) *mcp.CallToolResult {
	if res.IsError {
		return &mcp.CallToolResult{
			IsError: true,
			Content: []mcp.Content{mcp.TextContent{Type: "text", Text: res.Text()}},
		}
	}
	if rich || res.Content != nil {
		content := make([]mcp.Content, 0, len(res.Content))
		for _, c := range res.Content {
			content = append(content, contentBlock(c))
		}
		return &mcp.CallToolResult{Content: content}
	}
	text := string(res.JSON)
	if textLimit > 0 && len(res.JSON) > textLimit {
		text = structuredPointer(res.JSON)
	}
	return &mcp.CallToolResult{
		Content:              []mcp.Content{mcp.TextContent{Type: "text", Text: text}},
		RawStructuredContent: res.JSON,
	}
}

// contentBlock converts one part of a rich result.
func contentBlock(c llmtool.Content) mcp.Content {
	switch c.Type {
	case "image":
		return mcp.ImageContent{Type: "image", Data: base64.StdEncoding.EncodeToString(c.Data), MIMEType: c.MIMEType}
	case "audio":
		return mcp.AudioContent{Type: "audio", Data: base64.StdEncoding.EncodeToString(c.Data), MIMEType: c.MIMEType}
	case "resource":
		if c.Data != nil {
			return mcp.EmbeddedResource{Type: "resource", Resource: mcp.BlobResourceContents{
				URI: c.URI, MIMEType: c.MIMEType, Blob: base64.StdEncoding.EncodeToString(c.Data)}}
		}
		return mcp.EmbeddedResource{Type: "resource", Resource: mcp.TextResourceContents{
			URI: c.URI, MIMEType: c.MIMEType, Text: c.Text}}
	}
	return mcp.TextContent{Type: "text", Text: c.Text}
}

// scopeChanged tells the sessions of scope ("" for every session) that
// their tool list changed.
func (s *Server) scopeChanged(scope string) {
	s.listings.reset()
	s.sessions.Range(func(_, v any) bool {
		info := v.(*sessionInfo)
		if scope == "" || info.scope == scope {
			if err := s.mcp.SendNotificationToSpecificClient(info.id, string(mcp.MethodNotificationToolsListChanged), nil); err != nil {
				s.cfg.logger.Debug("mcpadapter: tools/list_changed not delivered", "session", info.id, "err", err)
			}
		}
		return true
	})
	s.notifyListens(scope)
}

// onRegister records mcp-go's session: in the entry the session table made
// for it (HTTP), or in a new one (stdio).
func (s *Server) onRegister(ctx context.Context, cs server.ClientSession) {
	id := cs.SessionID()
	if id == "" {
		return // a stateless request's session
	}
	if v, ok := s.sessions.Load(id); ok {
		v.(*sessionInfo).setClientSession(cs)
		return
	}
	if _, ok := ctx.Value(slotKey{}).(*sessionSlot); ok {
		return // an HTTP session already ended: the handler ends mcp-go's too
	}
	ctx = s.callContext(ctx)
	info := &sessionInfo{id: id, scope: llmtool.ScopeFrom(ctx), principal: principalID(llmtool.PrincipalFrom(ctx))}
	info.setClientSession(cs)
	s.sessions.Store(id, info)
	s.countSession(1)
}

func (s *Server) onUnregister(_ context.Context, cs server.ClientSession) {
	s.removeSession(cs.SessionID())
}

// afterInitialize advertises tools.listChanged: the adapter sends it
// itself, per scope.
func (s *Server) afterInitialize(_ context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
	res.Capabilities.Tools = &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{ListChanged: true}
}

// afterSetLevel remembers the session's logging level.
func (s *Server) afterSetLevel(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		s.levels.Store(cs.SessionID(), req.Params.Level)
	}
}

// logLevel returns the minimum level of log notifications for the request
// in ctx: under protocol revision 2026-07-28 the one its _meta names (none
// without one: the request then gets no log notifications), otherwise the
// one the session set with logging/setLevel, or the configured default.
func (s *Server) logLevel(ctx context.Context) mcp.LoggingLevel {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		if v, ok := s.levels.Load(cs.SessionID()); ok {
			return v.(mcp.LoggingLevel)
		}
	}
	return s.cfg.logLevel
}

func principalID(p *llmtool.Principal) string {
	if p == nil {
		return ""
	}
	return p.ID
}
