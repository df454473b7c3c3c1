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
// authenticated and given its scope before mcp-go sees it.
//
// A tool call's progress and log notifications, and its sampling and
// elicitation requests, go on the call's own response stream (an SSE
// stream when the client accepts one), in order and before the result.
// Notifications unrelated to a call, such as tools/list_changed, go on the
// session's GET stream.
//
// Sessions live in this process, so replicas behind a load balancer need
// session affinity; use StatelessHandler otherwise. They are bounded
// (Options.MaxSessions, Options.MaxSessionsPerPrincipal) and end when idle
// (Options.SessionIdleTimeout); a request of an ended or unknown session gets
// 404 Not Found, and a GET without the Mcp-Session-Id header gets 400 Bad
// Request.
func (s *Server) Handler() http.Handler { return s.httpHandler(false) }

// StatelessHandler returns the streamable HTTP transport without sessions:
// every POST stands alone, so any replica can serve any request. There is
// no GET stream, so no tools/list_changed notifications, and clients of
// revisions before 2026-07-28 cannot be asked (ask.Sample, ask.Elicit and
// ask.Roots return ask.ErrUnsupported); at 2026-07-28 they are asked with
// input-required results, whose retry any replica with the same
// Options.RequestStateKey accepts. Progress and log notifications reach the
// client on the call's own response stream.
func (s *Server) StatelessHandler() http.Handler { return s.httpHandler(true) }

func (s *Server) httpHandler(stateless bool) http.Handler {
	opts := []server.StreamableHTTPOption{
		server.WithDisableLocalhostProtection(true), // checked by checkRebinding, with the allow lists
		server.WithStreamableHTTPProtocolVersions(protocolVersions()...),
		server.WithStreamableHTTPLogger(s.cfg.logger),
	}
	if stateless {
		opts = append(opts, server.WithStateLess(true), server.WithDisableStreaming(true))
	}
	// Without the host's HTTPOptions, mcp-go's Handle serves a POST as its
	// ServeHTTP would (see serveModern): no CORS, protected resource
	// metadata, rebinding check or HTTPContextFunc of the host's.
	h := &httpHandler{s: s, stateless: stateless, versions: protocolVersions(), direct: len(s.cfg.httpOptions) == 0}
	if !stateless {
		opts = append(opts, server.WithSessionIdManagerResolver(sessionIDs{h}))
		if s.cfg.heartbeat > 0 {
			opts = append(opts, server.WithHeartbeatInterval(s.cfg.heartbeat))
		}
		if s.events != nil {
			opts = append(opts, server.WithEventStore(s.events))
		}
	}
	h.mcp = server.NewStreamableHTTPServer(s.mcp, append(opts, s.cfg.httpOptions...)...)
	return h
}

type httpHandler struct {
	s         *Server
	mcp       *server.StreamableHTTPServer
	stateless bool
	versions  []string // protocolVersions(), made once
	direct    bool     // mcp-go's Handle may serve revision 2026-07-28 POSTs (serveModern)
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
			h.unauthorized(w, r, err)
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
	var body []byte
	if r.Method == http.MethodPost && r.Body != nil {
		var err error
		body, err = s.readBody(w, r)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The request body is larger than this server's limit of %d bytes; send smaller arguments.", s.cfg.maxBody))
				return
			}
			writeError(w, http.StatusBadRequest, "Reading the request body failed: "+err.Error())
			return
		}
		// mcp-go is handed body (serveModern), or reads it again from a
		// new reader of it (serveMCP).
	}
	ctx = withHeaderTrace(ctx, r.Header) // the client's trace context (tracing.go)
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}

	// The body's message, or batch. A body that is not JSON is left to
	// mcp-go, which answers a parse error.
	var msg *wireMessage
	var batch []json.RawMessage
	if len(body) > 0 && json.Valid(body) {
		if jsonKind(body) == "an array" {
			batch = decodeBatch(body)
			if len(batch) == 0 {
				writeRPC(w, http.StatusBadRequest, invalid(nil, "the batch is empty."))
				return
			}
		} else {
			m, bad := checkValidMessage(body)
			if bad != nil {
				writeRPC(w, http.StatusBadRequest, bad)
				return
			}
			msg = &m
		}
	}
	// Protocol revision 2026-07-28 and later have no sessions, no batches
	// and no server-to-client requests: mcp-go serves such a request
	// alone, checking its headers and _meta, and answers a GET or DELETE
	// with 405.
	if isModern(r, body) {
		if batch != nil {
			writeError(w, http.StatusBadRequest, "Batch requests are not supported in protocol revision "+mcp.ProtocolVersion20260728+"; send one JSON-RPC message per request.")
			return
		}
		if !h.scopeRefused(w, r, body) {
			h.serveModern(w, r, body, msg)
		}
		return
	}
	initialize := msg != nil && msg.method == string(mcp.MethodInitialize)

	var info *sessionInfo
	if !h.stateless {
		switch id := r.Header.Get(server.HeaderKeySessionID); {
		case initialize: // opens a new session, whatever the client sends
		case id != "":
			if info = h.session(w, id, p, scope); info == nil {
				return
			}
			info.active.Add(1)
			s.touch(info)
			defer func() {
				s.touch(info)
				info.active.Add(-1)
			}()
		case r.Method == http.MethodGet:
			// mcp-go would open a session for it, outside the limits.
			writeError(w, http.StatusBadRequest, "A GET stream belongs to a session: send the Mcp-Session-Id header that the initialize response carried.")
			return
		}
	}

	switch {
	case batch != nil:
		if rev := revision(r, info); rev != batchRevision {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Batch requests are not supported in protocol revision %s; send one JSON-RPC message per request.", rev))
			return
		}
		if !h.stateless && info == nil {
			writeError(w, http.StatusBadRequest, "A batch needs a session: send initialize on its own first, then the batch with the Mcp-Session-Id header of its response.")
			return
		}
		h.serveBatch(w, r, batch)
	case initialize && !h.stateless:
		slot, refusal := s.reserve(principalID(p))
		if slot == nil {
			s.cfg.logger.Warn("mcpadapter: session refused", "principal", principalID(p), "reason", refusal)
			writeRPC(w, http.StatusServiceUnavailable, &rpcError{id: msg.ID, code: codeServerError, message: refusal})
			return
		}
		h.dispatch(w, r.WithContext(context.WithValue(r.Context(), slotKey{}, slot)), body)
		if slot.id == "" {
			s.release(slot) // mcp-go opened no session
		} else if _, ok := s.sessions.Load(slot.id); !ok {
			h.dropMCP(slot.id) // ended before mcp-go registered it
		}
	case r.Method == http.MethodGet && info != nil && s.events != nil && r.Header.Get("Last-Event-ID") != "":
		h.serveResume(w, r, info.id, r.Header.Get("Last-Event-ID"))
	default:
		h.dispatchMessage(w, r, body, msg)
	}
}

// dispatch serves one message: a tools/call or the answer to the adapter's
// request here (see serveCall), everything else in mcp-go, after refusing
// a call the token's scopes do not allow (see scopeRefused).
func (h *httpHandler) dispatch(w http.ResponseWriter, r *http.Request, body []byte) {
	var msg *wireMessage
	if m, bad := checkMessage(body); body != nil && bad == nil {
		msg = &m
	}
	h.dispatchMessage(w, r, body, msg)
}

// dispatchMessage is dispatch for a body already checked: msg is its
// message, nil if it has none.
func (h *httpHandler) dispatchMessage(w http.ResponseWriter, r *http.Request, body []byte, msg *wireMessage) {
	if h.scopeRefused(w, r, body) {
		return
	}
	if msg != nil && h.serveCall(w, r, body, msg) {
		return
	}
	h.serveMCP(w, r, body, msg)
}

// serveMCP has mcp-go serve a request whose body (a POST's) the adapter
// read; the answer to a tools/call, a resources/read or a tools/list gets
// the adapter's notes (see callNotes: for tools/list, the page's
// pre-encoded tools), and a tools/call or subscriptions/listen returns
// only when its notifications are on the wire.
func (h *httpHandler) serveMCP(w http.ResponseWriter, r *http.Request, body []byte, msg *wireMessage) {
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if msg != nil && msg.method == string(mcp.MethodToolsList) {
		// The page's tools go out pre-encoded (listing.go).
		notes := &callNotes{}
		h.mcp.ServeHTTP(&noteWriter{ResponseWriter: w, notes: notes}, r.WithContext(withNotes(r.Context(), notes)))
		return
	}
	if msg == nil || (msg.method != string(mcp.MethodToolsCall) && msg.method != string(mcp.MethodSubscriptionsListen) && msg.method != string(mcp.MethodResourcesRead)) {
		h.mcp.ServeHTTP(w, r)
		return
	}
	notes := newStreamNotes()
	h.mcp.ServeHTTP(&noteWriter{ResponseWriter: w, notes: notes}, r.WithContext(withNotes(r.Context(), notes)))
}

// isModern reports whether a request belongs to protocol revision
// 2026-07-28 or later: its Mcp-Protocol-Version header or its body's
// _meta says so, as mcp-go decides.
func isModern(r *http.Request, body []byte) bool {
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return true
	}
	if len(body) == 0 || !bytes.Contains(body, []byte(mcp.MetaKeyProtocolVersion)) {
		return false
	}
	var m struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	return json.Unmarshal(body, &m) == nil && mcp.IsModernProtocol(m.Params.Meta.ProtocolVersion())
}

// session returns the session a request names, or answers 404 Not Found
// for a session the table does not hold or that has been idle too long (so
// the client initializes a new one, as the MCP specification prescribes),
// or 403 Forbidden for a session of another principal or scope.
func (h *httpHandler) session(w http.ResponseWriter, id string, p *llmtool.Principal, scope string) *sessionInfo {
	s := h.s
	v, ok := s.sessions.Load(id)
	info, _ := v.(*sessionInfo)
	if ok && info.h == h && s.idle(info) {
		h.endSession(id, "idle")
		ok = false
	}
	switch {
	case !ok || info.h != h:
		writeRPC(w, http.StatusNotFound, &rpcError{code: codeSessionNotFound, message: fmt.Sprintf(
			"Session not found: it ended (after %s without requests, or by DELETE) or never existed; initialize a new session, without the Mcp-Session-Id header.",
			humanDuration(s.cfg.idleTimeout))})
		return nil
	case info.principal != principalID(p):
		writeError(w, http.StatusForbidden, "This session belongs to another user; initialize a session of your own.")
		return nil
	case info.scope != scope:
		writeError(w, http.StatusForbidden, fmt.Sprintf("This session was opened for scope %q, not %q; initialize a new session for that scope.", info.scope, scope))
		return nil
	}
	return info
}

// writeError answers with a JSON-RPC invalid-request error (id null),
// which MCP clients can show, and the HTTP status.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeRPC(w, status, &rpcError{code: codeInvalidRequest, message: msg})
}

// checkRebinding refuses, on a loopback listener, a Host or Origin header
// that does not name the loopback interface (or an allowed host or origin):
// a page on another site whose name was rebound to 127.0.0.1 must not reach
// the server through the user's browser. On other listeners, it refuses
// origins outside Options.AllowedOrigins when that list is set.
func (s *Server) checkRebinding(r *http.Request) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	loopback := local != nil && isLoopback(local.String())
	if loopback && !isLoopback(r.Host) && !contains(s.cfg.hosts, r.Host) && !contains(s.cfg.hosts, hostOnly(r.Host)) {
		//lint:ignore ST1005 the message is the 403 response body, a sentence that starts with the header's name
		return fmt.Errorf("Host %q is not allowed on this loopback server (DNS rebinding protection); connect to localhost, or add the host to mcpadapter.Options.AllowedHosts", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" || contains(s.cfg.origins, origin) {
		return nil
	}
	if loopback {
		if u, err := url.Parse(origin); err == nil && isLoopback(u.Host) {
			return nil
		}
		//lint:ignore ST1005 the message is the 403 response body, a sentence that starts with the header's name
		return fmt.Errorf("Origin %q is not allowed on this loopback server (DNS rebinding protection); add it to mcpadapter.Options.AllowedOrigins", origin)
	}
	if len(s.cfg.origins) > 0 {
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
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// maxPooledBody is the largest buffer readBody keeps for the next request:
// larger bodies are rare, and a pooled buffer is memory held.
const maxPooledBody = 64 << 10

// readBody reads r's body, at most Options.MaxBodyBytes of it (an
// *http.MaxBytesError beyond, as http.MaxBytesReader reports), as
// io.ReadAll would. It reads into a buffer of Server.bodies and returns a
// copy of what it read, whose size is the body's: io.ReadAll's buffer starts
// at 512 bytes and doubles. The copy is the request's own: a call's handler
// may outlive the request (httpcall.go).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	bp, _ := s.bodies.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 0, 512)
		bp = &b
	}
	buf := (*bp)[:0]
	rd := http.MaxBytesReader(w, r.Body, s.cfg.maxBody)
	var err error
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow, as io.ReadAll does
		}
		var n int
		n, err = rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	body := append(make([]byte, 0, len(buf)), buf...)
	if cap(buf) <= maxPooledBody {
		*bp = buf[:0]
		s.bodies.Put(bp)
	}
	return body, err
}

// decodeBatch returns the messages of a JSON array.
func decodeBatch(body []byte) []json.RawMessage {
	var batch []json.RawMessage
	_ = json.Unmarshal(body, &batch)
	return batch
}
