package mcpadapter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// streamRetry is the reconnection delay the adapter asks of clients (the
// SSE retry field) on the streams of revision 2025-11-25, which a client
// resumes by polling when the server closes the connection.
const streamRetry = time.Second

// callStreamPrefix starts the store IDs of the adapter's tools/call streams,
// telling them apart from mcp-go's.
const callStreamPrefix = "call-"

// callStream is the response stream of one tools/call that the adapter
// serves (httpcall.go): the events the call sends, in order, ending with
// its response. With an event store, every event is recorded before it is
// written and the stream outlives its connection: the call runs on when
// the connection breaks or is closed (CloseStream), and a GET with
// Last-Event-ID takes the stream over, the missed events first.
//
// Events are recorded and written under mu, and a connection that takes
// the stream over gets the replay and is attached under mu too, so each
// event reaches the client once: in the replay or live.
type callStream struct {
	store   *eventStore // nil: events carry no IDs and the stream cannot be resumed
	srv     *Server
	session string
	polling bool         // revision 2025-11-25: a priming event opens it, and the server may close its connection
	cs      *callSession // its notification channel: the call's notifications, in order

	mu       sync.Mutex
	id       string      // the stream's ID in the store and in Server.streams, from its first event
	conn     *streamConn // where events are written; nil while none is attached
	ended    bool        // the response is recorded
	streamed bool        // an event with an ID was recorded: the client may resume
}

// streamConn is one HTTP response that a callStream writes to. When the
// stream no longer writes there, gone is closed (a GET that resumed the
// stream) or notify is sent connGone (the call's POST, whose pump waits on
// the call's channel: see pump.run).
type streamConn struct {
	sw     sseWriter
	gone   chan struct{}
	notify chan<- any
	once   sync.Once
}

// newStreamConn returns the connection of a GET that resumes a stream.
func newStreamConn(w http.ResponseWriter) *streamConn {
	return &streamConn{sw: sseWriter{w: w}, gone: make(chan struct{})}
}

func (c *streamConn) close() {
	c.once.Do(func() {
		if c.gone != nil {
			close(c.gone)
		}
		if c.notify != nil {
			c.notify <- connGone{}
		}
	})
}

type streamKey struct{}

// CloseStream closes the HTTP connection of the response stream of the
// tools/call in ctx (a handler's *llmtool.ReadCtx or *llmtool.WriteCtx),
// after the notifications the call sent so far, without ending the stream
// or the call, and reports whether it will. The client reconnects with a
// GET carrying Last-Event-ID, as the streamable HTTP transport of revision
// 2025-11-25 has it (SEP-1699), and gets the events it missed, then the
// rest of the call and its result. A server closes a long call's
// connection so as not to hold it open, such as behind proxies that end
// long requests.
//
// It does nothing, and reports false, outside such a stream: in a call
// of an earlier revision (whose clients were sent no priming event to
// resume from), of 2026-07-28, over stdio or StatelessHandler, with
// Options.ReplayEvents negative, or when the connection is already gone.
func CloseStream(ctx context.Context) bool {
	st, _ := ctx.Value(streamKey{}).(*callStream)
	if st == nil || !st.polling {
		return false
	}
	st.mu.Lock()
	open := st.conn != nil && !st.ended
	st.mu.Unlock()
	if !open {
		return false
	}
	// The pump closes the connection when it meets this in the call's
	// queue, after what the handler sent before.
	select {
	case st.cs.NotificationChannel() <- mcp.JSONRPCNotification{Notification: mcp.Notification{Method: closeMarker}}:
		return true
	case <-ctx.Done():
		return false
	}
}

// closeMarker is the method of the marker CloseStream queues; it never
// reaches the wire.
const closeMarker = "llmtool/close-connection"

// closeConn writes the reconnection delay and closes the attached
// connection, leaving the stream open.
func (st *callStream) closeConn() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if c := st.conn; c != nil && !st.ended {
		st.primeLocked()
		c.sw.retry()
		c.close()
		st.conn = nil
	}
}

// prime records and writes the priming event: an ID and no data, which
// the client can resume from before any message came. A call's stream is
// primed lazily, before its first event, before CloseStream closes its
// connection, or after streamRetry of silence: a call that answers at once
// with nothing before (most calls) answers with a plain JSON body, as
// cheaply as on a stream that cannot be resumed.
func (st *callStream) prime() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.ended {
		st.primeLocked()
	}
}

func (st *callStream) primeLocked() {
	if !st.polling || st.streamed {
		return
	}
	id, err := st.storeLocked(nil)
	if err != nil {
		return
	}
	st.streamed = true
	if st.conn != nil {
		st.conn.sw.prime(id)
	}
}

// storeLocked records an event of the stream (nil data: the priming
// event) and returns its ID. The stream's first event gives it its ID and
// puts it where a GET with Last-Event-ID finds it (serveResume): a stream
// with no event has nothing to resume from.
func (st *callStream) storeLocked(data json.RawMessage) (string, error) {
	if st.id == "" {
		st.id = callStreamPrefix + strconv.FormatInt(st.srv.nextID.Add(1), 10)
		st.srv.streams.Store(st.id, st)
	}
	return st.store.StoreEvent(context.Background(), st.session, st.id, data)
}

// forgetLocked takes the ended stream, its response recorded, out of
// Server.streams: a GET with Last-Event-ID then replays it from the store
// (serveResume).
func (st *callStream) forgetLocked() {
	if st.id != "" {
		st.srv.streams.Delete(st.id)
	}
}

// deliver records a message of the call and writes it to the attached
// connection; last marks the call's response, which ends the stream. A
// message is an encoded json.RawMessage, or a value to encode.
func (st *callStream) deliver(msg any, last bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !last {
		st.primeLocked()
	}
	// A response with nothing before it goes out as plain JSON, with no ID
	// to resume from: recording it would serve no one.
	record := st.store != nil && (!last || st.streamed)
	if last {
		st.ended = true
	}
	c := st.conn
	if last && !record && c != nil && !c.sw.started {
		// Nothing went on the stream: the response is a JSON body, encoded
		// straight onto the connection (most calls).
		st.forgetLocked()
		h := c.sw.w.Header()
		h.Set("Content-Type", "application/json")
		c.sw.w.WriteHeader(http.StatusOK)
		writeJSONLine(c.sw.w, msg)
		c.close()
		st.conn = nil
		return
	}
	data, ok := msg.(json.RawMessage)
	if !ok {
		var err error
		if data, err = json.Marshal(msg); err != nil {
			if !last {
				return
			}
			data = internalError()
		}
	}
	id := ""
	if record {
		id, _ = st.storeLocked(data)
		st.streamed = true
	}
	if last {
		st.forgetLocked()
	}
	if c == nil {
		return
	}
	if last && !c.sw.started {
		// Nothing went on this connection: the response is a JSON body.
		h := c.sw.w.Header()
		h.Set("Content-Type", "application/json")
		c.sw.w.WriteHeader(http.StatusOK)
		_, _ = c.sw.w.Write(append(data, '\n'))
	} else {
		c.sw.event(id, data)
	}
	if last || c.sw.broken {
		c.close()
		st.conn = nil
	}
}

// writeJSONLine writes msg, an encoded json.RawMessage or a value to
// encode, and a newline: the bytes of json.Marshal, without copying them
// out of the encoder's buffer. A value that cannot be encoded is answered
// with an internal error.
func writeJSONLine(w io.Writer, msg any) {
	if data, ok := msg.(json.RawMessage); ok {
		_, _ = w.Write(append(data, '\n'))
		return
	}
	if json.NewEncoder(w).Encode(msg) != nil { // Encode writes nothing when it fails
		_, _ = w.Write(append(internalError(), '\n'))
	}
}

// detach stops writing to c, whose request ended.
func (st *callStream) detach(c *streamConn) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.conn == c {
		st.conn = nil
	}
	c.close()
}

// resume serves a GET that carries Last-Event-ID on this stream: the
// events after it, then, if the call is still running, the rest of the
// stream on this connection, which takes it over from any other.
func (st *callStream) resume(w http.ResponseWriter, r *http.Request, lastEventID string) {
	c := newStreamConn(w)
	c.sw.start()
	c.sw.flush()
	st.mu.Lock()
	_, err := st.store.ReplayEventsAfter(r.Context(), st.session, lastEventID, func(id string, msg json.RawMessage) error {
		c.sw.event(id, msg)
		return nil
	})
	if err != nil || st.ended || c.sw.broken {
		st.mu.Unlock()
		return
	}
	if old := st.conn; old != nil {
		old.close()
	}
	st.conn = c
	st.mu.Unlock()
	select {
	case <-c.gone:
	case <-r.Context().Done():
		st.detach(c)
	}
}

// serveResume serves a GET with Last-Event-ID of a session: a stream of
// the adapter's is resumed here, and mcp-go resumes its own from the same
// store. An ID the store cannot resume from gets 400 with a JSON-RPC error
// saying why: the events after it cannot be redelivered, and the client
// must not take a fresh stream for the one it lost.
func (h *httpHandler) serveResume(w http.ResponseWriter, r *http.Request, session, lastEventID string) {
	streamID, err := h.s.events.stream(session, lastEventID)
	if err != nil {
		writeRPC(w, http.StatusBadRequest, &rpcError{code: codeInvalidRequest, message: replayRefusal(lastEventID, err)})
		return
	}
	if v, ok := h.s.streams.Load(streamID); ok && v.(*callStream).session == session {
		v.(*callStream).resume(w, r, lastEventID)
		return
	}
	if len(streamID) > len(callStreamPrefix) && streamID[:len(callStreamPrefix)] == callStreamPrefix {
		// A call that ended: its events are all in the store.
		sw := &sseWriter{w: w}
		sw.start()
		_, _ = h.s.events.ReplayEventsAfter(r.Context(), session, lastEventID, func(id string, msg json.RawMessage) error {
			sw.event(id, msg)
			return nil
		})
		return
	}
	h.mcp.ServeHTTP(w, r)
}

// initCallStream opens st, the stream of a tools/call of a session of
// revision rev, resumable when the revision has resumability and the store
// is on.
func (h *httpHandler) initCallStream(st *callStream, session, rev string) {
	st.session, st.srv = session, h.s
	if h.s.events != nil && rev >= mcp.ProtocolVersion20250326 {
		st.store = h.s.events
		st.polling = rev >= mcp.ProtocolVersion20251125
	}
}

// streamContext returns the context a tools/call of st runs in, and the
// context whose values it has when that one does not carry them (see
// callRun.Value). On a resumable stream the call does not end with the
// POST's connection, which may break or be closed while the call goes on,
// but with the session (or notifications/cancelled, which mcp-go handles):
// its context is the session's, with the request's values.
func (h *httpHandler) streamContext(r *http.Request, st *callStream) (ctx, values context.Context, cancel context.CancelFunc) {
	if st.store == nil {
		ctx, cancel = context.WithCancel(r.Context())
		return ctx, nil, cancel
	}
	parent := context.Background()
	if v, ok := h.s.sessions.Load(st.session); ok {
		parent = v.(*sessionInfo).endedContext()
	}
	ctx, cancel = context.WithCancel(parent)
	return ctx, r.Context(), cancel
}
