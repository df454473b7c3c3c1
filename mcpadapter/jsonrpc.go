package mcpadapter

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Messages mcp-go must not see. mcp-go v1.2.1 decodes a request's id into
// any and serves the request whatever the id is: an object, an array, a
// boolean, a fractional number, none of which MCP allows (a request's id
// is a string or an integer), so a tool ran for a request whose response
// the client cannot match. A message with an id but neither method nor
// result nor error, neither a request nor a response, it takes over HTTP
// for an empty response to one of its own requests (202 Accepted, no
// answer). So both transports check each message with checkMessage before
// mcp-go reads it, and answer what it refuses themselves: Handler and
// StatelessHandler with 400 Bad Request (httpHandler.ServeHTTP), ServeStdio
// with an error line on its output (checkedInput). The rest (notifications,
// responses, ids of null, what is not a JSON object) reaches mcp-go as it
// came. TestMCPGoSeams fails when mcp-go starts refusing such ids itself.

// checkMessage returns the Invalid Request error of a JSON-RPC message
// that must not reach mcp-go, and the id that error answers (nil for null,
// where the id itself is invalid); nil for a message mcp-go may serve.
func checkMessage(raw []byte) (json.RawMessage, *rpcError) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &m) != nil || m.ID == nil || string(m.ID) == "null" {
		return nil, nil // no id, or not a JSON object: mcp-go answers
	}
	if kind := invalidID(m.ID); kind != "" {
		return nil, &rpcError{code: mcp.INVALID_REQUEST, message: `Invalid Request: the "id" is ` + kind +
			`; send the request again with an "id" that is a string or an integer.`}
	}
	if m.Method == nil && m.Result == nil && m.Error == nil {
		return m.ID, &rpcError{code: mcp.INVALID_REQUEST, message: `Invalid Request: the message has an "id" but no "method", "result" or "error"; ` +
			`send a request with its "method" (or a response with its "result" or "error").`}
	}
	return nil, nil
}

// invalidID names the kind of id, a JSON value other than null, when it is
// neither a string nor an integer, and returns "" when it is one.
func invalidID(id json.RawMessage) string {
	switch id[0] {
	case '"':
		return ""
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	if !integral(string(id)) {
		return "a fractional number"
	}
	return ""
}

// integral reports whether num, a JSON number, is an integer: of any size,
// and also when written with a fraction or an exponent (3.0, 1e3), which
// mcp-go reads as the integer. It reads the digits, not a float64, which
// would round 1.0000000000000001 to 1, and 1e-400 to 0.
func integral(num string) bool {
	mant, exp, hasExp := strings.Cut(strings.ToLower(num), "e")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(mant, "-"), ".")
	digits := strings.TrimRight(whole+frac, "0") // significant up to the last
	if strings.Trim(digits, "0") == "" {
		return true // zero
	}
	shift := 0 // of the decimal point, to the right
	if hasExp {
		n, err := strconv.Atoi(exp)
		if err != nil {
			return !strings.HasPrefix(exp, "-") // beyond int: huge, or tiny and not zero
		}
		shift = n
	}
	// The digits after the point, once shifted, are all zeros.
	return shift >= len(digits)-len(whole)
}

// errorResponse is the line of a JSON-RPC error response: id null when id
// is nil.
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{mcp.JSONRPC_VERSION, id, map[string]any{"code": code, "message": msg}})
	return append(b, '\n')
}
