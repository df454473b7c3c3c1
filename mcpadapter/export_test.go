package mcpadapter

import (
	"sort"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Hooks into the server for the tests of package mcpadapter_test.

// MCPServer returns the underlying mcp-go server, for in-process clients
// and for sending notifications to a session directly.
func MCPServer(s *Server) *server.MCPServer { return s.mcp }

// SessionIDs returns the IDs of the sessions in the table, sorted.
func SessionIDs(s *Server) []string {
	var ids []string
	s.sessions.each(func(info *sessionInfo) { ids = append(ids, info.id) })
	sort.Strings(ids)
	return ids
}

// SessionCounts returns the open sessions counted for the limits: in total
// and per principal.
func SessionCounts(s *Server) (int, map[string]int) {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	per := make(map[string]int, len(s.sessions.byPrincipal))
	for k, v := range s.sessions.byPrincipal {
		per[k] = v
	}
	return s.sessions.counted, per
}

// SetClock sets the clock of requestStates. Call it before serving.
func SetClock(s *Server, now func() time.Time) { s.now = now }
