package mcpadapter

import (
	"cmp"
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/signkey"
)

// Defaults of the options.
const (
	// defaultPageSize is how many items one page of a listing holds.
	defaultPageSize = 100
	// defaultMaxBodyBytes bounds an HTTP request body: 4 MiB.
	defaultMaxBodyBytes = 4 << 20
)

// Options configures a Server. A nil *Options, like the zero value,
// gives every field's default. New copies what it needs: changing the
// Options afterwards does not change the Server.
type Options struct {
	// Name and Version identify the server to clients in the initialize
	// handshake. Default: "llmtool" and "0.1.0", each on its own.
	Name, Version string

	// Instructions are given to the client's model in the initialize
	// handshake, such as when to prefer which tools. Default: none.
	Instructions string

	// Principal is who calls run as when the transport supplies none:
	// always over stdio, and over HTTP when Authenticator is nil. Default:
	// none, so calls run without a principal.
	Principal *llmtool.Principal

	// Tenant is the tenant calls and listings use when the transport
	// supplies none: always over stdio, and over HTTP when TenantFunc is
	// nil. Default: "" (the registry's default tenant).
	Tenant string

	// Authenticator, when set, makes the HTTP handlers authenticate every
	// request: a request it refuses gets 401 Unauthorized with a
	// WWW-Authenticate header before anything else runs (with the error
	// code and description of a BearerError). An *oauth.Verifier is one,
	// for OAuth access tokens: its principals carry the token's scopes,
	// and a call of a tool whose llmtool.Scopes they lack gets 403
	// Forbidden with error="insufficient_scope" and the scopes to ask
	// for. Default: nil, no authentication (calls run as Principal).
	Authenticator Authenticator

	// TenantFunc, when set, picks each HTTP request's tenant from the
	// request and its principal, such as a workspace named in the path or
	// granted to the user; an error refuses the request with 403 Forbidden
	// and the error's text. Default: nil, every request has Tenant.
	TenantFunc func(r *http.Request, p *llmtool.Principal) (string, error)

	// ResourceMetadata is the URL of the server's OAuth protected resource
	// metadata (RFC 9728), announced in the WWW-Authenticate header of 401
	// and 403 responses so clients can discover the authorization server:
	// oauth.Verifier.MetadataURL, with oauth.Verifier.Metadata served
	// there. Default: "", not announced.
	ResourceMetadata string

	// AllowedHosts are Host header values, such as "mcp.example.com" or
	// "mcp.example.com:8443", that a loopback listener accepts besides
	// localhost, 127.0.0.1 and [::1] (on any port): for a reverse proxy on
	// the same machine that keeps the original Host. Default: none.
	AllowedHosts []string

	// AllowedOrigins are Origin header values, such as
	// "https://app.example.com", that the HTTP handlers accept. On a
	// loopback listener, requests from browser pages of other origins are
	// refused (DNS rebinding); on other listeners, a non-empty list
	// refuses every other origin. Default: none (loopback origins only on
	// a loopback listener, any origin on others).
	AllowedOrigins []string

	// MaxBodyBytes bounds HTTP request bodies. A larger body gets 413 with
	// a JSON-RPC error that says the limit. Default (0 or less):
	// 4 MiB.
	MaxBodyBytes int64

	// PageSize is how many items one page of tools/list, prompts/list,
	// resources/list or resources/templates/list holds; clients follow
	// nextCursor for the rest. Default (0 or less): 100.
	PageSize int

	// MaxSessions bounds the sessions Handler keeps open at once, over all
	// principals. An initialize beyond it gets 503 Service Unavailable
	// with a JSON-RPC error that says the limit and to try again later.
	// Default (0 or less): 1000.
	MaxSessions int

	// MaxSessionsPerPrincipal bounds the sessions of Handler that one
	// principal keeps open at once. An initialize beyond it gets 503
	// Service Unavailable with a JSON-RPC error that says the limit and
	// how to end sessions. Sessions without a principal (no Authenticator
	// and no Principal) count toward MaxSessions only. Default (0 or
	// less): 100.
	MaxSessionsPerPrincipal int

	// SessionIdleTimeout ends a session of Handler that has gone this
	// long without a request or an event on its streams (mcp-go's session
	// sweeper). A request of an ended session gets 404 Not Found, which
	// tells MCP clients to initialize a new session. Default (0 or less):
	// 30 minutes.
	SessionIdleTimeout time.Duration

	// HeartbeatInterval, when positive, has Handler send a ping on each
	// session's open GET stream at this interval, so proxies and load
	// balancers do not close it as idle (and the session stays alive).
	// Default: 0, no heartbeats.
	HeartbeatInterval time.Duration

	// LogLevel is the least severe level of the log notifications
	// (ReadCtx.Log) a session receives before it sends logging/setLevel.
	// Default: slog.LevelInfo, the zero value.
	LogLevel slog.Level

	// Logger receives the adapter's own diagnostics. Default (nil):
	// slog.Default().
	Logger *slog.Logger

	// RequestStateKey signs the requestState of input-required results
	// (HMAC-SHA256): the state a client echoes when it calls again with
	// the answers to a tool's ask.Elicit, ask.Sample or ask.Roots, which
	// carries the answers of the earlier rounds. Replicas behind a load
	// balancer need the same key, so that a retry reaching another replica
	// is accepted; use 32 random bytes, kept secret. New panics on a key
	// shorter than 16 bytes. Default (nil): 32 random bytes per Server, so
	// a state is good only on the process that issued it, and not after a
	// restart.
	RequestStateKey []byte

	// ReplayEvents bounds the events Handler keeps per SSE stream for
	// clients that reconnect with the Last-Event-ID header, in the protocol
	// revisions that have resumability (2025-03-26 through 2025-11-25):
	// every event then carries an ID, and a GET with Last-Event-ID gets
	// the events after it on its stream (mcp-go's resumable streams). A
	// Last-Event-ID whose following events are no longer kept gets 400 Bad
	// Request. Default (0): 256. Negative: events carry no
	// IDs and streams are not resumable.
	ReplayEvents int

	// ReplayAge bounds how long Handler keeps an SSE event for clients
	// that reconnect with Last-Event-ID. Default (0 or less):
	// 5 minutes.
	ReplayAge time.Duration

	// RequestStateTTL is how long a requestState is accepted after the
	// result that carried it: the time a person has to answer. Default (0
	// or less): an hour.
	RequestStateTTL time.Duration

	// OnRequest, when set, is called as each request starts, with what it
	// asks for, for request logs and APM spans; the function it returns,
	// if not nil, is called when the answer is ready, with the JSON-RPC
	// error the client gets (nil on success: a tool's isError result is a
	// success). The calls' own spans and metrics are the registry's
	// (llmtool.Options.TracerProvider and MeterProvider). Default: nil.
	OnRequest func(ctx context.Context, r Request) (done func(err error))

	// MeterProvider, when set, records the adapter's metrics through
	// OpenTelemetry's metric API: llmtool.mcp.sessions, the sessions open
	// (of Handler, and ServeStdio's one). The calls' metrics and spans are
	// the registry's (llmtool.Options.MeterProvider and TracerProvider).
	// Default: nil, no metrics.
	MeterProvider metric.MeterProvider

	// OutputBudget bounds the results this server's clients get, in bytes
	// of JSON: llmtool.Call.OutputBudget on every tools/call, so that a
	// longer result is cut to fit (see llmtool.Truncated). It lowers a
	// tool's own budget, never raises it. Default: 0, the tools' budgets
	// only.
	OutputBudget int

	// TextCopyLimit, when positive, shortens the text copy of a large
	// structured result. A tool with an output schema returns its result
	// as structuredContent and, for clients that read only text, the same
	// JSON as a text block, which a client that hands both to its model
	// pays for twice. With TextCopyLimit set, a result whose JSON is longer
	// than this many bytes, called by a client of protocol revision
	// 2025-06-18 or later (the revisions with structuredContent), gets a
	// one-sentence text block instead, such as "The result is in
	// structuredContent (48,213 bytes; notes: 1,240 items).". Clients of
	// earlier revisions always get the full copy. Default: 0, always the
	// full copy, as the specification recommends for clients that may
	// read only text; set it when the clients served are known to give
	// their model structuredContent.
	TextCopyLimit int
}

// withDefaults returns a copy of o, which may be nil, with the defaults
// applied: what a Server runs with, fixed at New.
func withDefaults(o *Options) Options {
	var c Options
	if o != nil {
		c = *o
	}
	c.Name = cmp.Or(c.Name, "llmtool")
	c.Version = cmp.Or(c.Version, "0.1.0")
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.AllowedHosts = slices.Clone(c.AllowedHosts)
	c.AllowedOrigins = slices.Clone(c.AllowedOrigins)
	c.RequestStateKey = slices.Clone(c.RequestStateKey)
	c.PageSize = positiveOr(c.PageSize, defaultPageSize)
	c.MaxBodyBytes = positiveOr(c.MaxBodyBytes, defaultMaxBodyBytes)
	c.RequestStateTTL = positiveOr(c.RequestStateTTL, defaultRequestStateTTL)
	c.ReplayAge = positiveOr(c.ReplayAge, defaultReplayAge)
	c.MaxSessions = positiveOr(c.MaxSessions, defaultMaxSessions)
	c.MaxSessionsPerPrincipal = positiveOr(c.MaxSessionsPerPrincipal, defaultMaxSessionsPerPrincipal)
	c.SessionIdleTimeout = positiveOr(c.SessionIdleTimeout, defaultSessionIdleTimeout)
	c.HeartbeatInterval = max(c.HeartbeatInterval, 0)
	c.OutputBudget = max(c.OutputBudget, 0)
	c.TextCopyLimit = max(c.TextCopyLimit, 0)
	if c.ReplayEvents == 0 {
		c.ReplayEvents = defaultReplayEvents // negative: streams are not resumable
	}
	if err := signkey.Check("mcpadapter: Options.RequestStateKey", c.RequestStateKey); err != nil {
		panic(err.Error())
	}
	if len(c.RequestStateKey) == 0 {
		c.RequestStateKey = make([]byte, 32)
		_, _ = rand.Read(c.RequestStateKey) // crypto/rand.Read never fails
	}
	return c
}

func positiveOr[T int | int64 | time.Duration](n, def T) T {
	if n > 0 {
		return n
	}
	return def
}

// Authenticator maps an HTTP request's credentials to the principal its
// calls run as. It returns an error (or a nil principal) for a request
// without valid credentials, which then gets 401 Unauthorized. BearerAuth
// builds one from a token check.
type Authenticator interface {
	Authenticate(r *http.Request) (*llmtool.Principal, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*llmtool.Principal, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (*llmtool.Principal, error) { return f(r) }

// Request is what Options.OnRequest learns of a request.
type Request struct {
	// Method is the JSON-RPC method, such as "tools/call".
	Method string
	// ID is the JSON-RPC request ID.
	ID any
	// Name is the tool called (tools/call), the prompt rendered
	// (prompts/get) or the URI read (resources/read); "" for other
	// methods.
	Name string
}
