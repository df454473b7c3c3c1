package mcpadapter

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
)

// Sessions. mcp-go keeps the sessions and their streams; the adapter keeps
// what it adds to them: who opened a session and in which tenant (a session
// belongs to them), which revision its client speaks, what it subscribed
// to and its log level (notify.go), and the session limits. The table is
// mcp-go's session ID manager for Handler (an ID it does not hold is
// answered 404), and its hooks add and remove the sessions of every
// transport.

// Defaults of the session limits of Handler.
const (
	// defaultMaxSessions bounds the sessions open at once, over all
	// principals.
	defaultMaxSessions = 1000
	// defaultMaxSessionsPerPrincipal bounds the sessions one principal has
	// open at once.
	defaultMaxSessionsPerPrincipal = 100
	// defaultSessionIdleTimeout is how long a session may go without a
	// request before it ends.
	defaultSessionIdleTimeout = 30 * time.Minute
)

// sessionIDPrefix starts every session ID the adapter mints.
const sessionIDPrefix = "mcp-session-"

// sessionInfo is what the adapter knows of a session.
type sessionInfo struct {
	id        string
	tenant    string
	principal string       // principal ID, "" if none
	h         *httpHandler // the handler that minted it; nil for stdio

	mu      sync.Mutex
	session server.ClientSession // mcp-go's, once registered
	modern  bool                 // its client speaks 2026-07-28 (stdio)
	level   mcp.LoggingLevel     // from logging/setLevel; "" for the default
	subs    map[string]bool      // URIs of resources/subscribe

	box outbox // the notifications its calls queued, over HTTP
}

// sessions is the session table.
type sessions struct {
	mu          sync.Mutex
	byID        map[string]*sessionInfo
	counted     int                  // sessions of Handler and initializes under way
	byPrincipal map[string]int       // the same, per principal
	listens     map[*listenInfo]bool // the open subscriptions/listen streams
}

func (t *sessions) get(id string) *sessionInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// each calls fn with every session, outside the table's lock.
func (t *sessions) each(fn func(*sessionInfo)) {
	t.mu.Lock()
	all := slices.Collect(maps.Values(t.byID))
	t.mu.Unlock()
	for _, info := range all {
		fn(info)
	}
}

// count adds n to the counted sessions of principal; t.mu is held.
func (t *sessions) count(principal string, n int) {
	t.counted += n
	if principal == "" {
		return
	}
	if t.byPrincipal == nil {
		t.byPrincipal = make(map[string]int)
	}
	if t.byPrincipal[principal] += n; t.byPrincipal[principal] <= 0 {
		delete(t.byPrincipal, principal)
	}
}

// slot is an initialize's place in the session limits, taken before
// mcp-go mints the session's ID; minted says it became a session's.
type slot struct {
	principal string
	minted    bool
}

type slotKey struct{}

// reserve takes a slot for a session of principal, or returns the message
// that refuses the initialize.
func (s *Server) reserve(principal string) (*slot, string) {
	t := &s.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counted >= s.cfg.MaxSessions {
		return nil, fmt.Sprintf("This server has reached its limit of %d open sessions; try again later, when idle sessions have ended (after %s without requests).",
			s.cfg.MaxSessions, humanDuration(s.cfg.SessionIdleTimeout))
	}
	if principal != "" && t.byPrincipal[principal] >= s.cfg.MaxSessionsPerPrincipal {
		return nil, fmt.Sprintf("You have reached this server's limit of %d open sessions per user; end sessions you no longer use (HTTP DELETE with their Mcp-Session-Id header) or wait until idle ones end (after %s without requests).",
			s.cfg.MaxSessionsPerPrincipal, humanDuration(s.cfg.SessionIdleTimeout))
	}
	t.count(principal, 1)
	return &slot{principal: principal}, ""
}

// release gives back the slot of an initialize that opened no session.
func (s *Server) release(sl *slot) {
	t := &s.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	if !sl.minted {
		t.count(sl.principal, -1)
	}
}

// add enters a session in the table.
func (s *Server) add(info *sessionInfo) {
	t := &s.sessions
	t.mu.Lock()
	if t.byID == nil {
		t.byID = make(map[string]*sessionInfo)
	}
	t.byID[info.id] = info
	t.mu.Unlock()
	s.countSession(1)
}

// remove forgets a session and gives back its place in the limits.
func (s *Server) remove(id string) {
	t := &s.sessions
	t.mu.Lock()
	info, ok := t.byID[id]
	if ok {
		delete(t.byID, id)
		if info.h != nil {
			t.count(info.principal, -1)
		}
	}
	t.mu.Unlock()
	if ok {
		s.countSession(-1)
	}
}

// onRegister records mcp-go's session: in the entry the table made when
// it minted the ID (Handler), or in a new one (stdio).
func (s *Server) onRegister(ctx context.Context, cs server.ClientSession) {
	id := cs.SessionID()
	if id == "" {
		return // a stateless request's session
	}
	info := s.sessions.get(id)
	if info == nil {
		ctx = s.callContext(ctx)
		info = &sessionInfo{id: id, tenant: llmtool.TenantFrom(ctx), principal: principalID(llmtool.PrincipalFrom(ctx))}
		s.add(info)
	}
	info.mu.Lock()
	info.session = cs
	info.mu.Unlock()
}

// sessionIDs is mcp-go's session ID manager for the sessions of a Handler,
// per request, so that Generate sees the initialize's principal, tenant
// and slot.
type sessionIDs struct{ h *httpHandler }

// ResolveSessionIdManager implements server.SessionIdManagerResolver.
func (m sessionIDs) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	return sessionIDManager{h: m.h, r: r}
}

type sessionIDManager struct {
	h *httpHandler
	r *http.Request // nil outside a request (mcp-go's sweeper)
}

// Generate mints the ID of a session being initialized and enters it in
// the table, with the principal and tenant of the request.
func (m sessionIDManager) Generate() string {
	s := m.h.s
	id := sessionIDPrefix + rand.Text()
	ctx := context.Background()
	if m.r != nil {
		ctx = m.r.Context()
	}
	ctx = s.callContext(ctx)
	info := &sessionInfo{id: id, tenant: llmtool.TenantFrom(ctx), principal: principalID(llmtool.PrincipalFrom(ctx)), h: m.h}
	s.sessions.mu.Lock()
	if sl, ok := ctx.Value(slotKey{}).(*slot); ok && !sl.minted {
		sl.minted = true
	} else { // not an initialize the handler admitted: count it all the same
		s.sessions.count(info.principal, 1)
	}
	s.sessions.mu.Unlock()
	s.add(info)
	return id
}

// Validate reports an ID the table does not hold (never minted, or ended)
// as an error, which mcp-go answers with 404.
func (m sessionIDManager) Validate(id string) (isTerminated bool, err error) {
	if info := m.h.s.sessions.get(id); info != nil && info.h == m.h {
		return false, nil
	}
	return false, fmt.Errorf("mcpadapter: unknown session %q", id)
}

// Terminate forgets a session the client ended with DELETE, or that
// mcp-go's sweeper ended.
func (m sessionIDManager) Terminate(id string) (isNotAllowed bool, err error) {
	if info := m.h.s.sessions.get(id); info != nil && info.h == m.h {
		m.h.s.remove(id)
	}
	return false, nil
}

// humanDuration writes d for people: "30 minutes", "1 hour", "90 seconds".
func humanDuration(d time.Duration) string {
	unit := func(n int64, name string) string {
		if n == 1 {
			return "1 " + name
		}
		return fmt.Sprintf("%d %ss", n, name)
	}
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return unit(int64(d/time.Minute), "minute")
	case d >= time.Second && d%time.Second == 0:
		return unit(int64(d/time.Second), "second")
	}
	return d.String()
}

func principalID(p *llmtool.Principal) string {
	if p == nil {
		return ""
	}
	return p.ID
}
