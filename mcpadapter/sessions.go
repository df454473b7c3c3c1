package mcpadapter

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
)

// The sessions of Handler live in the adapter's session table, which is
// mcp-go's session ID manager too: an initialize gets a slot in the table
// before mcp-go mints the ID, so the limits hold under concurrent
// initializes; a session that stays idle for the idle timeout is ended
// through mcp-go's own DELETE path, which releases everything mcp-go keeps
// for it; and an ended ID is forgotten, not kept as a tombstone, so the
// memory of a session is released when it ends.

// Defaults of the session limits of Handler.
const (
	// DefaultMaxSessions bounds the sessions open at once, over all
	// principals.
	DefaultMaxSessions = 1000
	// DefaultMaxSessionsPerPrincipal bounds the sessions one principal has
	// open at once.
	DefaultMaxSessionsPerPrincipal = 100
	// DefaultSessionIdleTimeout is how long a session may go without a
	// request (and without an open stream or call) before it ends.
	DefaultSessionIdleTimeout = 30 * time.Minute
)

// sessionIDPrefix starts every session ID the adapter mints.
const sessionIDPrefix = "mcp-session-"

// errSessionUnknown is what the session table tells mcp-go of an ID it does
// not hold: mcp-go then answers 404, as for an ended session.
var errSessionUnknown = errors.New("mcpadapter: unknown session")

// sessionInfo is what the adapter knows of a connected session.
type sessionInfo struct {
	id        string
	scope     string
	principal string       // principal ID, "" if none
	h         *httpHandler // the handler that serves it; nil for stdio
	counted   bool         // counts toward the session limits

	lastActive atomic.Int64 // unix nanoseconds of the last request's start or end
	active     atomic.Int32 // requests and streams in progress

	mu      sync.Mutex
	session server.ClientSession // mcp-go's session, once registered
	ended   context.Context      // done when the session ends (made on demand)
	end     context.CancelFunc
	over    bool // the session ended
}

// endedContext returns a context that is done when the session ends: the
// calls of its resumable streams, which outlive their connections, end
// with it.
func (i *sessionInfo) endedContext() context.Context {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.ended == nil {
		i.ended, i.end = context.WithCancel(context.Background())
		if i.over {
			i.end()
		}
	}
	return i.ended
}

// markEnded ends the context of endedContext.
func (i *sessionInfo) markEnded() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.over = true
	if i.end != nil {
		i.end()
	}
}

func (i *sessionInfo) clientSession() server.ClientSession {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.session
}

func (i *sessionInfo) setClientSession(cs server.ClientSession) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.session = cs
}

// sessionCounts are the open sessions, in total and per principal, with
// the slots of initializes in progress.
type sessionCounts struct {
	mu          sync.Mutex
	total       int
	byPrincipal map[string]int
}

// sessionSlot is an initialize's place in the session limits, taken before
// mcp-go mints the session's ID.
type sessionSlot struct {
	principal string
	id        string // set when mcp-go minted the ID
}

type slotKey struct{}

// reserve takes a slot for a session of principal, or returns the message
// that refuses the initialize.
func (s *Server) reserve(principal string) (*sessionSlot, string) {
	c := &s.counts
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total >= s.cfg.maxSessions {
		return nil, fmt.Sprintf("This server has reached its limit of %d open sessions; try again later, when idle sessions have ended (after %s without requests).",
			s.cfg.maxSessions, humanDuration(s.cfg.idleTimeout))
	}
	if principal != "" && c.byPrincipal[principal] >= s.cfg.maxPerPrincipal {
		return nil, fmt.Sprintf("You have reached this server's limit of %d open sessions per user; end sessions you no longer use (HTTP DELETE with their Mcp-Session-Id header) or wait until idle ones end (after %s without requests).",
			s.cfg.maxPerPrincipal, humanDuration(s.cfg.idleTimeout))
	}
	s.count(principal, 1)
	return &sessionSlot{principal: principal}, ""
}

// count adds n to the sessions of principal; c.mu is held.
func (s *Server) count(principal string, n int) {
	c := &s.counts
	c.total += n
	if principal == "" {
		return
	}
	if c.byPrincipal == nil {
		c.byPrincipal = make(map[string]int)
	}
	c.byPrincipal[principal] += n
	if c.byPrincipal[principal] <= 0 {
		delete(c.byPrincipal, principal)
	}
}

// release gives back the slot of an initialize that opened no session.
func (s *Server) release(slot *sessionSlot) {
	s.counts.mu.Lock()
	defer s.counts.mu.Unlock()
	s.count(slot.principal, -1)
}

// removeSession forgets a session and gives back its place in the limits.
// It reports whether the session was there.
func (s *Server) removeSession(id string) bool {
	v, ok := s.sessions.LoadAndDelete(id)
	if !ok {
		return false
	}
	s.levels.Delete(id)
	s.countSession(-1)
	v.(*sessionInfo).markEnded()
	if info := v.(*sessionInfo); info.counted {
		s.counts.mu.Lock()
		s.count(info.principal, -1)
		s.counts.mu.Unlock()
	}
	return true
}

// idle reports whether a session has gone without requests for the idle
// timeout.
func (s *Server) idle(info *sessionInfo) bool {
	return info.h != nil && info.active.Load() == 0 &&
		s.now().Sub(time.Unix(0, info.lastActive.Load())) >= s.cfg.idleTimeout
}

// touch marks a session active now.
func (s *Server) touch(info *sessionInfo) { info.lastActive.Store(s.now().UnixNano()) }

// sweep ends the sessions that have been idle for the idle timeout.
func (s *Server) sweep() {
	s.sessions.Range(func(_, v any) bool {
		if info := v.(*sessionInfo); s.idle(info) {
			info.h.endSession(info.id, "idle")
		}
		return true
	})
}

// startSweeper starts, once, the goroutine that ends idle sessions, which
// stops at Close. A session past its idle timeout is refused at its next
// request even between sweeps; the sweeps release the memory of the
// sessions that never come back.
func (s *Server) startSweeper() {
	s.sweepOnce.Do(func() {
		interval := min(max(s.cfg.idleTimeout/2, time.Second), time.Minute)
		go func() {
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					s.sweep()
				case <-s.closed:
					return
				}
			}
		}()
	})
}

// endSession ends a session of h through mcp-go's DELETE path, which
// releases what mcp-go keeps for it, and forgets it.
func (h *httpHandler) endSession(id, why string) {
	if !h.s.removeSession(id) {
		return
	}
	h.s.cfg.logger.Debug("mcpadapter: session ended", "session", id, "why", why)
	h.dropMCP(id)
}

// dropMCP has mcp-go end a session and release its state, as for a DELETE.
func (h *httpHandler) dropMCP(id string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/", nil)
	if err != nil {
		return
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	h.mcp.ServeHTTP(&recorder{}, req)
}

// sessionIDs is mcp-go's session ID manager for the sessions of a Handler:
// the adapter's session table. mcp-go resolves it per request, so that
// Generate sees the initialize's slot.
type sessionIDs struct{ h *httpHandler }

// ResolveSessionIdManager implements server.SessionIdManagerResolver.
func (m sessionIDs) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	return sessionIDManager{h: m.h, r: r}
}

type sessionIDManager struct {
	h *httpHandler
	r *http.Request // nil outside a request
}

// Generate mints the ID of a session being initialized and enters it in the
// table, with the principal and scope of the request.
func (m sessionIDManager) Generate() string {
	s := m.h.s
	id := sessionIDPrefix + rand.Text()
	ctx := context.Background()
	if m.r != nil {
		ctx = m.r.Context()
	}
	ctx = s.callContext(ctx)
	info := &sessionInfo{id: id, scope: llmtool.ScopeFrom(ctx), principal: principalID(llmtool.PrincipalFrom(ctx)), h: m.h, counted: true}
	if slot, ok := ctx.Value(slotKey{}).(*sessionSlot); ok && slot.id == "" {
		slot.id = id
	} else { // not an initialize the handler admitted: count it all the same
		s.counts.mu.Lock()
		s.count(info.principal, 1)
		s.counts.mu.Unlock()
	}
	s.touch(info)
	s.sessions.Store(id, info)
	s.countSession(1)
	s.startSweeper()
	return id
}

// Validate reports an ID the table does not hold (never minted, ended or
// expired) as an error, which mcp-go answers with 404.
func (m sessionIDManager) Validate(id string) (isTerminated bool, err error) {
	if v, ok := m.h.s.sessions.Load(id); ok && v.(*sessionInfo).h == m.h {
		return false, nil
	}
	return false, fmt.Errorf("session %q: %w", id, errSessionUnknown)
}

// Terminate forgets a session the client ended with DELETE (or that
// mcp-go's own sweeper ended).
func (m sessionIDManager) Terminate(id string) (isNotAllowed bool, err error) {
	if v, ok := m.h.s.sessions.Load(id); ok && v.(*sessionInfo).h == m.h {
		m.h.s.removeSession(id)
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
