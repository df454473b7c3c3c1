package mcpadapter

import (
	"net/http"
	"sort"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Hooks into the server for the tests of package mcpadapter_test.

// MCPServer returns the underlying mcp-go server, for in-process clients
// and for sending notifications to a session directly.
func MCPServer(s *Server) *server.MCPServer { return s.mcp }

// SetClock sets the clock of the idle timeouts. Call it before serving.
func SetClock(s *Server, now func() time.Time) { s.now = now }

// Sweep ends the idle sessions now, as the sweeper does periodically.
func Sweep(s *Server) { s.sweep() }

// SessionIDs returns the IDs of the sessions in the table, sorted.
func SessionIDs(s *Server) []string {
	var ids []string
	s.sessions.Range(func(k, _ any) bool {
		ids = append(ids, k.(string))
		return true
	})
	sort.Strings(ids)
	return ids
}

// SessionCounts returns the open sessions counted for the limits: in total
// and per principal.
func SessionCounts(s *Server) (int, map[string]int) {
	s.counts.mu.Lock()
	defer s.counts.mu.Unlock()
	per := make(map[string]int, len(s.counts.byPrincipal))
	for k, v := range s.counts.byPrincipal {
		per[k] = v
	}
	return s.counts.total, per
}

// OpenCallStreams returns how many tools/call streams are open for
// resumption: those that recorded an event and have not ended.
func OpenCallStreams(s *Server) int {
	n := 0
	s.streams.Range(func(_, _ any) bool {
		n++
		return true
	})
	return n
}

// DirectHTTP reports whether h, of Handler or StatelessHandler, hands
// mcp-go the body of a 2026-07-28 POST through Handle (serveModern).
func DirectHTTP(h http.Handler) bool { return h.(*httpHandler).direct }
