package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Some answers are decided by the registry but written by mcp-go, which has
// no way to take them from a handler:
//
//   - a tool the registry does not know gets mcp-go's invalid-params error
//     (-32602), whose message must be the registry's sentence ("Unknown
//     tool "x". Did you mean "y"?") rather than mcp-go's "tool 'x' not
//     found";
//   - a call under protocol revision 2026-07-28 that needs a capability the
//     client did not declare in _meta (sampling, elicitation) must get a
//     MissingRequiredClientCapabilityError (-32021, HTTP 400) naming it in
//     error.data.requiredCapabilities, where a handler can only return an
//     internal error (-32603);
//   - resources/read of a URI no resource has gets mcp-go's not-found error,
//     which should carry the URI in its data (SEP-2164) and the registry's
//     sentence.
//
// The same way, a tools/list page goes out with its tools pre-encoded: the
// result mcp-go encodes has no tools, and the notes hold the page's JSON
// (listing.go).
//
// The adapter notes these per JSON-RPC request ID while mcp-go serves the
// request, and puts them into mcp-go's answer as the transport writes it:
// the HTTP handlers through noteWriter, ServeStdio through lineNoteWriter,
// the adapter's own call path in httpcall.go directly. Everything else
// mcp-go writes passes through unchanged.

// callNotes are what the adapter learned about the tools/call requests
// served in one context: one HTTP request, or one stdio connection.
type callNotes struct {
	mu      sync.Mutex
	unknown map[string]string // request ID (JSON) → the registry's sentence
	missing map[string]string // request ID (JSON) → the capability not declared
	noURI   map[string]string // request ID (JSON) → a resources/read URI no resource has
	lists   map[string][]byte // request ID (JSON) → the pre-encoded tools of a tools/list page (listing.go)

	// Over mcp-go's HTTP transport, the SSE events written and the
	// notifications the call's handler sent, so that the handler returns
	// only when its notifications are on the wire (see awaitEvents).
	stream  bool // the answer goes through a noteWriter
	sent    atomic.Int32
	written atomic.Int32
	// wrote is signalled at each event written once awaitEvents waits:
	// most calls send nothing, and a channel is 96 bytes.
	wrote atomic.Pointer[chan struct{}]

	listen *listenInfo // the subscriptions/listen stream of this request (listen.go)
}

type notesKey struct{}

func withNotes(ctx context.Context, n *callNotes) context.Context {
	return context.WithValue(ctx, notesKey{}, n)
}

func notesFrom(ctx context.Context) *callNotes {
	n, _ := ctx.Value(notesKey{}).(*callNotes)
	return n
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

func (n *callNotes) noteUnknown(id any, sentence string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.unknown == nil {
		n.unknown = make(map[string]string)
	}
	n.unknown[idKey(id)] = sentence
}

func (n *callNotes) noteMissing(id any, capability string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.missing == nil {
		n.missing = make(map[string]string)
	}
	n.missing[idKey(id)] = capability
}

// noteNoResource records a resources/read of a URI that no resource has:
// its error gets the registry's sentence and, as SEP-2164 asks, the URI in
// its data.
func (n *callNotes) noteNoResource(id any, uri string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.noURI == nil {
		n.noURI = make(map[string]string)
	}
	n.noURI[idKey(id)] = uri
}

// noteList records the tools of a tools/list page as JSON: mcp-go's
// result goes out with no tools, and rewrite puts these bytes in.
func (n *callNotes) noteList(id any, tools []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lists == nil {
		n.lists = make(map[string][]byte)
	}
	n.lists[idKey(id)] = tools
}

func (n *callNotes) empty() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.unknown) == 0 && len(n.missing) == 0 && len(n.noURI) == 0 && len(n.lists) == 0
}

// The end of a tools/list response whose tools afterList took out, and
// the start of every response mcp-go encodes.
var (
	emptyToolsTail = []byte(`"tools":[]}}`)
	responseHead   = []byte(`{"jsonrpc":"2.0","id":`)
	resultKey      = []byte(`,"result":`)
)

// spliceList puts the pre-encoded tools noted for the tools/list response
// msg (one message, or one SSE event) into it, and reports whether it did.
func (n *callNotes) spliceList(msg []byte) ([]byte, bool) {
	n.mu.Lock()
	none := len(n.lists) == 0
	n.mu.Unlock()
	if none {
		return msg, false
	}
	end := len(bytes.TrimRight(msg, " \r\n"))
	if !bytes.HasSuffix(msg[:end], emptyToolsTail) {
		return msg, false
	}
	i := bytes.Index(msg, responseHead)
	if i < 0 {
		return msg, false
	}
	rest := msg[i+len(responseHead):]
	j := bytes.Index(rest, resultKey)
	if j < 0 {
		return msg, false
	}
	key := idKey(json.RawMessage(rest[:j]))
	n.mu.Lock()
	tools, ok := n.lists[key]
	delete(n.lists, key)
	n.mu.Unlock()
	if !ok {
		return msg, false
	}
	cut := end - len(emptyToolsTail)
	out := make([]byte, 0, len(msg)+len(tools))
	out = append(out, msg[:cut]...)
	out = append(out, `"tools":`...)
	out = append(out, tools...)
	out = append(out, "}}"...)
	return append(out, msg[end:]...), true
}

// rewrite puts the notes about the request msg answers into msg, an error
// response of mcp-go's, and returns the new message with the HTTP status
// that protocol revision 2026-07-28 prescribes for it (0 to keep mcp-go's).
// Other messages come back unchanged.
func (n *callNotes) rewrite(msg []byte) ([]byte, int) {
	if out, ok := n.spliceList(msg); ok {
		return out, 0
	}
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    any    `json:"data,omitempty"`
		} `json:"error"`
	}
	if json.Unmarshal(msg, &resp) != nil || resp.Error == nil || len(resp.ID) == 0 {
		return msg, 0
	}
	key := idKey(resp.ID)
	n.mu.Lock()
	sentence, unknown := n.unknown[key]
	capability, missing := n.missing[key]
	uri, noResource := n.noURI[key]
	delete(n.unknown, key)
	delete(n.missing, key)
	delete(n.noURI, key)
	n.mu.Unlock()
	status := 0
	switch {
	case missing && resp.Error.Code == mcp.INTERNAL_ERROR:
		resp.Error.Code = mcp.MISSING_REQUIRED_CLIENT_CAPABILITY
		resp.Error.Message = fmt.Sprintf("This tool needs the %s capability, which the request's _meta (io.modelcontextprotocol/clientCapabilities) does not declare; declare it to use this tool.", capability)
		resp.Error.Data = map[string]any{
			"requiredCapabilities": map[string]any{capability: map[string]any{}},
			"capability":           capability, // what mcp-go's client reads
		}
		status = http.StatusBadRequest
	case unknown && resp.Error.Code == mcp.INVALID_PARAMS:
		resp.Error.Message = sentence
	case noResource && (resp.Error.Code == mcp.INVALID_PARAMS || resp.Error.Code == mcp.RESOURCE_NOT_FOUND):
		resp.Error.Message = fmt.Sprintf("No resource has the URI %q. Read a resource the server lists, or a URI that matches one of its templates.", uri)
		resp.Error.Data = map[string]any{"uri": uri}
	default:
		return msg, 0
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return msg, 0
	}
	if bytes.HasSuffix(msg, []byte("\n")) {
		out = append(out, '\n')
	}
	return out, status
}

// noteWriter is the response writer of an HTTP request that holds a
// tools/call: it holds back a JSON answer's status until its body, so that
// rewrite can change both.
type noteWriter struct {
	http.ResponseWriter
	notes  *callNotes
	status int  // held back
	held   bool // a JSON status is held back

	// bare: serveModern's writer of a message without notes, which
	// serveMCP would have given mcp-go as it is (see CanStream).
	bare bool
}

func (w *noteWriter) WriteHeader(status int) {
	if !w.held && !w.notes.empty() {
		if mt, _, err := mime.ParseMediaType(w.Header().Get("Content-Type")); err == nil && mt == "application/json" {
			w.status, w.held = status, true
			return
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *noteWriter) Write(p []byte) (int, error) {
	if !w.held {
		out := p
		if w.notes.listen != nil {
			out = w.notes.listenAck(p) // the acknowledgement as the client's filter has it
		}
		out, _ = w.notes.spliceList(out) // a tools/list answered in an SSE event
		if _, err := w.ResponseWriter.Write(out); err != nil {
			return 0, err
		}
		if bytes.HasPrefix(p, []byte("event: ")) || bytes.HasPrefix(p, []byte("id: ")) {
			w.notes.written.Add(1)
			if c := w.notes.wrote.Load(); c != nil {
				select {
				case *c <- struct{}{}:
				default:
				}
			}
		}
		return len(p), nil
	}
	w.held = false
	out, status := w.notes.rewrite(p)
	if status == 0 {
		status = w.status
	}
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(status)
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush implements http.Flusher for mcp-go's SSE answers.
func (w *noteWriter) Flush() {
	if w.held {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *noteWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// lineNoteWriter is the output of ServeStdio: mcp-go writes each message
// as one line in one Write.
type lineNoteWriter struct {
	out   io.Writer
	notes *callNotes
}

func (w lineNoteWriter) Write(p []byte) (int, error) {
	if w.notes.empty() {
		return w.out.Write(p)
	}
	out, _ := w.notes.rewrite(p)
	if _, err := w.out.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// newStreamNotes returns the notes of an HTTP request that mcp-go's
// transport answers.
func newStreamNotes() *callNotes {
	return &callNotes{stream: true}
}

// awaitEvents waits, at most a second, until the notifications a call sent
// are written on its response stream. mcp-go's transport writes them from
// a goroutine of its own, and drops one it took off the session's channel
// but had not written when the call's response came (a race in mcp-go
// v1.2.1): the last progress notification of a call would often be lost.
func (n *callNotes) awaitEvents(ctx context.Context) {
	if n == nil || !n.stream || n.written.Load() >= n.sent.Load() {
		return // most calls send nothing: no timer, no channel
	}
	// The channel is published before written is read again, and the
	// writer adds to written before it looks for the channel: one of the
	// two sees the other, so no event goes unnoticed.
	wrote := n.wrote.Load()
	if wrote == nil {
		c := make(chan struct{}, 1)
		if !n.wrote.CompareAndSwap(nil, &c) {
			c = *n.wrote.Load()
		}
		wrote = &c
	}
	deadline := time.NewTimer(time.Second)
	defer deadline.Stop()
	for n.written.Load() < n.sent.Load() {
		select {
		case <-*wrote:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
