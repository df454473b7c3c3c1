package mcpadapter

import (
	"context"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A POST of protocol revision 2026-07-28 stands alone: no session, no
// batch, no server-to-client request. mcp-go serves it, and the adapter
// only gives it its notes (notes.go). serveMCP does that through mcp-go's
// ServeHTTP, which reads the body again and needs a copy of the request
// for the notes' context; serveModern hands mcp-go the body already read,
// through StreamableHTTPServer.Handle, with the notes, their writer, the
// call's mark and mcp-go's view of the request in one allocation.

// serveModern has mcp-go serve a request of revision 2026-07-28 or later,
// as serveMCP does.
func (h *httpHandler) serveModern(w http.ResponseWriter, r *http.Request, body []byte, msg *wireMessage) {
	if !h.direct || r.Method != http.MethodPost || body == nil {
		h.serveMCP(w, r, body, msg)
		return
	}
	m := &modernPost{Context: r.Context()}
	m.nw = noteWriter{ResponseWriter: w, notes: &m.notes, bare: true}
	if msg != nil {
		switch msg.method {
		case string(mcp.MethodToolsList):
			m.nw.bare = false // the page's tools go out pre-encoded (listing.go)
		case string(mcp.MethodToolsCall), string(mcp.MethodSubscriptionsListen), string(mcp.MethodResourcesRead):
			m.nw.bare = false
			m.notes.stream = true // as newStreamNotes
		}
	}
	m.hr = server.HTTPRequest{Method: r.Method, URL: r.URL, Header: r.Header, Body: body, Context: m}
	h.mcp.Handle(&m.nw, &m.hr)
}

// modernPost is a POST that serveModern hands mcp-go: the request's
// context with the adapter's notes and the call's mark on top (answered
// under notesKey and markKey, as serveMCP's withNotes and Server.calls
// would), the response writer and mcp-go's view of the request.
type modernPost struct {
	context.Context // the request's

	// notes are in the context of a tools/call, tools/list,
	// resources/read or subscriptions/listen (nw is not bare); for other
	// messages they stay empty, and nw writes through unchanged.
	notes callNotes
	mark  callMark // what beforeCall learned of the call
	nw    noteWriter
	hr    server.HTTPRequest
}

// Value answers the notes (of a message that has them) and the call's mark, else asks the
// request's context.
func (m *modernPost) Value(key any) any {
	switch key.(type) {
	case notesKey:
		if !m.nw.bare {
			return &m.notes
		}
	case markKey:
		return &m.mark
	}
	return m.Context.Value(key)
}

// noteWriter is also the server.HTTPResponseWriter of serveModern, with the
// methods mcp-go's adapter of an http.ResponseWriter has.

// CanStream reports whether the response can stream: mcp-go's adapter asks
// whether the writer serveMCP gives it flushes. A noteWriter always does;
// a bare one stands for the ResponseWriter itself.
func (w *noteWriter) CanStream() bool {
	if !w.bare {
		return true
	}
	_, ok := w.ResponseWriter.(http.Flusher)
	return ok
}

// SetWriteDeadline sets the deadline of the underlying connection's writes,
// as mcp-go's adapter does through http.ResponseController (which unwraps a
// noteWriter).
func (w *noteWriter) SetWriteDeadline(t time.Time) error {
	return http.NewResponseController(w.ResponseWriter).SetWriteDeadline(t)
}
