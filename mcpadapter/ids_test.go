package mcpadapter_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// countCalls adds to f's registry the read tool count_calls, whose handler
// counts its runs in the counter it returns.
func countCalls(t *testing.T, f *fixture) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	tool := llmtool.Read("count_calls", "Count the calls that reach the handler.",
		func(*llmtool.ReadCtx, struct{}) (statusOut, error) {
			n.Add(1)
			return statusOut{Status: "counted"}, nil
		})
	require.NoError(t, f.reg.Add(llmtool.DefineTools("ids", tool)))
	return &n
}

// countCall is a tools/call of count_calls with id; meta is the members
// of its _meta, if any.
func countCall(id, meta string) string {
	params := `"name":"count_calls","arguments":{}`
	if meta != "" {
		params += "," + meta
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + params + `}}`
}

// The messages with an id that is not a string or an integer, or with an
// id and nothing else to say what they are: each gets Invalid Request,
// with id null where the id itself is invalid, and nothing runs.
var (
	badID = func(kind string) string {
		return `Invalid Request: the "id" is ` + kind + `; send the request again with an "id" that is a string or an integer.`
	}
	noMethod = `Invalid Request: the message has an "id" but no "method", "result" or "error"; send a request with its "method" (or a response with its "result" or "error").`

	invalidMessages = []struct {
		name string
		body func(meta string) string
		id   string // of the error response
		msg  string
	}{
		{"object id", func(m string) string { return countCall(`{"x":1}`, m) }, "null", badID("an object")},
		{"empty object id", func(m string) string { return countCall(`{}`, m) }, "null", badID("an object")},
		{"boolean id", func(m string) string { return countCall(`true`, m) }, "null", badID("a boolean")},
		{"false id", func(m string) string { return countCall(`false`, m) }, "null", badID("a boolean")},
		{"array id", func(m string) string { return countCall(`[1]`, m) }, "null", badID("an array")},
		{"fractional id", func(m string) string { return countCall(`1.5`, m) }, "null", badID("a fractional number")},
		{"fractional id with an exponent", func(m string) string { return countCall(`25e-1`, m) }, "null", badID("a fractional number")},
		{"negative fractional id", func(m string) string { return countCall(`-0.25`, m) }, "null", badID("a fractional number")},
		{"fraction beyond a float64's precision", func(m string) string { return countCall(`1.0000000000000001`, m) }, "null", badID("a fractional number")},
		{"fraction beyond a float64's range", func(m string) string { return countCall(`1e-400`, m) }, "null", badID("a fractional number")},
		{"id without method", func(string) string { return `{"jsonrpc":"2.0","id":7,"params":{"name":"count_calls","arguments":{}}}` }, "7", noMethod},
		{"string id without method", func(string) string { return `{"jsonrpc":"2.0","id":"q"}` }, `"q"`, noMethod},
		{"invalid id without method", func(string) string { return `{"jsonrpc":"2.0","id":true}` }, "null", badID("a boolean")},
	}

	// validIDs are served as before: the call runs and its response
	// carries the id.
	validIDs = []struct{ name, id, echo string }{
		{"string id", `"call-1"`, `"call-1"`},
		{"empty string id", `""`, `""`},
		{"integer id", `42`, `42`},
		{"zero id", `0`, `0`},
		{"negative id", `-7`, `-7`},
		{"large id", `9007199254740991`, `9007199254740991`},
		{"integral id written with a fraction", `3.0`, `3`},
		{"integral id written with an exponent", `1e3`, `1000`},
		{"integral id written with a fraction and an exponent", `100e-2`, `1`},
	}
)

// refusal is the error response of an invalid message.
func refusal(id, msg string) string {
	b, _ := json.Marshal(msg)
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":` + string(b) + `}}`
}

// responseID returns the id of a JSON-RPC response (JSON or the last SSE
// event) that carries a result.
func responseID(t *testing.T, body string) string {
	t.Helper()
	require.NotEmpty(t, result(t, body))
	if i := strings.LastIndex(body, "data: "); i >= 0 {
		body = body[i+len("data: "):]
	}
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &msg), body)
	return string(msg.ID)
}

// TestInvalidIDsHTTP checks that over HTTP, with sessions, without, and at
// revision 2026-07-28, a message with an invalid id, or with an id but no
// method, result or error, gets 400 Bad Request and Invalid Request, and
// that the tool's handler never runs; valid ids, notifications and
// responses are served as before.
func TestInvalidIDsHTTP(t *testing.T) {
	t.Parallel()
	modern := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "count_calls"}
	for _, tr := range []struct {
		name      string
		stateless bool
		headers   map[string]string
		meta      string // of a call's _meta
	}{
		{name: "Handler"},
		{name: "StatelessHandler", stateless: true},
		{name: "2026-07-28", headers: modern, meta: modernMeta(`{}`)},
	} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			calls := countCalls(t, f)
			h := f.srv.Handler()
			if tr.stateless {
				h = f.srv.StatelessHandler()
			}
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			c := &rpc{url: ts.URL, headers: tr.headers}
			if tr.name == "Handler" {
				c.initialize(t)
			}

			for _, tt := range invalidMessages {
				resp, body := c.post(t, tt.body(tr.meta))
				require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", tt.name, body)
				require.Equal(t, "application/json", resp.Header.Get("Content-Type"), tt.name)
				require.JSONEq(t, refusal(tt.id, tt.msg), body, tt.name)
			}
			// A batch is refused whole, in every revision.
			resp, body := c.post(t, `[`+countCall(`{"x":1}`, tr.meta)+`]`)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
			require.Equal(t, int64(0), calls.Load(), "no handler ran")

			for i, tt := range validIDs {
				resp, body := c.post(t, countCall(tt.id, tr.meta))
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", tt.name, body)
				require.Equal(t, tt.echo, responseID(t, body), tt.name)
				require.Equal(t, int64(i+1), calls.Load(), tt.name)
			}
			if tr.name == "2026-07-28" {
				return // no notifications, and no requests of the server to answer
			}
			for _, msg := range []string{
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":5,"result":{}}`, // an answer to a ping of the server
			} {
				resp, body := c.post(t, msg)
				require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s: %s", msg, body)
			}
		})
	}
}

// TestInvalidIDsStdio checks the same messages over stdio: each gets an
// Invalid Request line, no handler runs, and the server serves the next
// line. It is not parallel: mcp-go has one stdio session per process.
func TestInvalidIDsStdio(t *testing.T) {
	f := newFixture(t, nil)
	calls := countCalls(t, f)
	w := newStdioWire(t, f)
	for _, tt := range invalidMessages {
		require.JSONEq(t, refusal(tt.id, tt.msg), w.roundTrip(t, tt.body("")), tt.name)
	}
	require.Equal(t, int64(0), calls.Load(), "no handler ran")

	for i, tt := range validIDs {
		line := w.roundTrip(t, countCall(tt.id, ""))
		require.Equal(t, tt.echo, responseID(t, line), tt.name)
		require.Equal(t, int64(i+1), calls.Load(), tt.name)
	}
	// A notification and a response get no answer: the next line is the
	// ping's.
	w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w.send(t, `{"jsonrpc":"2.0","id":5,"result":{}}`)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":"p","result":{}}`, w.roundTrip(t, `{"jsonrpc":"2.0","id":"p","method":"ping"}`))
}
