package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A tools/call POST of a stateful session is served here rather than by
// mcp-go's transport, which hands a call's notifications to whichever of the
// session's streams reads first: the call's own response stream or the
// session's GET stream. Progress could then arrive out of order, or after
// the response, when clients no longer listen for it. Here the call runs
// with a session of its own whose notifications, sampling and elicitation
// requests all go, in order, on the call's response stream, before the
// response, as the streamable HTTP transport recommends. Every other message
// goes to mcp-go.

// requestIDPrefix marks the IDs of the requests the adapter sends the
// client during a call, so their responses are told apart from those to
// mcp-go's own requests.
const requestIDPrefix = "llmtool-"

// clientRequest is a server-to-client request awaiting its response.
type clientRequest struct {
	session string // the session that must answer
	answer  chan rpcAnswer
}

type rpcAnswer struct {
	result json.RawMessage
	err    *mcp.JSONRPCErrorDetails
}

// serveCall serves msg (body, checked) if it is a tools/call whose client
// accepts an SSE stream, or the answer to one of the adapter's requests, in
// a session the adapter knows, and reports whether it did.
func (h *httpHandler) serveCall(w http.ResponseWriter, r *http.Request, body []byte, msg *wireMessage) bool {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" || h.stateless {
		return false
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return false // mcp-go refuses it
		}
	}
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" && !contains(h.versions, v) {
		return false // mcp-go refuses it
	}
	v, ok := h.s.sessions.Load(id)
	if !ok {
		return false // unknown or ended: mcp-go answers 404
	}
	info := v.(*sessionInfo)
	switch {
	case msg.method == "" && len(msg.ID) > 0 && bytes.HasPrefix(msg.ID, []byte(`"`+requestIDPrefix)):
		return h.answer(w, id, msg)
	case msg.method == string(mcp.MethodToolsCall) && len(msg.ID) > 0 && acceptsSSE(r):
		if cs := info.clientSession(); cs != nil && cs.Initialized() {
			h.call(w, r, cs, body)
			return true
		}
	}
	return false
}

// answer delivers the client's response to a request of the adapter.
func (h *httpHandler) answer(w http.ResponseWriter, session string, msg *wireMessage) bool {
	var key string
	if json.Unmarshal(msg.ID, &key) != nil {
		return false
	}
	var rpcErr *mcp.JSONRPCErrorDetails
	if len(msg.Error) > 0 && json.Unmarshal(msg.Error, &rpcErr) != nil {
		return false
	}
	v, ok := h.s.pending.Load(key)
	if !ok {
		return false
	}
	req := v.(*clientRequest)
	if req.session != session {
		writeError(w, http.StatusForbidden, "This response answers a request of another session.")
		return true
	}
	select {
	case req.answer <- rpcAnswer{result: msg.Result, err: rpcErr}:
	default: // answered twice: keep the first
	}
	w.WriteHeader(http.StatusAccepted)
	return true
}

// callRun is one tools/call over HTTP: its stream, connection, session,
// notes and pump, made in one allocation. It is also the call's context
// (the stream's context with the run's values on top), so CloseStream, the
// adapter's notes and the call's mark (beforeCall) find the call without a
// context value each.
type callRun struct {
	context.Context // the call's cancellation (see streamContext)

	// values is the request's context, whose values the call sees, when
	// Context does not derive from it (a resumable stream).
	values context.Context

	st    callStream
	conn  streamConn
	cs    callSession
	notes callNotes
	p     pump
	mark  callMark // what beforeCall learned of the call
	done  chan any // from the handler's side to the pump (see pump.run)
	body  []byte
	hctx  context.Context // the context the handler runs in
}

// Value answers the call's stream, notes and mark, else asks the call's
// context, then the request's.
func (c *callRun) Value(key any) any {
	switch key.(type) {
	case streamKey:
		return &c.st
	case notesKey:
		return &c.notes
	case markKey:
		return &c.mark
	}
	if v := c.Context.Value(key); v != nil || c.values == nil {
		return v
	}
	return c.values.Value(key)
}

// call runs a tools/call with a call session and streams what it sends
// (see callStream). On a resumable stream of revision 2025-11-25 a priming
// event opens the response, so the client can resume before any message.
func (h *httpHandler) call(w http.ResponseWriter, r *http.Request, base server.ClientSession, body []byte) {
	rev := ""
	if v, ok := base.(server.SessionWithProtocolVersion); ok {
		rev = v.ProtocolVersion()
	}
	// done holds, at most, the call session's opened, the connection's
	// connGone and the response: the handler's side never waits on it.
	run := &callRun{body: body, done: make(chan any, 3)}
	st := &run.st
	h.initCallStream(st, base.SessionID(), rev)
	conn := &run.conn
	conn.sw.w, conn.notify = w, run.done
	st.conn = conn
	cs := &run.cs
	*cs = callSession{ClientSession: base, h: h, done: run.done}
	st.cs = cs
	run.Context, run.values, run.p.cancel = h.streamContext(r, st)
	ctx := h.s.mcp.WithContext(run, cs)
	ctx = server.WithSupportedProtocolVersions(ctx, h.versions)
	run.hctx = ctx
	h.s.handlers.run(run)
	p := &run.p
	p.st, p.cs, p.done = st, cs, run.done
	if st.polling {
		p.startPrimer()
	}
	// This goroutine streams the call until its response is written. If
	// the connection goes first (the client left, or the stream moved to a
	// GET or was closed by CloseStream) the call goes on, and a goroutine
	// of its own streams the rest into the stream's record.
	if p.run(true, r.Context().Done()) {
		return
	}
	if r.Context().Err() != nil {
		st.detach(conn)
	}
	go p.run(false, nil)
}

// handle runs the call in mcp-go and hands its response to the pump: a
// result as mcp-go made it (the pump encodes it onto the connection), an
// error encoded, with the adapter's notes (see callNotes.rewrite).
func (c *callRun) handle() {
	msg := c.cs.h.s.mcp.HandleMessage(c.hctx, c.body)
	if _, ok := msg.(mcp.JSONRPCResponse); ok {
		c.done <- msg
		return
	}
	b, err := json.Marshal(msg)
	if err != nil {
		b = internalError()
	}
	b, _ = c.notes.rewrite(b)
	c.done <- json.RawMessage(b)
}

// internalError is the response the adapter sends when mcp-go's cannot be
// encoded.
func internalError() json.RawMessage {
	return (&rpcError{code: codeInternalError, message: "Encoding the response failed."}).response()
}

// What the handler's side sends the pump on callRun.done, besides the
// response.
type (
	opened   struct{} // the call session made its channels (callSession.open)
	connGone struct{} // the POST's connection no longer carries the stream (streamConn.close)
)

// pump moves a call's notifications, requests and response, in order,
// onto its stream.
type pump struct {
	st     *callStream
	cs     *callSession
	cancel context.CancelFunc             // ends the call's context, after the response
	done   <-chan any                     // opened, connGone, then the response
	notes  <-chan mcp.JSONRPCNotification // nil until opened
	reqs   <-chan mcp.JSONRPCRequest      // nil until opened

	// At revision 2025-11-25, primer primes the stream after streamRetry
	// of silence (see callStream.prime). Its timer comes from
	// Server.primers and goes back there after the response: a timer is
	// an allocation, and most calls answer well within streamRetry.
	primer *time.Timer
	primed <-chan time.Time // primer's channel; nil once received
}

// startPrimer starts the pump's primer.
func (p *pump) startPrimer() {
	t, _ := p.st.srv.primers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(streamRetry)
	} else {
		t.Reset(streamRetry)
	}
	p.primer, p.primed = t, t.C
}

// stopPrimer stops the pump's primer and gives its timer back. A stopped
// timer's channel receives no stale time after Reset.
func (p *pump) stopPrimer() {
	if t := p.primer; t != nil {
		p.primer, p.primed = nil, nil
		t.Stop()
		p.st.srv.primers.Put(t)
	}
}

// run streams until the response is delivered (and reports true), or, on
// the POST's goroutine (onPost), until its connection no longer carries
// the stream or left is closed (false).
func (p *pump) run(onPost bool, left <-chan struct{}) bool {
	for {
		select {
		case n := <-p.notes:
			p.note(n)
		case req := <-p.reqs:
			p.drain() // the handler's notifications before the request go first
			p.st.deliver(req, false)
		case v := <-p.done:
			switch v.(type) {
			case opened:
				p.notes, p.reqs = p.cs.notes, p.cs.reqs
				continue
			case connGone:
				if onPost {
					return false
				}
				continue
			}
			p.drain()
			p.st.deliver(v, true)
			p.stopPrimer()
			p.cancel()
			return true
		case <-p.primed:
			p.primed = nil
			p.st.prime()
		case <-left:
			return false
		}
	}
}

func (p *pump) note(n mcp.JSONRPCNotification) {
	if n.Method == closeMarker {
		p.st.closeConn()
		return
	}
	p.st.deliver(n, false)
}

// drain delivers the notifications queued so far. (The channels were
// opened before what the handler did last, and opened was received before
// it: done is in order.)
func (p *pump) drain() {
	for {
		select {
		case n := <-p.notes:
			p.note(n)
		default:
			return
		}
	}
}

func acceptsSSE(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		if strings.Contains(a, "text/event-stream") {
			return true
		}
	}
	return false
}

// sseWriter writes server-sent events, switching the response to
// text/event-stream at the first one.
type sseWriter struct {
	w       http.ResponseWriter
	started bool
	broken  bool
}

// start writes the headers of an SSE response, once.
func (s *sseWriter) start() {
	if s.started {
		return
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

// event writes one message, with its ID when it has one.
func (s *sseWriter) event(id string, data []byte) {
	if s.broken {
		return
	}
	s.start()
	if id != "" {
		s.write("id: %s\n", id)
	}
	s.write("event: message\ndata: %s\n\n", data)
	s.flush()
}

// prime writes the priming event: an ID, the reconnection delay and empty
// data.
func (s *sseWriter) prime(id string) {
	s.start()
	s.write("id: %s\nretry: %d\ndata: \n\n", id, streamRetry.Milliseconds())
	s.flush()
}

// retry writes the reconnection delay, before the server closes the
// connection of a stream that goes on.
func (s *sseWriter) retry() {
	s.start()
	s.write("retry: %d\n\n", streamRetry.Milliseconds())
	s.flush()
}

func (s *sseWriter) write(format string, args ...any) {
	if s.broken {
		return
	}
	if _, err := fmt.Fprintf(s.w, format, args...); err != nil {
		s.broken = true
	}
}

func (s *sseWriter) flush() {
	if f, ok := s.w.(http.Flusher); ok && !s.broken {
		f.Flush()
	}
}

// callSession is the session of one tools/call over HTTP: the client's
// session, with the call's response stream for notifications and requests.
type callSession struct {
	server.ClientSession
	h *httpHandler

	// The channels to the response stream, made by the first
	// NotificationChannel or request: most calls send nothing, and a
	// buffer of 256 notifications is 12 KB to clear. done is told once
	// they are set.
	once  sync.Once
	notes chan mcp.JSONRPCNotification
	reqs  chan mcp.JSONRPCRequest // requests, after the notifications before them
	done  chan<- any
}

// notesBuffer is how many notifications a call's stream holds before
// mcp-go drops more (as it does on its own streams).
const notesBuffer = 256

// open makes the channels to the call's stream, once.
func (c *callSession) open() {
	c.once.Do(func() {
		c.notes = make(chan mcp.JSONRPCNotification, notesBuffer)
		c.reqs = make(chan mcp.JSONRPCRequest)
		c.done <- opened{}
	})
}

// NotificationChannel returns the call's own stream. mcp-go sends without
// blocking and drops what does not fit, as it does on its own streams.
func (c *callSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	c.open()
	return c.notes
}

// request sends a request to the client on the call's stream and waits for
// the response, which the client POSTs.
func (c *callSession) request(ctx context.Context, method mcp.MCPMethod, params any) (json.RawMessage, error) {
	key := fmt.Sprintf("%s%d", requestIDPrefix, c.h.s.nextID.Add(1))
	req := &clientRequest{session: c.SessionID(), answer: make(chan rpcAnswer, 1)}
	c.h.s.pending.Store(key, req)
	defer c.h.s.pending.Delete(key)
	msg := mcp.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(key), Request: mcp.Request{Method: string(method)}, Params: params}
	c.open()
	select {
	case c.reqs <- msg:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-req.answer:
		if a.err != nil {
			return nil, fmt.Errorf("the client answered %s with error %d: %s", method, a.err.Code, a.err.Message)
		}
		return a.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// RequestSampling implements server.SessionWithSampling on the call's stream.
func (c *callSession) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	raw, err := c.request(ctx, mcp.MethodSamplingCreateMessage, req.CreateMessageParams)
	if err != nil {
		return nil, err
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the sampling result: %w", err)
	}
	return &res, nil
}

// RequestElicitation implements server.SessionWithElicitation on the call's
// stream.
func (c *callSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	raw, err := c.request(ctx, mcp.MethodElicitationCreate, req.Params)
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the elicitation result: %w", err)
	}
	return &res, nil
}

// ListRoots implements server.SessionWithRoots on the call's stream.
func (c *callSession) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	raw, err := c.request(ctx, mcp.MethodListRoots, nil)
	if err != nil {
		return nil, err
	}
	var res mcp.ListRootsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the roots: %w", err)
	}
	return &res, nil
}

// The client's session keeps its log level, client info and protocol
// version; the call session forwards to it.

func (c *callSession) SetLogLevel(level mcp.LoggingLevel) {
	if s, ok := c.ClientSession.(server.SessionWithLogging); ok {
		s.SetLogLevel(level)
	}
}

func (c *callSession) GetLogLevel() mcp.LoggingLevel {
	if s, ok := c.ClientSession.(server.SessionWithLogging); ok {
		return s.GetLogLevel()
	}
	return mcp.LoggingLevelError
}

func (c *callSession) GetClientInfo() mcp.Implementation {
	if s, ok := c.ClientSession.(server.SessionWithClientInfo); ok {
		return s.GetClientInfo()
	}
	return mcp.Implementation{}
}

func (c *callSession) SetClientInfo(info mcp.Implementation) {
	if s, ok := c.ClientSession.(server.SessionWithClientInfo); ok {
		s.SetClientInfo(info)
	}
}

func (c *callSession) GetClientCapabilities() mcp.ClientCapabilities {
	if s, ok := c.ClientSession.(server.SessionWithClientInfo); ok {
		return s.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

func (c *callSession) SetClientCapabilities(caps mcp.ClientCapabilities) {
	if s, ok := c.ClientSession.(server.SessionWithClientInfo); ok {
		s.SetClientCapabilities(caps)
	}
}

func (c *callSession) ProtocolVersion() string {
	if s, ok := c.ClientSession.(server.SessionWithProtocolVersion); ok {
		return s.ProtocolVersion()
	}
	return ""
}
