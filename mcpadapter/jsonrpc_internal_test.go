package mcpadapter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// referenceCheckMessage is checkMessage as it was before scanMessage: the
// message decoded with encoding/json, the method too. checkMessage must
// give the same message and the same error for every input.
func referenceCheckMessage(raw json.RawMessage) (wireMessage, *rpcError) {
	var m wireMessage
	if kind := jsonKind(raw); kind != "an object" {
		return m, invalid(nil, "a JSON-RPC message is a JSON object, not %s.", kind)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, invalid(nil, "the message cannot be decoded: %v.", err)
	}
	var id json.RawMessage
	if m.ID != nil {
		switch kind := jsonKind(m.ID); {
		case kind == "a string", kind == "a number" && isInteger(m.ID):
			id = m.ID
		case kind == "null" && m.Method == nil && m.Error != nil:
		case kind == "a number":
			return m, invalid(nil, `"id" must be a string or an integer, not a fractional or out-of-range number.`)
		default:
			return m, invalid(nil, `"id" must be a string or an integer, not %s.`, kind)
		}
	}
	hasResult, hasError := m.Result != nil, m.Error != nil
	switch {
	case m.Method != nil:
		if json.Unmarshal(m.Method, &m.method) != nil {
			return m, invalid(id, `"method" must be a string, not %s.`, jsonKind(m.Method))
		}
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

// describeCheck renders a checkMessage outcome so that two can be
// compared: absent members apart from present ones, the error's id, code
// and message.
func describeCheck(m wireMessage, bad *rpcError) string {
	raw := func(b json.RawMessage) string {
		if b == nil {
			return "absent"
		}
		return fmt.Sprintf("%q", b)
	}
	s := fmt.Sprintf("id=%s method=%s (%q) result=%s error=%s", raw(m.ID), raw(m.Method), m.method, raw(m.Result), raw(m.Error))
	if bad != nil {
		s += fmt.Sprintf(" refused: id=%s code=%d %q", raw(bad.id), bad.code, bad.message)
	}
	return s
}

var checkMessageSeeds = []string{
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_note","arguments":{"id":1}}}`,
	`{"jsonrpc":"2.0","id":"llmtool-7","result":{"action":"accept","content":{"ok":true}}}`,
	`{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"no"}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	` { "id" : 1 , "method" : "ping" } `,
	"{\n\t\"id\":\t-12,\r\n\"method\":\"x\"}",
	`{}`, `{"id":1}`, `{"id":null,"error":{}}`, `{"id":null}`, `{"id":1.5,"method":"x"}`,
	`{"id":1e3,"method":"x"}`, `{"id":99999999999999999999,"method":"x"}`, `{"id":true,"method":"x"}`,
	`{"id":{"a":1},"method":"x"}`, `{"id":[1,2],"method":"x"}`, `{"method":null}`, `{"method":5}`,
	`{"method":"a\"b"}`, `{"method":"caf\u00e9"}`, `{"method":"café"}`, `{"method":"a\\b"}`,
	`{"method":"x","result":1}`, `{"id":1,"result":1,"error":2}`, `{"id":1,"method":"a","method":"b"}`,
	`{"ID":1,"method":"x"}`, `{"Id":1,"Method":"x"}`, `{"\u0069d":1,"method":"x"}`, `{"reſult":1,"id":1}`,
	`{"id":1,"method":"x","params":{"id":2,"method":"y","s":"}]\"{["}}`, `{"params":[{"id":1}],"id":2,"method":"z"}`,
	`{"id":"x","method":"y","extra":"\ud83d\ude00"}`, `{"id":"\u00ff","method":"y"}`,
	`[1]`, `"x"`, `5`, `null`, `true`, ``, `   `, `{`, `{"id":1,}`, `{"id" 1}`, `{"id":1 "method":"x"}`,
	`{"id":1x,"method":"x"}`, `{"id":01,"method":"x"}`, `{"method":"x"}garbage`, `{"id":"unterminated}`,
	`{"id":1,"method":"x"`, `{"a":{"b":[1,{"c":"d"}]},"method":"m","id":"q"}`, "{\"method\":\"a\x01\"}",
}

// TestCheckMessageMatchesReference holds checkMessage and scanMessage to
// the reference on hand-picked messages (FuzzCheckMessage goes further).
func TestCheckMessageMatchesReference(t *testing.T) {
	t.Parallel()
	for _, raw := range checkMessageSeeds {
		t.Run(raw, func(t *testing.T) {
			t.Parallel()
			assertCheckMessage(t, []byte(raw))
		})
	}
}

// TestScanMessageDeclines checks that the scanner leaves to encoding/json
// the keys it does not follow, so that they are matched as encoding/json
// matches them.
func TestScanMessageDeclines(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"ID":1,"method":"x"}`,      // case-insensitive match
		`{"Result":1,"id":1}`,        // case-insensitive match
		`{"\u0069d":1,"method":"x"}`, // escaped key
		`{"reſult":1,"id":1}`,        // Unicode folding (ſ is s)
		`{"idé":1,"method":"x"}`,     // a key outside ASCII
	} {
		_, ok := scanMessage([]byte(raw))
		require.False(t, ok, raw)
	}
	m, ok := scanMessage([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"n"}}`))
	require.True(t, ok)
	require.Equal(t, `3`, string(m.ID))
	require.Equal(t, `"tools/call"`, string(m.Method))
	require.Nil(t, m.Result)
	require.Nil(t, m.Error)
}

// FuzzCheckMessage is the differential test of checkMessage's scanner:
// for any input, checkMessage (and, for valid JSON, checkValidMessage and
// scanMessage) answers as the encoding/json reference does; and a member
// of the message is a slice of the input that appending to cannot
// overwrite.
func FuzzCheckMessage(f *testing.F) {
	for _, s := range checkMessageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		assertCheckMessage(t, raw)
	})
}

func assertCheckMessage(t *testing.T, raw []byte) {
	orig := bytes.Clone(raw)
	want := describeCheck(referenceCheckMessage(raw))
	require.Equal(t, want, describeCheck(checkMessage(raw)), "checkMessage(%q)", raw)
	if json.Valid(raw) {
		m, bad := checkValidMessage(raw)
		require.Equal(t, want, describeCheck(m, bad), "checkValidMessage(%q)", raw)
		for _, member := range []json.RawMessage{m.ID, m.Method, m.Result, m.Error} {
			_ = append(member, "xxxx"...)
		}
		require.Equal(t, orig, raw, "a member's append wrote into the input")
		if m, ok := scanMessage(raw); ok { // it reads valid JSON only
			ref, err := decodeMessage(raw)
			require.NoError(t, err)
			require.Equal(t, describeCheck(ref, nil), describeCheck(m, nil), "scanMessage(%q)", raw)
		}
	}
}
