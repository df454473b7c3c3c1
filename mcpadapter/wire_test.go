package mcpadapter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// initializeAt is an initialize request for a protocol revision.
func initializeAt(version string) string {
	return strings.Replace(initialize, "2025-11-25", version, 1)
}

// open opens a session at a protocol revision.
func (c *rpc) open(t *testing.T, version string) {
	t.Helper()
	resp, body := c.post(t, initializeAt(version))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"protocolVersion":"`+version+`"`)
	c.session = resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, c.session)
	resp, _ = c.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}

// createCall calls create_note, which adds a row to the notes table if it
// runs.
const createCall = `"method":"tools/call","params":{"name":"create_note","arguments":{"title":"must not exist"}}`

// TestHTTPInvalidMessages checks that a message that is not a valid
// request, notification or response gets Invalid Request and runs nothing,
// on both handlers.
func TestHTTPInvalidMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"id is an object", `{"jsonrpc":"2.0","id":{"a":1},` + createCall + `}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"id\" must be a string or an integer, not an object."}}`},
		{"id is a boolean", `{"jsonrpc":"2.0","id":true,` + createCall + `}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"id\" must be a string or an integer, not a boolean."}}`},
		{"id is an array", `{"jsonrpc":"2.0","id":[1],` + createCall + `}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"id\" must be a string or an integer, not an array."}}`},
		{"id is null", `{"jsonrpc":"2.0","id":null,` + createCall + `}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"id\" must be a string or an integer, not null."}}`},
		{"id is fractional", `{"jsonrpc":"2.0","id":1.5,` + createCall + `}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"id\" must be a string or an integer, not a fractional or out-of-range number."}}`},
		{"id without method, result or error", `{"jsonrpc":"2.0","id":7}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request: a message with an \"id\" needs a \"method\" (a request) or a \"result\" or \"error\" (a response)."}}`},
		{"string id without method", `{"jsonrpc":"2.0","id":"x","params":{}}`,
			`{"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"Invalid Request: a message with an \"id\" needs a \"method\" (a request) or a \"result\" or \"error\" (a response)."}}`},
		{"neither id nor method", `{"jsonrpc":"2.0","params":{}}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message needs a \"method\" (a request or notification), or an \"id\" with a \"result\" or \"error\" (a response)."}}`},
		{"method is not a string", `{"jsonrpc":"2.0","id":3,"method":42}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: \"method\" must be a string, not a number."}}`},
		{"request with a result", `{"jsonrpc":"2.0","id":4,` + createCall + `,"result":{}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"Invalid Request: a message has a \"method\" (a request or notification) or a \"result\" or \"error\" (a response), not both."}}`},
		{"response with result and error", `{"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"x"}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: a response has a \"result\" or an \"error\", not both."}}`},
		{"not an object", `42`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a JSON-RPC message is a JSON object, not a number."}}`},
	}
	for _, stateless := range []bool{false, true} {
		name := "Handler"
		if stateless {
			name = "StatelessHandler"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", true))
			h := f.srv.Handler()
			if stateless {
				h = f.srv.StatelessHandler()
			}
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			c := &rpc{url: ts.URL}
			if !stateless {
				c.initialize(t)
			}
			stop := f.audits()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					resp, body := c.post(t, tt.body)
					require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
					require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
					require.JSONEq(t, tt.want, body)
				})
			}
			require.Empty(t, stop(), "no tool ran")
			require.Equal(t, 1, f.noteCount(t), "no note was written")

			// The same call with a valid id runs.
			_, body := c.post(t, `{"jsonrpc":"2.0","id":9,`+createCall+`}`)
			result(t, body)
			require.Equal(t, 2, f.noteCount(t))
		})
	}
}

// TestHTTPBatch checks that a batch is served in a session at protocol
// revision 2025-03-26, and refused with a clear error in the other
// revisions.
func TestHTTPBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", true))
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	stateless := httptest.NewServer(f.srv.StatelessHandler())
	t.Cleanup(stateless.Close)

	batch := `[
		{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_note","arguments":{"id":1}}},
		{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},
		{"jsonrpc":"2.0","id":"two","method":"ping"},
		{"jsonrpc":"2.0","id":{"x":1},` + createCall + `},
		{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"Batched"}}},
		{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}},
		{"jsonrpc":"2.0","id":5}
	]`
	served := `[
		{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"id\":1,\"title\":\"Hello\",\"body\":\"World\"}"}],"structuredContent":{"id":1,"title":"Hello","body":"World"}}},
		{"jsonrpc":"2.0","id":"two","result":{}},
		{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"id\" must be a string or an integer, not an object."}},
		{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"id\":%d,\"title\":\"Batched\",\"body\":\"\"}"}],"structuredContent":{"id":%d,"title":"Batched","body":""}}},
		{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"Invalid Request: initialize must not be part of a batch; send it on its own."}},
		{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: a message with an \"id\" needs a \"method\" (a request) or a \"result\" or \"error\" (a response)."}}
	]`
	refused := func(rev string) string {
		return `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Batch requests are not supported in protocol revision ` + rev + `; send one JSON-RPC message per request."}}`
	}
	notes := 1
	tests := []struct {
		name     string
		url      string
		revision string // of the session; "" for none
		header   string // Mcp-Protocol-Version
		status   int
		want     string
	}{
		{"session at 2025-03-26", ts.URL, "2025-03-26", "", http.StatusOK, served},
		{"session at 2024-11-05", ts.URL, "2024-11-05", "", http.StatusBadRequest, refused("2024-11-05")},
		{"session at 2025-06-18", ts.URL, "2025-06-18", "", http.StatusBadRequest, refused("2025-06-18")},
		{"session at 2025-11-25", ts.URL, "2025-11-25", "2025-11-25", http.StatusBadRequest, refused("2025-11-25")},
		{"session at 2025-06-18 claiming 2025-03-26", ts.URL, "2025-06-18", "2025-03-26", http.StatusBadRequest, refused("2025-06-18")},
		{"no session", ts.URL, "", "", http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"A batch needs a session: send initialize on its own first, then the batch with the Mcp-Session-Id header of its response."}}`},
		{"stateless without header", stateless.URL, "", "", http.StatusOK, served},
		{"stateless at 2025-06-18", stateless.URL, "", "2025-06-18", http.StatusBadRequest, refused("2025-06-18")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &rpc{url: tt.url, headers: map[string]string{}}
			if tt.revision != "" {
				c.open(t, tt.revision)
			}
			if tt.header != "" {
				c.headers["Mcp-Protocol-Version"] = tt.header
			}
			resp, body := c.post(t, batch)
			require.Equal(t, tt.status, resp.StatusCode, body)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			want := tt.want
			if tt.status == http.StatusOK {
				notes++
				want = strings.ReplaceAll(want, "%d", strconv.Itoa(notes))
			}
			require.JSONEq(t, want, body)
			require.Equal(t, notes, f.noteCount(t))
		})
	}

	t.Run("notifications only", func(t *testing.T) {
		c := &rpc{url: ts.URL}
		c.open(t, "2025-03-26")
		resp, body := c.post(t, `[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}]`)
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		require.Empty(t, body)
	})

	t.Run("empty", func(t *testing.T) {
		c := &rpc{url: ts.URL}
		c.open(t, "2025-03-26")
		resp, body := c.post(t, `[]`)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the batch is empty."}}`, body)
	})
}
