package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The transports' output: the one seam where the adapter wraps mcp-go.
// Everything mcp-go writes to a client goes through a writer of the
// adapter's, per HTTP request (httpWriter) and per stdio connection
// (lineWriter), which covers two things mcp-go v1.2.1 does not do:
//
//  1. Error codes. mcp-go answers every error a tool, prompt or resource
//     handler returns with -32603 "internal error" (server.handlerError),
//     and at 2026-07-28 with HTTP status 200. The adapter's handlers return
//     an *rpcError instead: a refusal of resources/read or prompts/get
//     (-32002 or -32602 for what does not exist, -32602 for malformed
//     arguments, -32003 for a refusal by policy, protection or
//     authorization), an unknown tool (-32602), a requestState refused
//     (-32602), a capability the client did not declare at 2026-07-28
//     (MissingRequiredClientCapabilityError, -32021). The OnError hook
//     notes it under the request's ID in the exchange of the request's
//     context, and the writer replaces the code, message and data of
//     mcp-go's error response to that ID, decoded as JSON, and at
//     2026-07-28 its HTTP status as mcp-go maps codes to statuses.
//  2. A call's notifications on the wire before its result. mcp-go's
//     streamable HTTP transport queues a session's notifications on one
//     channel (streamable_http.go:1800) that each stream of the session
//     reads: the forwarder of every POST (:819) and the GET stream (:1140;
//     with an event store, the session's listening pump,
//     streamable_http_resume.go:308, which reads on while no GET is
//     attached). A call's notification that another stream took is written
//     whenever that stream gets to it, often after the call's result, and a
//     client drops progress whose request is over. A POST forwarder without
//     a resumable stream drops one it took when the response came (:828).
//     Its stdio transport writes notifications from a goroutine of their
//     own (stdio.go:400), in a race with the response (stdio.go:860). So a
//     call waits, at most a second, until every notification it queued is
//     written (flushed) by whichever stream of its session took it: the
//     outbox of the session holds them, as mcp-go marshals them, and each
//     writer of the session tells it what it wrote. (A listen stream with
//     nothing subscribed waits for its first flush, its acknowledgement.)
//
// TestMCPGoSeams fails when mcp-go changes the first behaviour, stops
// putting a call's notifications on its session's GET stream, or writes
// them otherwise than outbox.add marshals them;
// TestSessionNotificationsBeforeResult, TestStdioNotificationsBeforeResult
// and TestModernProgress check that a call's notifications are all written
// before its result.

// Error codes the adapter answers with, besides JSON-RPC's and MCP's.
const (
	codeServerError = -32000 // JSON-RPC: implementation-defined server error
	codeDenied      = -32003 // the caller may not read this (policy, protection, authorization)
	codeSessionGone = -32001 // as the MCP TypeScript SDK answers with 404
)

// rpcError is a JSON-RPC error a handler of the adapter returns.
type rpcError struct {
	code    int
	message string
	data    map[string]any
	err     error // what it wraps, if anything
}

func (e *rpcError) Error() string { return e.message }
func (e *rpcError) Unwrap() error { return e.err }

// invalidParams returns a JSON-RPC invalid-params error.
func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{code: mcp.INVALID_PARAMS, message: fmt.Sprintf(format, args...)}
}

// missingCapability is the MissingRequiredClientCapabilityError of a
// request of 2026-07-28 that needs a capability its _meta does not declare.
func missingCapability(capability string) *rpcError {
	return &rpcError{code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
		message: fmt.Sprintf("This tool needs the %s capability, which the request's _meta (io.modelcontextprotocol/clientCapabilities) does not declare; declare it to use this tool.", capability),
		data: map[string]any{
			"requiredCapabilities": map[string]any{capability: map[string]any{}},
			"capability":           capability, // what mcp-go's client reads
		}}
}

// exchange is what the writer of one HTTP request or stdio connection
// knows of the requests it answers.
type exchange struct {
	mu     sync.Mutex
	errors map[string]*rpcError // by request ID (idKey)

	// modern: an HTTP request of 2026-07-28, whose JSON answer's status
	// follows its error's code. box: the notifications of its mcp-go
	// session, own unless it is a session of Handler's.
	modern bool
	box    *outbox
	own    outbox
}

type exchangeKey struct{}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

// exchangeFrom returns the exchange of ctx, nil without one (an
// in-process client of the mcp-go server). A nil exchange notes nothing
// and waits for nothing.
func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// idKey is the canonical JSON of a request ID, as mcp-go decodes it (a
// string or a float64) and as a response carries it.
func idKey(id any) string {
	if raw, ok := id.(json.RawMessage); ok {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return string(raw)
		}
		id = v
	}
	if rid, ok := id.(mcp.RequestId); ok {
		id = rid.Value()
	}
	b, _ := json.Marshal(id)
	return string(b)
}

// errorHooks note the rpcErrors of the adapter's handlers.
func (s *Server) errorHooks(hooks *server.Hooks) {
	hooks.AddOnError(func(ctx context.Context, id any, _ mcp.MCPMethod, _ any, err error) {
		var re *rpcError
		if id == nil || !errors.As(err, &re) {
			return
		}
		ex := exchangeFrom(ctx)
		if ex == nil {
			return
		}
		ex.mu.Lock()
		defer ex.mu.Unlock()
		if ex.errors == nil {
			ex.errors = make(map[string]*rpcError)
		}
		ex.errors[idKey(id)] = re
	})
}

func (ex *exchange) pending() bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return len(ex.errors) > 0
}

// rewrite returns msg, one JSON-RPC message, with the noted error of the
// request it answers, and the HTTP status of that error at 2026-07-28 (0
// for another message, which comes back unchanged).
func (ex *exchange) rewrite(msg []byte) ([]byte, int) {
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data,omitempty"`
		} `json:"error"`
	}
	if json.Unmarshal(msg, &resp) != nil || resp.Error == nil || resp.Error.Code != mcp.INTERNAL_ERROR {
		return msg, 0
	}
	key := idKey(resp.ID)
	ex.mu.Lock()
	re := ex.errors[key]
	delete(ex.errors, key)
	ex.mu.Unlock()
	if re == nil {
		return msg, 0
	}
	resp.Error.Code, resp.Error.Message, resp.Error.Data = re.code, re.message, re.data
	out, err := json.Marshal(resp)
	if err != nil {
		return msg, 0
	}
	return out, httpStatus(re.code)
}

// httpStatus is the HTTP status of a JSON-RPC error at 2026-07-28, as
// mcp-go maps it (server.httpStatusForJSONRPCError).
func httpStatus(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// rewriteEvents applies rewrite to the data of the SSE events in p.
func (ex *exchange) rewriteEvents(p []byte) []byte {
	lines := bytes.Split(p, []byte("\n"))
	changed := false
	for i, line := range lines {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			if out, status := ex.rewrite(data); status != 0 {
				lines[i] = append([]byte("data: "), out...)
				changed = true
			}
		}
	}
	if !changed {
		return p
	}
	return bytes.Join(lines, []byte("\n"))
}

// outbox holds the notifications queued on one mcp-go session (of
// Handler, or a request's own) that none of its streams has flushed yet,
// each as mcp-go writes it: the JSON of an SSE event's data.
type outbox struct {
	mu      sync.Mutex
	pending map[string]int // by JSON: how many are queued and not flushed
	flushes int            // flushes of the session's streams
	flushed chan struct{}  // closed and renewed at a flush; made by wait
}

// add notes a notification about to be queued, as mcp-go's
// SendNotificationToClient makes it, and returns its JSON ("" without an
// outbox).
func (b *outbox) add(method string, params map[string]any) string {
	if b == nil {
		return ""
	}
	note, _ := json.Marshal(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}})
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = make(map[string]int)
	}
	b.pending[string(note)]++
	return string(note)
}

// forget drops notes: flushed, not queued, or waited for long enough.
func (b *outbox) forget(notes ...string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range notes {
		if b.pending[n] > 1 {
			b.pending[n]--
		} else {
			delete(b.pending, n)
		}
	}
}

// match appends to seen the notes pending among the data of the SSE
// events in p (sse) or the message p (stdio).
func (b *outbox) match(seen []string, p []byte, sse bool) []string {
	if b == nil {
		return seen
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for rest := p; len(b.pending) > 0 && len(rest) > 0; {
		line, ok := rest, true
		if rest = nil; sse {
			line, rest, _ = bytes.Cut(line, []byte("\n"))
			line, ok = bytes.CutPrefix(line, []byte("data: "))
		}
		if ok && b.pending[string(line)] > 0 {
			seen = append(seen, string(line))
		}
	}
	return seen
}

// flush notes that what match saw is on the wire, and wakes the waiters.
func (b *outbox) flush(seen []string) {
	if b == nil {
		return
	}
	b.forget(seen...)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushes++
	if b.flushed != nil {
		close(b.flushed)
		b.flushed = nil
	}
}

// await waits until none of notes is pending (see wait), then forgets
// them.
func (b *outbox) await(ctx context.Context, notes []string) {
	if b != nil && len(notes) > 0 {
		b.wait(ctx, func() bool { return !slices.ContainsFunc(notes, func(n string) bool { return b.pending[n] > 0 }) })
		b.forget(notes...) // those not flushed in time
	}
}

// wait waits until done, called with b.mu held, reports true: at most a
// second, and while ctx lasts.
func (b *outbox) wait(ctx context.Context, done func() bool) {
	var deadline <-chan time.Time
	for {
		b.mu.Lock()
		if done() {
			b.mu.Unlock()
			return
		}
		if b.flushed == nil {
			b.flushed = make(chan struct{})
		}
		flushed := b.flushed
		b.mu.Unlock()
		if deadline == nil {
			timer := time.NewTimer(time.Second)
			defer timer.Stop()
			deadline = timer.C
		}
		select {
		case <-flushed:
			continue
		case <-deadline:
		case <-ctx.Done():
		}
		return
	}
}

// httpWriter is the response writer mcp-go answers an HTTP request with.
// It holds back the status of a JSON answer while an error is noted, so
// that rewrite can change both, and tells the outbox what it flushes.
type httpWriter struct {
	http.ResponseWriter
	ex     *exchange
	status int      // held back
	held   bool     // a JSON status is held back
	seen   []string // pending notes written, not yet flushed
}

func (w *httpWriter) WriteHeader(status int) {
	if !w.held && w.ex.pending() {
		if mt, _, err := mime.ParseMediaType(w.Header().Get("Content-Type")); err == nil && mt == "application/json" {
			w.status, w.held = status, true
			return
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *httpWriter) Write(p []byte) (int, error) {
	out := p
	if w.held {
		w.held = false
		var status int
		out, status = w.ex.rewrite(bytes.TrimRight(p, "\n"))
		if status == 0 || !w.ex.modern {
			status = w.status
		}
		if len(out) != len(p) {
			out = append(out, '\n')
		}
		w.Header().Del("Content-Length")
		w.ResponseWriter.WriteHeader(status)
	} else if w.ex.pending() {
		out = w.ex.rewriteEvents(p)
	}
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	w.seen = w.ex.box.match(w.seen, p, true)
	return len(p), nil
}

// Flush implements http.Flusher for mcp-go's SSE answers: each flush puts
// an event on the wire.
func (w *httpWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	w.ex.box.flush(w.seen)
	w.seen = w.seen[:0]
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *httpWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// lineWriter is the output of ServeStdio: mcp-go writes each message as
// one line in one Write, from several goroutines (a request's, the
// notifications', a request of the server's to the client), and
// checkedInput its refusals.
type lineWriter struct {
	mu  sync.Mutex // one line at a time
	out io.Writer
	ex  *exchange
}

func (w *lineWriter) Write(p []byte) (int, error) {
	msg, out := bytes.TrimRight(p, "\n"), p
	if w.ex.pending() {
		if re, status := w.ex.rewrite(msg); status != 0 {
			out = append(re, '\n')
		}
	}
	if err := w.line(out); err != nil {
		return 0, err
	}
	w.ex.box.flush(w.ex.box.match(nil, msg, false))
	return len(p), nil
}

// line writes one line whole.
func (w *lineWriter) line(p []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.out.Write(p)
	return err
}
