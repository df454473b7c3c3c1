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
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
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
// authenticated and given its tenant before mcp-go serves it.
//
// A tool call's progress and log notifications, and its sampling and
// elicitation requests, go on a stream of its session: the call's own
// response stream, or the session's GET stream when one is open (mcp-go
// hands a session's notifications to whichever stream reads first); the
// call's result is written after its notifications.
// Notifications unrelated to a call, such as tools/list_changed, go on the
// session's GET stream.
//
// Sessions live in this process, so replicas behind a load balancer need
// session affinity; use StatelessHandler otherwise. They are bounded
// (Options.MaxSessions, Options.MaxSessionsPerPrincipal) and end when idle
// (Options.SessionIdleTimeout); a request of an ended or unknown session
// gets 404 Not Found, one of a session another principal or tenant opened
// 403 Forbidden, and a GET without the Mcp-Session-Id header 400 Bad
// Request. Requests of protocol revision 2026-07-28 have no session.
func (s *Server) Handler() http.Handler { return s.httpHandler(false) }

// StatelessHandler returns the streamable HTTP transport without sessions:
// every POST stands alone, so any replica can serve any request. There is
// no GET stream, so no tools/list_changed notifications before 2026-07-28
// (at 2026-07-28, on subscriptions/listen streams), and clients of
// revisions before 2026-07-28 cannot be asked (ask.Sample, ask.Elicit and
// ask.Roots return ask.ErrUnsupported); at 2026-07-28 they are asked with
// input-required results, whose retry any replica with the same
// Options.RequestStateKey accepts. Progress and log notifications reach
// the client on the call's own response stream.
func (s *Server) StatelessHandler() http.Handler { return s.httpHandler(true) }

func (s *Server) httpHandler(stateless bool) http.Handler {
	h := &httpHandler{s: s, stateless: stateless}
	opts := []server.StreamableHTTPOption{
		server.WithDisableLocalhostProtection(true), // checked by checkRebinding, with the allow lists
		server.WithStreamableHTTPProtocolVersions(protocolVersions()...),
		server.WithStreamableHTTPLogger(s.cfg.Logger),
	}
	if stateless {
		opts = append(opts, server.WithStateLess(true), server.WithDisableStreaming(true))
	} else {
		opts = append(opts, server.WithSessionIdManagerResolver(sessionIDs{h}),
			server.WithSessionIdleTTL(s.cfg.SessionIdleTimeout),
			server.WithHeartbeatInterval(s.cfg.HeartbeatInterval)) // 0: no heartbeats
		if s.events != nil {
			opts = append(opts, server.WithEventStore(s.events))
		}
	}
	h.mcp = server.NewStreamableHTTPServer(s.mcp, opts...)
	s.mu.Lock()
	s.transports = append(s.transports, h.mcp)
	s.mu.Unlock()
	return h
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
	p := s.cfg.Principal
	if s.cfg.Authenticator != nil && r.Method != http.MethodOptions { // CORS preflights carry no credentials
		var err error
		if p, err = s.cfg.Authenticator.Authenticate(r); err != nil || p == nil {
			if err == nil {
				err = errors.New("no principal")
			}
			s.cfg.Logger.Info("mcpadapter: request refused", "err", err, "remote", r.RemoteAddr)
			h.unauthorized(w, r, err)
			return
		}
		ctx = llmtool.WithPrincipal(ctx, p)
	}
	tenant := s.cfg.Tenant
	if s.cfg.TenantFunc != nil && r.Method != http.MethodOptions {
		var err error
		if tenant, err = s.cfg.TenantFunc(r, p); err != nil {
			writeError(w, http.StatusForbidden, err.Error())
			return
		}
		ctx = llmtool.WithTenant(ctx, tenant)
	}
	var body []byte
	if r.Method == http.MethodPost && r.Body != nil {
		var err error
		if body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)); err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The request body is larger than this server's limit of %d bytes; send smaller arguments.", s.cfg.MaxBodyBytes))
				return
			}
			writeError(w, http.StatusBadRequest, "Reading the request body failed: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
			// mcp-go takes a JSON-RPC batch for a body that is not JSON.
			rev := "by this server"
			if v := r.Header.Get(mcp.HeaderProtocolVersion); mcp.IsModernProtocol(v) {
				rev = "in protocol revision " + v
			}
			writeError(w, http.StatusBadRequest, "Batch requests are not supported "+rev+"; send one JSON-RPC message per request.")
			return
		}
		if id, bad := checkMessage(body); bad != nil { // jsonrpc.go
			writeRPC(w, http.StatusBadRequest, id, bad.code, bad.message)
			return
		}
	}
	ctx = withHeaderTrace(ctx, r.Header) // the client's trace context (tracing.go)

	// Revision 2026-07-28 has no sessions: mcp-go ignores Mcp-Session-Id
	// (and requires the Mcp-Protocol-Version header).
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	ex := &exchange{modern: modern}
	ex.box = &ex.own // a request's own mcp-go session
	if !modern && !h.stateless {
		switch id := r.Header.Get(server.HeaderKeySessionID); {
		case id != "" && r.Method != http.MethodOptions:
			info := h.session(w, id, p, tenant)
			if info == nil {
				return
			}
			ex.box = &info.box // the session's, whichever of its streams writes
		case r.Method == http.MethodGet:
			// mcp-go would open a session for it, outside the limits.
			writeError(w, http.StatusBadRequest, "A GET stream belongs to a session: send the Mcp-Session-Id header that the initialize response carried.")
			return
		case r.Method == http.MethodPost && readMessage(body).Method == string(mcp.MethodInitialize):
			sl, refusal := s.reserve(principalID(p))
			if sl == nil {
				s.cfg.Logger.Warn("mcpadapter: session refused", "principal", principalID(p), "reason", refusal)
				writeRPC(w, http.StatusServiceUnavailable, readMessage(body).ID, codeServerError, refusal)
				return
			}
			defer s.release(sl)
			ctx = context.WithValue(ctx, slotKey{}, sl)
		}
	}
	if h.scopeRefused(ctx, w, body) { // auth.go
		return
	}
	h.mcp.ServeHTTP(&httpWriter{ResponseWriter: w, ex: ex}, r.WithContext(withExchange(ctx, ex)))
}

// session returns the session a request names if it may serve it, or
// answers 404 Not Found for a session the table does not hold (so the
// client initializes a new one, as the MCP specification prescribes) or
// 403 Forbidden for a session of another principal or tenant, and returns
// nil.
func (h *httpHandler) session(w http.ResponseWriter, id string, p *llmtool.Principal, tenant string) *sessionInfo {
	info := h.s.sessions.get(id)
	switch {
	case info == nil || info.h != h:
		writeRPC(w, http.StatusNotFound, nil, codeSessionGone, fmt.Sprintf(
			"Session not found: it ended (after %s without requests, or by DELETE) or never existed; initialize a new session, without the Mcp-Session-Id header.",
			humanDuration(h.s.cfg.SessionIdleTimeout)))
		return nil
	case info.principal != principalID(p):
		writeError(w, http.StatusForbidden, "This session belongs to another user; initialize a session of your own.")
		return nil
	case info.tenant != tenant:
		writeError(w, http.StatusForbidden, fmt.Sprintf("This session was opened for tenant %q, not %q; initialize a new session for that tenant.", info.tenant, tenant))
		return nil
	}
	return info
}

// message is the part of a JSON-RPC request the HTTP handler looks at.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// readMessage returns what the HTTP handler looks at of the JSON-RPC
// request body: zero for what is not a request, which mcp-go answers.
func readMessage(body []byte) message {
	var m message
	_ = json.Unmarshal(body, &m)
	return m
}

// writeError answers with a JSON-RPC invalid-request error (id null),
// which MCP clients can show, and the HTTP status.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeRPC(w, status, nil, mcp.INVALID_REQUEST, msg)
}

// writeRPC answers with a JSON-RPC error response and the HTTP status.
func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorResponse(id, code, msg))
}

// checkRebinding refuses, on a loopback listener, a Host or Origin header
// that does not name the loopback interface (or an allowed host or origin):
// a page on another site whose name was rebound to 127.0.0.1 must not reach
// the server through the user's browser. On other listeners, it refuses
// origins outside Options.AllowedOrigins when that list is set.
func (s *Server) checkRebinding(r *http.Request) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	loopback := local != nil && isLoopback(local.String())
	if loopback && !isLoopback(r.Host) && !contains(s.cfg.AllowedHosts, r.Host) && !contains(s.cfg.AllowedHosts, hostOnly(r.Host)) {
		//lint:ignore ST1005 the message is the 403 response body, a sentence that starts with the header's name
		return fmt.Errorf("Host %q is not allowed on this loopback server (DNS rebinding protection); connect to localhost, or add the host to mcpadapter.Options.AllowedHosts", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" || contains(s.cfg.AllowedOrigins, origin) {
		return nil
	}
	if loopback {
		if u, err := url.Parse(origin); err == nil && isLoopback(u.Host) {
			return nil
		}
		//lint:ignore ST1005 the message is the 403 response body, a sentence that starts with the header's name
		return fmt.Errorf("Origin %q is not allowed on this loopback server (DNS rebinding protection); add it to mcpadapter.Options.AllowedOrigins", origin)
	}
	if len(s.cfg.AllowedOrigins) > 0 {
		//lint:ignore ST1005 the message is the 403 response body, a sentence that starts with the header's name
		return fmt.Errorf("Origin %q is not allowed; add it to mcpadapter.Options.AllowedOrigins", origin)
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
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}
