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
	"sync"
	"sync/atomic"
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
//  2. Notifications lost at the end of an HTTP request. mcp-go's
//     streamable HTTP transport forwards a request's notifications from a
//     goroutine of its own, which drops one it took off the session's
//     channel but had not written when the handler's response came (its
//     forwarder finds the request done), unless the stream is resumable. So
//     the tools/call handler of a request that has no resumable stream (a
//     request of 2026-07-28, or of StatelessHandler) waits, at most a
//     second, until the SSE events it caused are flushed (awaitEvents).
//
// TestMCPGoSeams fails when mcp-go changes the first behaviour;
// TestModernProgress counts every notification of calls of 2026-07-28 and
// of StatelessHandler (if mcp-go stops dropping them, awaitEvents returns
// at once).

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
	// follows its error's code. await: the handler waits for its events
	// (an HTTP request without a resumable stream); sent counts the
	// notifications it queued, written the SSE events flushed.
	modern  bool
	await   bool
	sent    atomic.Int32
	written atomic.Int32
	wrote   atomic.Pointer[chan struct{}] // made by the first awaitEvents that waits
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

// queued counts a notification queued for the client.
func (ex *exchange) queued() {
	if ex != nil {
		ex.sent.Add(1)
	}
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

// awaitEvents waits, at most a second, until the notifications a request
// queued are flushed, on an HTTP request without a resumable stream (see
// above).
func (ex *exchange) awaitEvents(ctx context.Context) {
	if ex == nil || !ex.await || ex.written.Load() >= ex.sent.Load() {
		return // most calls send nothing: no timer, no channel
	}
	// The channel is published before written is read again, and the
	// writer adds to written before it looks for the channel: one of the
	// two sees the other, so no event goes unnoticed.
	wrote := ex.wrote.Load()
	if wrote == nil {
		c := make(chan struct{}, 1)
		if !ex.wrote.CompareAndSwap(nil, &c) {
			c = *ex.wrote.Load()
		}
		wrote = &c
	}
	deadline := time.NewTimer(time.Second)
	defer deadline.Stop()
	for ex.written.Load() < ex.sent.Load() {
		select {
		case <-*wrote:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// httpWriter is the response writer mcp-go answers an HTTP request with.
// It holds back the status of a JSON answer while an error is noted, so
// that rewrite can change both, and counts the SSE events mcp-go flushes.
type httpWriter struct {
	http.ResponseWriter
	ex     *exchange
	status int  // held back
	held   bool // a JSON status is held back
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
	return len(p), nil
}

// Flush implements http.Flusher for mcp-go's SSE answers: each flush puts
// an event on the wire.
func (w *httpWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	w.ex.written.Add(1)
	if c := w.ex.wrote.Load(); c != nil {
		select {
		case *c <- struct{}{}:
		default:
		}
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *httpWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// lineWriter is the output of ServeStdio: mcp-go writes each message as
// one line in one Write.
type lineWriter struct {
	out io.Writer
	ex  *exchange
}

func (w lineWriter) Write(p []byte) (int, error) {
	if !w.ex.pending() {
		return w.out.Write(p)
	}
	out, status := w.ex.rewrite(bytes.TrimRight(p, "\n"))
	if status == 0 {
		out = p
	} else {
		out = append(out, '\n')
	}
	if _, err := w.out.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
