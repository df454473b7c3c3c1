package mcpadapter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The HTTP handlers check the shape of every JSON-RPC message before mcp-go
// sees it, since mcp-go serves a request whose id is an object or a boolean
// and answers a message with an id but neither method nor result nor error
// with silence. They also serve the JSON-RPC batches of protocol revision
// 2025-03-26, which mcp-go does not parse, one message at a time through
// mcp-go, and refuse batches in the revisions that removed them.

// JSON-RPC error codes the adapter answers with itself.
const (
	codeInvalidRequest  = -32600 // JSON-RPC: not a valid request object
	codeInternalError   = -32603 // JSON-RPC: internal error
	codeServerError     = -32000 // JSON-RPC: implementation-defined server error
	codeSessionNotFound = -32001 // as the MCP TypeScript SDK answers with 404
)

// batchRevision is the one protocol revision with JSON-RPC batches:
// 2025-03-26 added them and 2025-06-18 removed them.
const batchRevision = mcp.ProtocolVersion20250326

// wireMessage is the part of a JSON-RPC message that decides whether it is
// valid and who serves it. A member that is absent stays nil; one sent as
// null holds "null".
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`

	method string // Method, decoded
}

// rpcError is a JSON-RPC error response the adapter sends itself.
type rpcError struct {
	id      json.RawMessage // nil for null
	code    int
	message string
}

func (e *rpcError) response() json.RawMessage {
	id := e.id
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, map[string]any{"code": e.code, "message": e.message}})
	return b
}

// invalid returns an Invalid Request error about message id.
func invalid(id json.RawMessage, format string, args ...any) *rpcError {
	return &rpcError{id: id, code: codeInvalidRequest, message: "Invalid Request: " + fmt.Sprintf(format, args...)}
}

// checkMessage decodes one JSON-RPC message and checks that it is a
// request (method and an id that is a string or an integer, as MCP
// requires), a notification (method, no id) or a response (an id and
// exactly one of result and error). The error echoes the message's id when
// the id itself is valid, and is null otherwise, as JSON-RPC prescribes.
func checkMessage(raw json.RawMessage) (wireMessage, *rpcError) {
	return checkWireMessage(raw, json.Valid(raw))
}

// checkValidMessage is checkMessage of raw known to be valid JSON.
func checkValidMessage(raw json.RawMessage) (wireMessage, *rpcError) {
	return checkWireMessage(raw, true)
}

func checkWireMessage(raw json.RawMessage, valid bool) (wireMessage, *rpcError) {
	var m wireMessage
	if kind := jsonKind(raw); kind != "an object" {
		return m, invalid(nil, "a JSON-RPC message is a JSON object, not %s.", kind)
	}
	scanned := false
	if valid {
		m, scanned = scanMessage(raw)
	}
	if !scanned {
		var err error
		if m, err = decodeMessage(raw); err != nil {
			return m, invalid(nil, "the message cannot be decoded: %v.", err)
		}
	}
	var id json.RawMessage // the id to echo
	if m.ID != nil {
		switch kind := jsonKind(m.ID); {
		case kind == "a string", kind == "a number" && isInteger(m.ID):
			id = m.ID
		case kind == "null" && m.Method == nil && m.Error != nil:
			// an error response to a message whose id the client could not read
		case kind == "a number":
			return m, invalid(nil, `"id" must be a string or an integer, not a fractional or out-of-range number.`)
		default:
			return m, invalid(nil, `"id" must be a string or an integer, not %s.`, kind)
		}
	}
	hasResult, hasError := m.Result != nil, m.Error != nil
	switch {
	case m.Method != nil:
		method, ok := decodeString(m.Method)
		if !ok {
			return m, invalid(id, `"method" must be a string, not %s.`, jsonKind(m.Method))
		}
		m.method = method
		if hasResult || hasError {
			return m, invalid(id, `a message has a "method" (a request or notification) or a "result" or "error" (a response), not both.`)
		}
	case m.ID == nil:
		return m, invalid(nil, `a message needs a "method" (a request or notification), or an "id" with a "result" or "error" (a response).`)
	case !hasResult && !hasError:
		return m, invalid(id, `a message with an "id" needs a "method" (a request) or a "result" or "error" (a response).`)
	case hasResult && hasError:
		return m, invalid(id, `a response has a "result" or an "error", not both.`)
	}
	return m, nil
}

// decodeMessage decodes raw with encoding/json: the reference that
// scanMessage follows.
func decodeMessage(raw json.RawMessage) (wireMessage, error) {
	var m wireMessage
	err := json.Unmarshal(raw, &m)
	return m, err
}

// decodeString decodes a JSON value into a string as json.Unmarshal does
// (null leaves it empty), and reports whether it could.
func decodeString(raw json.RawMessage) (string, bool) {
	if s, ok := plainString(raw); ok {
		return s, true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// plainString returns the text of raw, a JSON string of printable ASCII
// without escapes (a method name), and reports whether it was one.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	text := raw[1 : len(raw)-1]
	for _, c := range text {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(text), true
}

// scanMessage reads the members of raw, a valid JSON object, into a
// wireMessage as json.Unmarshal does (the last of a repeated member wins;
// a member's bytes are its value's, without the space around it), but
// without decoding or copying anything: the members are slices of raw. It
// reports false, leaving the message to decodeMessage, for what it does
// not follow: a key with an escape or a byte outside ASCII, or one that
// names a member only case-insensitively (encoding/json matches keys so,
// with Unicode's case folding).
func scanMessage(raw []byte) (m wireMessage, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return m, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return m, true
	}
	for i < len(raw) && raw[i] == '"' {
		end := i + 1
		for end < len(raw) && raw[end] != '"' {
			if c := raw[end]; c == '\\' || c >= 0x80 {
				return m, false
			}
			end++
		}
		key := raw[i+1 : min(end, len(raw))]
		i = skipSpace(raw, end+1)
		if i >= len(raw) || raw[i] != ':' {
			return m, false
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if vend <= i {
			return m, false
		}
		val := json.RawMessage(raw[i:vend:vend])
		switch string(key) {
		case "id":
			m.ID = val
		case "method":
			m.Method = val
		case "result":
			m.Result = val
		case "error":
			m.Error = val
		default:
			for _, name := range [...]string{"id", "method", "result", "error"} {
				if len(key) == len(name) && strings.EqualFold(string(key), name) {
					return m, false
				}
			}
		}
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		return m, i < len(raw) && raw[i] == '}'
	}
	return m, false
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value of a valid document that
// starts at raw[i], or i if there is none.
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return i
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				j = skipString(raw, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return i
	}
	j := i // a number, true, false or null
	for j < len(raw) {
		switch raw[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// skipString returns the end of the JSON string that starts at raw[i].
func skipString(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// jsonKind names the kind of a JSON value, with its article: "an object",
// "a string", "null".
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isInteger(raw json.RawMessage) bool {
	_, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return err == nil
}

// writeRPC answers with a JSON-RPC error and the HTTP status.
func writeRPC(w http.ResponseWriter, status int, e *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(e.response())
}

// revision returns the protocol revision of a request: its session's, the
// Mcp-Protocol-Version header's, or 2025-03-26, which the specification
// says to assume without either.
func revision(r *http.Request, info *sessionInfo) string {
	if info != nil {
		if cs, ok := info.clientSession().(server.SessionWithProtocolVersion); ok && cs.ProtocolVersion() != "" {
			return cs.ProtocolVersion()
		}
	}
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" {
		return v
	}
	return batchRevision
}

// serveBatch serves a JSON-RPC batch of revision 2025-03-26: each message
// in turn, as if posted alone with "Accept: application/json", and answers
// a JSON array of the responses to its requests, or 202 Accepted when it
// held notifications and responses only. Progress and log notifications of
// a batched call are not delivered: a JSON response has no room for them.
func (h *httpHandler) serveBatch(w http.ResponseWriter, r *http.Request, msgs []json.RawMessage) {
	var out []json.RawMessage
	for _, raw := range msgs {
		m, bad := checkMessage(raw)
		switch {
		case bad != nil:
			out = append(out, bad.response())
			continue
		case m.method == string(mcp.MethodInitialize):
			out = append(out, invalid(m.ID, "initialize must not be part of a batch; send it on its own.").response())
			continue
		}
		one := r.Clone(r.Context())
		one.Header.Set("Accept", "application/json")
		one.Body = io.NopCloser(bytes.NewReader(raw))
		one.ContentLength = int64(len(raw))
		rec := &recorder{}
		h.dispatch(rec, one, raw)
		if resp := rec.response(m); resp != nil {
			out = append(out, resp)
		}
	}
	if len(out) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	body, err := json.Marshal(out)
	if err != nil {
		writeRPC(w, http.StatusInternalServerError, &rpcError{code: codeInternalError, message: "Encoding the batch response failed."})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// recorder is the response writer of a message served on the side: one
// message of a batch, or the DELETE that ends an idle session. It does not
// flush, so mcp-go answers in JSON rather than in an SSE stream.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rec *recorder) Header() http.Header {
	if rec.header == nil {
		rec.header = make(http.Header)
	}
	return rec.header
}

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

func (rec *recorder) Write(p []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.body.Write(p)
}

// response returns the JSON-RPC response recorded for m, nil if there is
// none (a notification or a response was accepted), or an error response
// carrying an HTTP error's text.
func (rec *recorder) response(m wireMessage) json.RawMessage {
	body := bytes.TrimSpace(rec.body.Bytes())
	if rec.status == http.StatusAccepted || rec.status == 0 || (len(body) == 0 && rec.status < 300) {
		return nil
	}
	if jsonKind(body) == "an object" && json.Valid(body) {
		return body
	}
	code := codeInvalidRequest
	if rec.status >= 500 {
		code = codeInternalError
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		msg = http.StatusText(rec.status)
	}
	id := m.ID
	if m.method == "" {
		id = nil // a refused response: the error answers no request of the client
	}
	return (&rpcError{id: id, code: code, message: msg}).response()
}
