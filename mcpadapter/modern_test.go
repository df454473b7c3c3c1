package mcpadapter_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// TestRevisions drives Handler and StatelessHandler with mcp-go's client
// under protocol revision 2026-07-28 (server/discover, no session) and
// under 2025-11-25 (initialize, a session), against the same handler: the
// client's revision decides.
func TestRevisions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, authOptions())
	handlers := []struct {
		name string
		h    http.Handler
	}{
		{"Handler", f.srv.Handler()},
		{"StatelessHandler", f.srv.StatelessHandler()},
	}
	revisions := []struct {
		want string
		opts []client.ClientOption
	}{
		{mcp.ProtocolVersion20260728, nil},
		{mcp.ProtocolVersion20251125, []client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20251125)}},
	}
	for _, h := range handlers {
		ts := httptest.NewServer(h.h)
		t.Cleanup(ts.Close)
		for _, rev := range revisions {
			t.Run(h.name+"/"+rev.want, func(t *testing.T) {
				t.Parallel()
				tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
					transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer ada-token", "X-Workspace": "revisions"}))
				require.NoError(t, err)
				c := client.NewClient(tr, rev.opts...)
				ctx := context.Background()
				require.NoError(t, c.Start(ctx))
				t.Cleanup(func() { c.Close() })
				init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}})
				require.NoError(t, err)
				require.Equal(t, rev.want, c.ProtocolVersion())
				require.Equal(t, rev.want, init.ProtocolVersion)
				require.Equal(t, "llmtool", init.ServerInfo.Name)

				require.Equal(t, []string{"ask_model", "ask_name", "ask_twice", "crash", "get_note", "man", "picture", "slow_count", "web_lookup", "whoami"},
					toolNames(t, c), "the listing holds what the tenant may call: no write tools")

				res := call(t, c, "whoami", nil)
				require.False(t, res.IsError)
				require.JSONEq(t, `{"principal":"ada","tenant":"revisions"}`, structured(t, res))
				require.NotContains(t, structured(t, res), `"error"`)

				tests := []struct {
					name, tool string
					args       map[string]any
					want       string // the result's text, or the error's
					protocol   bool   // a JSON-RPC error rather than an isError result
				}{
					{"a write tool while writes are off", "create_note", map[string]any{"title": "No"},
						`Tool "create_note" changes data, and write tools are off in tenant "revisions". Ask the user to enable write tools for this tenant, then call create_note again.`, false},
					{"a tool's own error", "get_note", map[string]any{"id": 7}, "Note 7 not found. Call list_notes to find the ID.", false},
					{"an unknown tool", "get_notes", nil, `invalid params: Unknown tool "get_notes". Did you mean "get_note"?`, true},
				}
				for _, tt := range tests {
					t.Run(tt.name, func(t *testing.T) {
						res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tt.tool, Arguments: tt.args}})
						if tt.protocol {
							require.ErrorIs(t, err, mcp.ErrInvalidParams)
							require.EqualError(t, err, tt.want)
							return
						}
						require.NoError(t, err)
						require.True(t, res.IsError)
						require.Equal(t, tt.want, text(t, res))
					})
				}
				require.Equal(t, 1, f.noteCount(t), "nothing was written")
			})
		}
	}
}

// modernMeta is the _meta of a request of revision 2026-07-28 from a
// client that declares capabilities caps.
func modernMeta(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// TestModernWire checks, on the wire, the answers of revision 2026-07-28
// that mcp-go's client does not show: header validation, HTTP statuses,
// and that the adapter's own checks (authentication, DNS rebinding, body
// limit) come first.
func TestModernWire(t *testing.T) {
	t.Parallel()
	opts := authOptions()
	opts.MaxBodyBytes = 4096
	f := newFixture(t, opts)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)

	callNote := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_note","arguments":{"id":1},` + modernMeta(`{}`) + `}}`
	good := map[string]string{"Authorization": "Bearer ada-token", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "get_note"}
	with := func(changes map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range good {
			h[k] = v
		}
		for k, v := range changes {
			if v == "" {
				delete(h, k)
			} else {
				h[k] = v
			}
		}
		return h
	}
	tests := []struct {
		name    string
		method  string // default POST
		headers map[string]string
		body    string
		status  int
		want    string // the exact body, trimmed
	}{
		{"a call", "", good, callNote, http.StatusOK,
			`{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"llmtool","version":"0.1.0"}},"content":[{"type":"text","text":"{\"id\":1,\"title\":\"Hello\",\"body\":\"World\"}"}],"resultType":"complete","structuredContent":{"id":1,"title":"Hello","body":"World"}}}`},
		{"no Mcp-Method", "", with(map[string]string{"Mcp-Method": ""}), callNote, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"header mismatch: Mcp-Method: missing required header"}}`},
		{"Mcp-Name of another tool", "", with(map[string]string{"Mcp-Name": "crash"}), callNote, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"header mismatch: Mcp-Name: header value \"crash\" does not match body value \"get_note\""}}`},
		{"no Mcp-Protocol-Version", "", with(map[string]string{"Mcp-Protocol-Version": ""}), callNote, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Mcp-Protocol-Version header is required for requests carrying io.modelcontextprotocol/protocolVersion"}}`},
		{"a header of another revision", "", with(map[string]string{"Mcp-Protocol-Version": "2025-11-25"}), callNote, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Mcp-Protocol-Version header 2025-11-25 does not match request io.modelcontextprotocol/protocolVersion 2026-07-28"}}`},
		{"no client capabilities", "", good, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_note","arguments":{"id":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"missing or invalid _meta field io.modelcontextprotocol/clientCapabilities"}}`},
		{"an unknown tool", "", with(map[string]string{"Mcp-Name": "get_nope"}),
			`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_nope",` + modernMeta(`{}`) + `}}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Unknown tool \"get_nope\". Did you mean \"get_note\"?"}}`},
		{"initialize, removed", "", with(map[string]string{"Mcp-Method": "initialize", "Mcp-Name": ""}),
			`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{` + modernMeta(`{}`) + `}}`, http.StatusNotFound,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"\"initialize\" was removed in protocol version 2026-07-28"}}`},
		{"a batch", "", good, `[` + callNote + `]`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Batch requests are not supported in protocol revision 2026-07-28; send one JSON-RPC message per request."}}`},
		{"GET", http.MethodGet, good, "", http.StatusMethodNotAllowed,
			`GET is not supported in protocol version 2026-07-28: server-to-client messages use subscriptions/listen`},
		{"no token", "", with(map[string]string{"Authorization": ""}), callNote, http.StatusUnauthorized,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Authentication required: send a valid bearer token in the Authorization header."}}`},
		{"a rebound host", "", with(map[string]string{"Host": "evil.example"}), callNote, http.StatusForbidden,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Host \"evil.example\" is not allowed on this loopback server (DNS rebinding protection); connect to localhost, or add the host to mcpadapter.Options.AllowedHosts"}}`},
		{"a body over the limit", "", good, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_note","arguments":{"pad":"` + strings.Repeat("x", 5000) + `"},` + modernMeta(`{}`) + `}}`, http.StatusRequestEntityTooLarge,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"The request body is larger than this server's limit of 4096 bytes; send smaller arguments."}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, ts.URL, strings.NewReader(tt.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.headers {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.status, resp.StatusCode, string(b))
			require.Equal(t, tt.want, strings.TrimSpace(string(b)))
			require.Empty(t, resp.Header.Get("Mcp-Session-Id"), "2026-07-28 has no sessions")
		})
	}
}

// TestModernLogLevel checks that a call of revision 2026-07-28 gets log
// notifications at the level its _meta names, and none without one.
func TestModernLogLevel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ts := httptest.NewServer(f.srv.StatelessHandler())
	t.Cleanup(ts.Close)
	tests := []struct {
		name  string
		level string // "" for none
		want  []string
	}{
		{"no level", "", nil},
		{"info", "info", []string{"counted to three", "that was all"}},
		{"warning", "warning", []string{"that was all"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			meta := modernMeta(`{}`)
			if tt.level != "" {
				meta = strings.TrimSuffix(meta, "}") + `,"io.modelcontextprotocol/logLevel":"` + tt.level + `"}`
			}
			rc := &rpc{url: ts.URL, headers: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "slow_count"}}
			resp, body := rc.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow_count",`+meta+`}}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			var logs []string
			for _, line := range strings.Split(body, "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok {
					continue
				}
				var msg struct {
					Method string `json:"method"`
					Params struct {
						Data string `json:"data"`
					} `json:"params"`
				}
				require.NoError(t, json.Unmarshal([]byte(data), &msg))
				if msg.Method == string(mcp.MethodNotificationMessage) {
					logs = append(logs, msg.Params.Data)
				}
			}
			require.Equal(t, tt.want, logs)
			require.JSONEq(t, `{"status":"done"}`, string(structuredOf(t, body)))
		})
	}
}

// structuredOf returns the structuredContent of the response in body.
func structuredOf(t *testing.T, body string) json.RawMessage {
	t.Helper()
	var res struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(result(t, body), &res))
	return res.StructuredContent
}
