// Package mcpadapter serves a llmtool.Registry over the Model Context
// Protocol, with github.com/mark3labs/mcp-go: over stdio (ServeStdio), over
// streamable HTTP with sessions (Handler) and over stateless streamable HTTP
// for replicas behind a load balancer (StatelessHandler). mcp-go does the
// transports, the sessions and the protocol revisions (2024-11-05 through
// 2025-11-25 with initialize and sessions, and the stateless core of
// 2026-07-28); the adapter translates between MCP and the registry.
//
// tools/list is the registry's listing for the caller's tenant and
// principal, converted once per spec and paginated (Options.PageSize);
// every tools/call goes through Registry.Invoke. A success returns
// structuredContent with the tool's JSON and the same JSON as a text block
// (for a large result, a pointer to it: Options.TextCopyLimit), or a Rich
// tool's content blocks; a failure returns isError with the message the
// model should read, the same text the chat adapter sends. A tool the
// caller may not call (switched off, write tools off for the tenant, refused
// by Options.Authorize or by an entity's permission) is not listed, but a
// call reaches Registry.Invoke and returns isError with the registry's
// sentence, such as how to enable writes. A tool the registry does not
// know is a JSON-RPC invalid-params error (-32602) whose message is the
// registry's sentence ("Unknown tool ... Did you mean ...?").
//
// Resources, resource templates and prompts are the registry's too
// (llmtool.Resource, llmtool.Prompt): the listings show what the caller may
// use; resources/read and prompts/get go through Registry.Invoke, so entity
// guards and the policy apply. A refusal is the request's JSON-RPC error,
// with the registry's sentence as its message, its kind in data.kind, and a
// code that says what it is: "resource not found" (-32002, or -32602 under
// 2026-07-28, with data.uri) for what does not exist, -32602 for malformed
// arguments, -32003 for a refusal by policy, protection or authorization.
// completion/complete answers from Registry.Complete.
//
// Handlers report progress and log lines with ReadCtx.Progress and
// ReadCtx.Log: notifications/progress when the client sent a progress
// token; notifications/message at or above the level the client asked for,
// with logging/setLevel or, at 2026-07-28, in each request's _meta (none
// without one).
//
// # Notifications the client did not ask for
//
// Every server-initiated message follows its client's revision. Before
// 2026-07-28 a session gets notifications/tools/list_changed when its
// tenant's callable tools change, prompts/list_changed and
// resources/list_changed when the registry's modules or kill switches
// change, and resources/updated for the URIs it subscribed to. A client of
// 2026-07-28, over HTTP or stdio, gets them only on a subscriptions/listen
// stream, only the kinds its filter asked for.
//
// # Asking the client
//
// ask.Sample, ask.Elicit and ask.Roots run the handler again (an
// ask.Rerunner): a run that asks something not yet answered fails, so its
// transaction rolls back, and the call ends with an input-required result
// (SEP-2322): the requests, under their keys, and a requestState. The
// client calls again with the answers and the state, and the handler runs
// again in a new transaction. mcp-go asks clients of earlier revisions
// within the one tools/call (elicitation/create, sampling/createMessage,
// roots/list) and runs the handler again with their answers. So no
// transaction is open while a person answers, and write tools may ask. A
// request whose client did not declare the capability gets
// ask.ErrUnsupported, and at 2026-07-28 a call that fails for want of it is
// a MissingRequiredClientCapabilityError (-32021, HTTP 400).
//
// The requestState carries the answers of the earlier rounds, signed with
// HMAC-SHA256 (Options.RequestStateKey), bound to the tool, the arguments,
// the principal and the tenant, expiring (Options.RequestStateTTL) and good
// for one retry. A retry whose state fails any of this gets a JSON-RPC
// invalid-params error (-32602) saying why, and the tool does not run.
//
// # Approval
//
// A call that needs a person's approval (llmtool.NeedsApproval,
// Tenants().SetApproval) comes back from Registry.Invoke previewed and
// rolled back. The adapter asks the client's user with an elicitation
// under the key "llmtool-approval": the preview, and one boolean,
// "approve", unticked by default. The token travels in the sealed
// requestState, never to the model, and the retry invokes the call with
// llmtool.Call.Approval: an approved call runs twice, the preview and the
// commit. Only approve true approves; anything else (approve false, a
// decline, a cancel, an answer the adapter cannot read, such as an accept
// with empty or missing content) denies, once: nothing is saved and the
// model reads that the user denied the change. If the data changed since
// the preview, the question is asked again with the new preview. A client
// that cannot ask its user gets isError with the registry's sentence, the
// preview and what the user can do; nothing the model sends can approve.
//
// # What is refused, and how
//
// The adapter's checks run before mcp-go sees a request, and each refusal
// says what to do:
//
//   - a JSON-RPC batch (a JSON array), at any revision, 2025-03-26
//     included: HTTP 400, -32600 "Batch requests are not supported by this
//     server; send one JSON-RPC message per request."; nothing runs;
//   - a body over Options.MaxBodyBytes (4 MiB): HTTP 413, -32600, with the
//     limit;
//   - a Host other than loopback's on a loopback listener (DNS rebinding),
//     or an Origin not allowed: HTTP 403 with a sentence naming
//     Options.AllowedHosts or AllowedOrigins;
//   - more than Options.MaxSessions sessions (1,000), or
//     MaxSessionsPerPrincipal (100) for one principal: HTTP 503 with a
//     sentence on what to do;
//   - a session idle for Options.SessionIdleTimeout (30 minutes), ended,
//     or unknown: HTTP 404, so the client initializes anew; its memory is
//     released;
//   - a request in a session another principal or tenant opened: HTTP 403,
//     saying to initialize a session of one's own;
//   - a GET without the Mcp-Session-Id header: HTTP 400, since a GET stream
//     belongs to a session;
//   - a tools/call of a tool the registry does not know: -32602 with the
//     registry's sentence;
//   - a retry of an input-required result whose requestState was changed,
//     expired (Options.RequestStateTTL, 1 hour), already used, or sent by
//     another user or tenant, with other arguments or to another tool:
//     -32602 with a sentence saying which and how to start over; the tool
//     does not run.
//
// # HTTP, tracing, configuration
//
// The HTTP handlers check DNS rebinding on loopback listeners, bound
// request bodies, authenticate (Options.Authenticator: 401 and 403 as an
// OAuth resource server, auth.go), pick the tenant (Options.TenantFunc),
// bound sessions and keep each to the principal and tenant that opened it,
// before mcp-go serves the request. On every transport, a message whose id
// is neither a string nor an integer (an object, an array, a boolean, a
// fractional number), or that has an id but no method, result or error,
// is answered with Invalid Request (-32600; HTTP 400) and never served.
//
// A call's span is the registry's (llmtool.Options.TracerProvider); the
// adapter makes it continue the client's trace, from the W3C trace context
// of the request's params._meta, else of the HTTP headers (unless the
// request's context already has a span). Options.MeterProvider counts the
// open sessions; Options.OnRequest sees every request.
//
// New takes one *Options, nil for the defaults. mcp-go's types stay inside
// the adapter: serve a Server with ServeStdio, Handler or
// StatelessHandler, and wrap Handler with ordinary net/http middleware
// (CORS, request logging) for what the Options do not cover.
package mcpadapter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/metric"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/internal/callinfo"
	"github.com/llmtool/llmtool/internal/mcptool"
	"github.com/llmtool/llmtool/internal/token"
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
	cfg Options // with the defaults applied (withDefaults)
	mcp *server.MCPServer
	now func() time.Time // the clock of requestStates

	// requestStates (mrtr.go): their signer, and those already used.
	states *token.Signer
	spent  token.Spent

	listings listings    // the callers' tools/list listings (listing.go)
	sessions sessions    // sessions, listen streams, subscriptions (notify.go)
	events   *eventStore // the events of Handler's SSE streams; nil: not resumable
	requests sync.Map    // context.Context of a request → its Options.OnRequest end

	mu          sync.Mutex
	transports  []*server.StreamableHTTPServer // made by Handler and StatelessHandler, shut down by Close
	unsubscribe func()
	closeOnce   sync.Once

	openSessions metric.Int64UpDownCounter // llmtool.mcp.sessions; nil without Options.MeterProvider (tracing.go)
}

// New returns an MCP server for reg's tools. opts, nil for the defaults,
// name the server and configure who the calls run as (Options.Principal
// and Options.Tenant, or per HTTP request Options.Authenticator and
// Options.TenantFunc), the HTTP checks and the session limits.
func New(reg *llmtool.Registry, opts *Options) *Server {
	cfg := withDefaults(opts)
	s := &Server{reg: reg, cfg: cfg, now: time.Now, states: token.NewSigner(statePurpose, cfg.RequestStateKey)}
	if cfg.ReplayEvents > 0 {
		s.events = newEventStore(cfg.ReplayEvents, cfg.ReplayAge)
	}
	s.initMetrics()

	hooks := &server.Hooks{}
	s.dispatchHooks(hooks)
	s.notifyHooks(hooks)
	s.errorHooks(hooks)
	s.resourceHooks(hooks)
	if cfg.OnRequest != nil {
		s.requestHooks(hooks)
	}
	s.mcp = server.NewMCPServer(cfg.Name, cfg.Version,
		// mcp-go advertises listChanged, and grants it to
		// subscriptions/listen streams; the adapter registers only its
		// dispatchers (dispatch.go), here, so mcp-go never broadcasts it.
		server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{s}),
		server.WithResourceCompletionProvider(completer{s}),
		server.WithHooks(hooks),
		server.WithPaginationLimit(cfg.PageSize),
		server.WithInstructions(cfg.Instructions), // none when "" (omitted from initialize and discover)
	)
	s.registerDispatchers()
	unsubscribe, unwatch := reg.Tenants().Subscribe(s.tenantChanged), reg.OnResourceUpdate(s.resourceUpdated)
	s.unsubscribe = func() { unsubscribe(); unwatch() }
	return s
}

// Close stops listening to the registry's changes and ends the sessions
// of Handler and their sweepers. Serving functions return on their own
// when their context ends.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.unsubscribe()
		s.mu.Lock()
		transports := s.transports
		s.transports = nil
		s.mu.Unlock()
		for _, t := range transports {
			if err := t.Shutdown(context.Background()); err != nil {
				s.cfg.Logger.Debug("mcpadapter: shutting down an HTTP transport", "err", err)
			}
		}
	})
	return nil
}

// callContext gives ctx the configured principal and tenant
// (Options.Principal, Options.Tenant) when it carries none of its own.
func (s *Server) callContext(ctx context.Context) context.Context {
	if s.cfg.Principal != nil && llmtool.PrincipalFrom(ctx) == nil {
		ctx = llmtool.WithPrincipal(ctx, s.cfg.Principal)
	}
	if s.cfg.Tenant != "" && llmtool.TenantFrom(ctx) == "" {
		ctx = llmtool.WithTenant(ctx, s.cfg.Tenant)
	}
	return ctx
}

// convertSpec builds a tool's MCP listing (internal/mcptool, which
// package cost shares to count its tokens).
func convertSpec(sp *llmtool.Spec) mcp.Tool { return mcptool.Tool(sp) }

// callTool serves every tools/call through Registry.Invoke. A call whose
// handler asked the client (ask.Elicit, ask.Sample, ask.Roots) and had no
// answer yet, or that needs the user's approval (approval.go), ends with
// an input-required result (mrtr.go); a retry brings the answers and a
// requestState, which is verified first: a refused one is a JSON-RPC
// error, and the tool does not run.
func (s *Server) callTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := calledName(req.Params.Meta)
	ctx = withMetaTrace(s.callContext(ctx), req.Params.Meta) // tracing.go
	args := req.Params.RawArguments
	if args == nil && req.Params.Arguments != nil {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, invalidParams("The arguments cannot be encoded: %v.", err)
		}
		args = b
	}
	p, err := s.newPeer(ctx, name, name, args, req.Params.MultiRoundTripParams)
	if err != nil {
		return nil, err
	}
	if m := req.Params.Meta; m != nil {
		p.token = m.ProgressToken
	}
	if ex := exchangeFrom(ctx); ex != nil {
		p.box = ex.box
	}
	// p reports progress and logs, and asks the client
	ctx = ask.With(callinfo.WithReporter(ctx, p), p)
	// A retry that answers the approval question commits, or is denied,
	// at once (approval.go).
	answer := p.round.approvalAnswer()
	res := s.reg.Invoke(ctx, llmtool.Call{Tool: name, Args: args, Approval: answer, OutputBudget: s.cfg.OutputBudget, Conversation: conversation(ctx)})
	p.await(ctx)
	switch {
	case res.IsError && errors.Is(res.Err, llmtool.ErrUnknownTool):
		return nil, &rpcError{code: mcp.INVALID_PARAMS, message: res.Text()}
	case res.IsError && errors.Is(res.Err, ask.ErrInputRequired):
		return s.inputRequired(ctx, name, args, &p.round)
	case res.Approval != nil && errors.Is(res.Err, approval.ErrRequired):
		if !canElicit(ctx) {
			return cannotAsk(name, res), nil
		}
		if err := p.round.askApproval(name, res.Approval, answer != nil); err != nil {
			return nil, err
		}
		return s.inputRequired(ctx, name, args, &p.round)
	case res.IsError && errors.Is(res.Err, ask.ErrUnsupported):
		if capability := p.missing(); capability != "" {
			return nil, missingCapability(capability)
		}
	}
	rich := res.Content != nil
	if !rich && !res.IsError {
		if sp, ok := s.reg.Tool(ctx, name); ok {
			rich = sp.Rich
		}
	}
	return callResult(res, rich, s.textLimit(ctx)), nil
}

// textLimit is the size over which a result's text copy is a pointer to
// structuredContent for the client of ctx: Options.TextCopyLimit for
// revisions with structuredContent, 0 (never) for others.
func (s *Server) textLimit(ctx context.Context) int {
	if s.cfg.TextCopyLimit == 0 || server.RequestProtocolVersion(ctx) < mcp.ProtocolVersion20250618 {
		return 0 // revisions compare as dates; "" (unknown) is earlier
	}
	return s.cfg.TextCopyLimit
}

// callResult renders a registry result as an MCP tool result; a structured
// result longer than textLimit bytes (0: no limit) gets a pointer to
// structuredContent as its text (textcopy.go).
func callResult(res llmtool.Result, rich bool, textLimit int) *mcp.CallToolResult {
	if res.IsError {
		return mcp.NewToolResultError(res.Text())
	}
	if rich {
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

// requestHooks feed Options.OnRequest: its start at the request's first
// hook, its end at OnSuccess or OnError, which mcp-go calls with the same
// context.
func (s *Server) requestHooks(hooks *server.Hooks) {
	hooks.AddBeforeAny(func(ctx context.Context, id any, method mcp.MCPMethod, message any) {
		r := Request{Method: string(method), ID: id}
		switch m := message.(type) {
		case *mcp.CallToolRequest:
			r.Name = m.Params.Name
		case *mcp.GetPromptRequest:
			r.Name = m.Params.Name
		case *mcp.ReadResourceRequest:
			r.Name = m.Params.URI
		}
		if done := s.cfg.OnRequest(ctx, r); done != nil {
			s.requests.Store(ctx, done)
		}
	})
	end := func(ctx context.Context, err error) {
		if v, ok := s.requests.LoadAndDelete(ctx); ok {
			v.(func(error))(err)
		}
	}
	hooks.AddOnSuccess(func(ctx context.Context, _ any, _ mcp.MCPMethod, _ any, _ any) { end(ctx, nil) })
	hooks.AddOnError(func(ctx context.Context, _ any, _ mcp.MCPMethod, _ any, err error) {
		var re *rpcError
		if errors.As(err, &re) {
			err = re
		}
		end(ctx, err)
	})
}

// conversation is the MCP session a call belongs to, as llmtool records
// it with the call's changeset (llmtool.Call.Conversation), so that a
// client can undo its own session's changes; "" without a session (the
// stateless 2026-07-28 revision).
func conversation(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		return "mcp:" + cs.SessionID()
	}
	return ""
}
