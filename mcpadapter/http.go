package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
)

// ErrUnauthorized is returned by BearerAuth's Authenticator for a request
// without a bearer token.
var ErrUnauthorized = errors.New("mcpadapter: no bearer token")

// BearerAuth returns an Authenticator that reads the request's
// "Authorization: Bearer <token>" header and asks verify who the token
// belongs to. verify returns an error (or a nil principal) for a token it
// does not accept.
func BearerAuth(verify func(ctx context.Context, token string) (*llmtool.Principal, error)) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*llmtool.Principal, error) {
		h := r.Header.Get("Authorization")
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			return nil, ErrUnauthorized
		}
		return verify(r.Context(), strings.TrimSpace(token))
	})
}

// Handler returns the streamable HTTP transport as an http.Handler, with
// sessions: mount it at the MCP endpoint, such as "/mcp". Every request is
// checked against DNS rebinding (on loopback listeners), bounded in size,
// authenticated and given its scope before mcp-go sees it.
//
// A tool call's progress and log notifications, and its sampling and
// elicitation requests, go on the call's own response stream (an SSE
// stream when the client accepts one), in order and before the result.
// Notifications unrelated to a call, such as tools/list_changed, go on the
// session's GET stream.
//
// Sessions live in this process, so replicas behind a load balancer need
// session affinity; use StatelessHandler otherwise.
func (s *Server) Handler() http.Handler { return s.httpHandler(false) }

// StatelessHandler returns the streamable HTTP transport without sessions:
// every POST stands alone, so any replica can serve any request. There is
// no GET stream, so no tools/list_changed notifications, and no sampling or
// elicitation; progress and log notifications still reach the client on
// the call's own response stream.
func (s *Server) StatelessHandler() http.Handler { return s.httpHandler(true) }

func (s *Server) httpHandler(stateless bool) http.Handler {
	opts := []server.StreamableHTTPOption{
		server.WithDisableLocalhostProtection(true), // checked by checkRebinding, with the allow lists
		server.WithStreamableHTTPProtocolVersions(protocolVersions()...),
		server.WithStreamableHTTPLogger(s.cfg.logger),
	}
	if stateless {
		opts = append(opts, server.WithStateLess(true), server.WithDisableStreaming(true))
	} else {
		opts = append(opts, server.WithStateful(true))
	}
	opts = append(opts, s.cfg.httpOpts...)
	return &httpHandler{s: s, mcp: server.NewStreamableHTTPServer(s.mcp, opts...), stateless: stateless}
}

type httpHandler struct {
	s         *Server
	mcp       *server.StreamableHTTPServer
	stateless bool
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	if err := s.checkRebinding(r); err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	ctx := r.Context()
	p := s.cfg.principal
	if s.cfg.auth != nil && r.Method != http.MethodOptions { // CORS preflights carry no credentials
		var err error
		p, err = s.cfg.auth.Authenticate(r)
		if err != nil || p == nil {
			if err == nil {
				err = errors.New("no principal")
			}
			s.cfg.logger.Info("mcpadapter: request refused", "err", err, "remote", r.RemoteAddr)
			h.unauthorized(w, r)
			return
		}
		ctx = llmtool.WithPrincipal(ctx, p)
	}
	scope := s.cfg.scope
	if s.cfg.scopeFunc != nil && r.Method != http.MethodOptions {
		var err error
		scope, err = s.cfg.scopeFunc(r, p)
		if err != nil {
			writeError(w, http.StatusForbidden, err.Error())
			return
		}
		ctx = llmtool.WithScope(ctx, scope)
	}
	if id := r.Header.Get(server.HeaderKeySessionID); id != "" && !h.stateless {
		if v, ok := s.sessions.Load(id); ok {
			switch info := v.(*sessionInfo); {
			case info.principal != principalID(p):
				writeError(w, http.StatusForbidden, "This session belongs to another user; initialize a session of your own.")
				return
			case info.scope != scope:
				writeError(w, http.StatusForbidden, fmt.Sprintf("This session was opened for scope %q, not %q; initialize a new session for that scope.", info.scope, scope))
				return
			}
		}
	}
	var body []byte
	if r.Method == http.MethodPost && r.Body != nil {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The request body is larger than this server's limit of %d bytes; send smaller arguments.", s.cfg.maxBody))
				return
			}
			writeError(w, http.StatusBadRequest, "Reading the request body failed: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	if body != nil && h.serveCall(w, r, body) {
		return
	}
	h.mcp.ServeHTTP(w, r)
}

// unauthorized answers 401 with the challenge of RFC 6750 (and RFC 9728's
// resource_metadata when configured).
func (h *httpHandler) unauthorized(w http.ResponseWriter, r *http.Request) {
	challenge := `Bearer realm="mcp"`
	if r.Header.Get("Authorization") != "" {
		challenge += `, error="invalid_token", error_description="The access token is missing, malformed, expired or revoked"`
	}
	if h.s.cfg.resourceMeta != "" {
		challenge += fmt.Sprintf(`, resource_metadata=%q`, h.s.cfg.resourceMeta)
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeError(w, http.StatusUnauthorized, "Authentication required: send a valid bearer token in the Authorization header.")
}

// writeError answers with a JSON-RPC error object (id null), which MCP
// clients can show, and the HTTP status.
func writeError(w http.ResponseWriter, status int, msg string) {
	code := -32600 // invalid request
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// checkRebinding refuses, on a loopback listener, a Host or Origin header
// that does not name the loopback interface (or an allowed host or origin):
// a page on another site whose name was rebound to 127.0.0.1 must not reach
// the server through the user's browser. On other listeners, it refuses
// origins outside WithAllowedOrigins when that list is set.
func (s *Server) checkRebinding(r *http.Request) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	loopback := local != nil && isLoopback(local.String())
	if loopback && !isLoopback(r.Host) && !contains(s.cfg.hosts, r.Host) && !contains(s.cfg.hosts, hostOnly(r.Host)) {
		return fmt.Errorf("Host %q is not allowed on this loopback server (DNS rebinding protection); connect to localhost, or add the host with WithAllowedHosts", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" || contains(s.cfg.origins, origin) {
		return nil
	}
	if loopback {
		if u, err := url.Parse(origin); err == nil && isLoopback(u.Host) {
			return nil
		}
		return fmt.Errorf("Origin %q is not allowed on this loopback server (DNS rebinding protection); add it with WithAllowedOrigins", origin)
	}
	if len(s.cfg.origins) > 0 {
		return fmt.Errorf("Origin %q is not allowed; add it with WithAllowedOrigins", origin)
	}
	return nil
}

// isLoopback reports whether a host or host:port names the loopback
// interface.
func isLoopback(hostport string) bool {
	host := hostOnly(hostport)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func hostOnly(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return strings.Trim(hostport, "[]")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
