package mcpadapter_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/mcpadapter"
)

// TestModernDirectMatchesServeHTTP is the differential test of serveModern
// (modernpost.go), which hands mcp-go the body of a 2026-07-28 POST through
// StreamableHTTPServer.Handle, against serveMCP, which has mcp-go's
// ServeHTTP read it again (the path of a server with the host's
// HTTPOptions): for the same requests, the same status, Content-Type and
// bytes, notes and all.
func TestModernDirectMatchesServeHTTP(t *testing.T) {
	t.Parallel()
	direct := newFixture(t, nil).srv.Handler()
	viaServeHTTP := newFixture(t, &mcpadapter.Options{HTTPOptions: []server.StreamableHTTPOption{
		server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler))}}).srv.Handler()
	require.True(t, mcpadapter.DirectHTTP(direct))
	require.False(t, mcpadapter.DirectHTTP(viaServeHTTP))
	tsDirect, tsServe := httptest.NewServer(direct), httptest.NewServer(viaServeHTTP)
	t.Cleanup(tsDirect.Close)
	t.Cleanup(tsServe.Close)

	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + params + `,` + modernMeta(`{}`) + `}}`
	}
	tests := []struct {
		name, method, tool, body string
		status                   int
		want                     string // the exact body, trimmed; "" for a stream, checked against the other path only
	}{
		{"success", "tools/call", "get_note", call("1", `"name":"get_note","arguments":{"id":1}`), http.StatusOK,
			`{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"llmtool","version":"0.1.0"}},"content":[{"type":"text","text":"{\"id\":1,\"title\":\"Hello\",\"body\":\"World\"}"}],"resultType":"complete","structuredContent":{"id":1,"title":"Hello","body":"World"}}}`},
		{"the tool's error", "tools/call", "get_note", call(`"e"`, `"name":"get_note","arguments":{"id":99}`), http.StatusOK,
			`{"jsonrpc":"2.0","id":"e","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"llmtool","version":"0.1.0"}},"content":[{"type":"text","text":"Note 99 not found. Call list_notes to find the ID."}],"isError":true,"resultType":"complete"}}`},
		{"bad arguments", "tools/call", "get_note", call("2", `"name":"get_note","arguments":{"id":"one"}`), http.StatusOK,
			`{"jsonrpc":"2.0","id":2,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"llmtool","version":"0.1.0"}},"content":[{"type":"text","text":"Error: /id: expected integer, got string. Send an integer."}],"isError":true,"resultType":"complete"}}`},
		{"an unknown tool (the registry's sentence)", "tools/call", "get_nope", call("3", `"name":"get_nope"`), http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool \"get_nope\". Did you mean \"get_note\"?"}}`},
		{"a tool that asks without the capability", "tools/call", "ask_name", call("4", `"name":"ask_name"`), http.StatusOK,
			`{"jsonrpc":"2.0","id":4,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"llmtool","version":"0.1.0"}},"content":[{"type":"text","text":"{\"action\":\"\",\"refusal\":\"llmtool: tool ask_name: elicitation: the client did not declare the elicitation capability: ask: the client cannot answer this request\"}"}],"resultType":"complete","structuredContent":{"action":"","refusal":"llmtool: tool ask_name: elicitation: the client did not declare the elicitation capability: ask: the client cannot answer this request"}}}`},
		{"progress on the call's stream", "tools/call", "slow_count",
			`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow_count","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info","progressToken":"p"}}}`,
			http.StatusOK, ""},
		{"tools/list (pre-encoded page)", "tools/list", "", `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{` + modernMeta(`{}`) + `}}`, http.StatusOK, ""},
		{"ping, removed (no notes)", "ping", "", `{"jsonrpc":"2.0","id":7,"method":"ping","params":{` + modernMeta(`{}`) + `}}`, http.StatusNotFound,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"\"ping\" was removed in protocol version 2026-07-28"}}`},
		{"a notification", "notifications/initialized", "", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{` + modernMeta(`{}`) + `}}`, http.StatusAccepted, ""},
		{"not JSON-RPC 2.0", "tools/call", "get_note", `{"jsonrpc":"1.0","id":8,"method":"tools/call","params":{"name":"get_note",` + modernMeta(`{}`) + `}}`, 0, ""},
	}
	post := func(t *testing.T, url, method, tool, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if tool != "" {
			req.Header.Set("Mcp-Name", tool)
		}
		resp, err := rawHTTP.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, gotBody := post(t, tsDirect.URL, tt.method, tt.tool, tt.body)
			ref, refBody := post(t, tsServe.URL, tt.method, tt.tool, tt.body)
			require.Equal(t, ref.StatusCode, got.StatusCode, gotBody)
			require.Equal(t, ref.Header.Get("Content-Type"), got.Header.Get("Content-Type"))
			require.Equal(t, ref.Header.Get("Content-Length"), got.Header.Get("Content-Length"))
			require.Equal(t, refBody, gotBody)
			if tt.status != 0 {
				require.Equal(t, tt.status, got.StatusCode, gotBody)
			}
			if tt.want != "" {
				require.Equal(t, tt.want, strings.TrimSpace(gotBody))
			}
			if tt.status == http.StatusOK && tt.want == "" && tt.method == "tools/call" {
				require.Equal(t, "text/event-stream", got.Header.Get("Content-Type"))
				require.Contains(t, gotBody, `"method":"notifications/progress"`)
				require.NotContains(t, gotBody, `"error"`)
			}
		})
	}
}
