package mcpadapter

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
)

// Defaults of the options.
const (
	// DefaultPageSize is how many tools one tools/list page holds.
	DefaultPageSize = 100
	// DefaultMaxBodyBytes bounds an HTTP request body: 4 MiB.
	DefaultMaxBodyBytes = 4 << 20
)

// Option configures a Server.
type Option func(*config)

type config struct {
	name, version string
	instructions  string
	principal     *llmtool.Principal
	scope         string
	auth          Authenticator
	scopeFunc     ScopeFunc
	pageSize      int
	maxBody       int64
	hosts         []string
	origins       []string
	resourceMeta  string
	logLevel      mcp.LoggingLevel
	logger        *slog.Logger
	httpOpts      []server.StreamableHTTPOption

	maxSessions     int
	maxPerPrincipal int
	idleTimeout     time.Duration
}

func defaultConfig() config {
	return config{
		name:     "llmtool",
		version:  "0.1.0",
		pageSize: DefaultPageSize,
		maxBody:  DefaultMaxBodyBytes,
		logLevel: mcp.LoggingLevelInfo,
		logger:   slog.Default(),

		maxSessions:     DefaultMaxSessions,
		maxPerPrincipal: DefaultMaxSessionsPerPrincipal,
		idleTimeout:     DefaultSessionIdleTimeout,
	}
}

// WithName sets the server name and version reported to clients in the
// initialize handshake. The default is "llmtool" "0.1.0".
func WithName(name, version string) Option {
	return func(c *config) { c.name, c.version = name, version }
}

// WithInstructions sets the instructions the initialize handshake gives the
// client's model, such as when to prefer which tools.
func WithInstructions(text string) Option {
	return func(c *config) { c.instructions = text }
}

// WithPrincipal sets the principal calls run as when the transport supplies
// none: always over stdio, and over HTTP when there is no Authenticator.
func WithPrincipal(p *llmtool.Principal) Option {
	return func(c *config) { c.principal = p }
}

// WithScope sets the scope calls and listings use when the transport
// supplies none: always over stdio, and over HTTP when there is no
// ScopeFunc.
func WithScope(scope string) Option {
	return func(c *config) { c.scope = scope }
}

// WithAuthenticator makes the HTTP handlers authenticate every request: a
// request the Authenticator refuses gets 401 Unauthorized with a
// WWW-Authenticate header before anything else runs.
func WithAuthenticator(a Authenticator) Option {
	return func(c *config) { c.auth = a }
}

// WithScopeFunc makes the HTTP handlers pick each request's scope with f.
func WithScopeFunc(f ScopeFunc) Option {
	return func(c *config) { c.scopeFunc = f }
}

// WithPageSize sets how many tools one tools/list page holds (default
// DefaultPageSize); clients follow nextCursor for the rest.
func WithPageSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.pageSize = n
		}
	}
}

// WithMaxBodyBytes bounds HTTP request bodies (default
// DefaultMaxBodyBytes). A larger body gets 413 with a JSON-RPC error that
// says the limit.
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.maxBody = n
		}
	}
}

// WithMaxSessions bounds the sessions Handler keeps open at once, over all
// principals (default DefaultMaxSessions, 1000). An initialize beyond it
// gets 503 Service Unavailable with a JSON-RPC error that says the limit and
// to try again later. n <= 0 keeps the default.
func WithMaxSessions(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxSessions = n
		}
	}
}

// WithMaxSessionsPerPrincipal bounds the sessions of Handler that one
// principal keeps open at once (default DefaultMaxSessionsPerPrincipal,
// 100). An initialize beyond it gets 503 Service Unavailable with a
// JSON-RPC error that says the limit and how to end sessions. Sessions
// without a principal (no Authenticator and no WithPrincipal) count toward
// WithMaxSessions only. n <= 0 keeps the default.
func WithMaxSessionsPerPrincipal(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxPerPrincipal = n
		}
	}
}

// WithSessionIdleTimeout ends a session of Handler that has gone d without
// a request, while no call or GET stream of it is open (default
// DefaultSessionIdleTimeout, 30 minutes). A request of an ended session
// gets 404 Not Found, which tells MCP clients to initialize a new session.
// d <= 0 keeps the default.
func WithSessionIdleTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.idleTimeout = d
		}
	}
}

// WithAllowedHosts adds Host header values, such as "mcp.example.com" or
// "mcp.example.com:8443", that a loopback listener accepts besides
// localhost, 127.0.0.1 and [::1] (on any port): for a reverse proxy on the
// same machine that keeps the original Host.
func WithAllowedHosts(hosts ...string) Option {
	return func(c *config) { c.hosts = append(c.hosts, hosts...) }
}

// WithAllowedOrigins adds Origin header values, such as
// "https://app.example.com", that the HTTP handlers accept. On a loopback
// listener, requests from browser pages of other origins are refused (DNS
// rebinding); on other listeners, a non-empty list refuses every other
// origin.
func WithAllowedOrigins(origins ...string) Option {
	return func(c *config) { c.origins = append(c.origins, origins...) }
}

// WithResourceMetadata sets the URL of the server's OAuth protected
// resource metadata (RFC 9728), announced in the WWW-Authenticate header of
// 401 responses so clients can discover the authorization server.
func WithResourceMetadata(url string) Option {
	return func(c *config) { c.resourceMeta = url }
}

// WithLogLevel sets the least severe level of the log notifications
// (ReadCtx.Log) a session receives before it sends logging/setLevel. The
// default is slog.LevelInfo.
func WithLogLevel(l slog.Level) Option {
	return func(c *config) { c.logLevel = mcpLevel(l) }
}

// WithLogger sets the logger for the adapter's own diagnostics. The default
// is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithStreamableHTTPOptions passes options to mcp-go's streamable HTTP
// transport, after the adapter's own, such as server.WithHeartbeatInterval.
// The adapter serves the tools/call requests of stateful sessions itself
// (see Handler), so mcp-go's server.WithEventStore does not record their
// streams. The adapter keeps Handler's sessions itself, with limits and an
// idle timeout (WithMaxSessions, WithSessionIdleTimeout): use those rather
// than server.WithSessionIdleTTL, and note that server.WithStateful,
// server.WithSessionIdManager and server.WithSessionIdManagerResolver
// replace the adapter's session table and so its limits.
func WithStreamableHTTPOptions(opts ...server.StreamableHTTPOption) Option {
	return func(c *config) { c.httpOpts = append(c.httpOpts, opts...) }
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

// ScopeFunc picks the scope of an HTTP request made by p, such as a
// workspace named in the path or granted to the user. An error refuses the
// request with 403 Forbidden and the error's text.
type ScopeFunc func(r *http.Request, p *llmtool.Principal) (string, error)
