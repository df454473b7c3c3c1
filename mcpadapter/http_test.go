package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
)

// tokens maps the bearer tokens of the HTTP tests to principals.
var tokens = map[string]*llmtool.Principal{
	"ada-token": {ID: "ada", Name: "Ada"},
	"bob-token": {ID: "bob", Name: "Bob"},
}

// authOptions authenticate with tokens and take the scope from the
// X-Workspace header.
// rawHTTP sends the tests' hand-made requests. It is not
// http.DefaultClient: httptest.Server.Close closes the idle connections of
// http.DefaultTransport, which breaks a parallel test's request that is
// about to reuse one ("CloseIdleConnections called").
var rawHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

func authOptions() *mcpadapter.Options {
	return &mcpadapter.Options{
		Authenticator: mcpadapter.BearerAuth(func(_ context.Context, token string) (*llmtool.Principal, error) {
			if p, ok := tokens[token]; ok {
				return p, nil
			}
			return nil, errors.New("unknown token")
		}),
		TenantFunc: func(r *http.Request, p *llmtool.Principal) (string, error) {
			ws := r.Header.Get("X-Workspace")
			if ws == "secret" && p.ID != "ada" {
				return "", errors.New("You are not a member of workspace secret.")
			}
			return ws, nil
		},
	}
}

// rpc is a raw JSON-RPC exchange over HTTP, for what the client library
// does not show: status codes, headers, wire bytes.
type rpc struct {
	url     string
	headers map[string]string
	session string
}

func (c *rpc) post(t *testing.T, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	for k, v := range c.headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := rawHTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initialize opens a session.
func (c *rpc) initialize(t *testing.T) {
	t.Helper()
	resp, body := c.post(t, initialize)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	c.session = resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, c.session)
	resp, _ = c.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}

// result returns the JSON-RPC result of a response body (JSON or the last
// SSE event).
func result(t *testing.T, body string) json.RawMessage {
	t.Helper()
	if i := strings.LastIndex(body, "data: "); i >= 0 {
		body = strings.TrimSpace(body[i+len("data: "):])
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &msg), body)
	require.Nil(t, msg.Error, body)
	return msg.Result
}

func TestHTTPAuthentication(t *testing.T) {
	t.Parallel()
	f := newFixture(t, authOptions())
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)

	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"x"}}}`
	tests := []struct {
		name      string
		headers   map[string]string
		body      string
		challenge string
	}{
		{"no token", nil, initialize, `Bearer realm="mcp"`},
		{"unknown token", map[string]string{"Authorization": "Bearer nope"}, initialize,
			`Bearer realm="mcp", error="invalid_token", error_description="The access token is missing, malformed, expired or revoked"`},
		{"wrong scheme", map[string]string{"Authorization": "Basic YWRhOng="}, call,
			`Bearer realm="mcp", error="invalid_token", error_description="The access token is missing, malformed, expired or revoked"`},
		{"tool call without token", nil, call, `Bearer realm="mcp"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &rpc{url: ts.URL, headers: tt.headers}
			resp, body := c.post(t, tt.body)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Equal(t, tt.challenge, resp.Header.Get("WWW-Authenticate"))
			require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Authentication required: send a valid bearer token in the Authorization header."}}`, body)
		})
	}
	require.Equal(t, 1, f.noteCount(t), "no tool ran")

	t.Run("principal and tenant reach the handler", func(t *testing.T) {
		c := &rpc{url: ts.URL, headers: map[string]string{"Authorization": "Bearer ada-token", "X-Workspace": "secret"}}
		c.initialize(t)
		_, body := c.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami"}}`)
		require.JSONEq(t, `{"content":[{"type":"text","text":"{\"principal\":\"ada\",\"tenant\":\"secret\"}"}],"structuredContent":{"principal":"ada","tenant":"secret"}}`, string(result(t, body)))
	})

	t.Run("tenant refused", func(t *testing.T) {
		c := &rpc{url: ts.URL, headers: map[string]string{"Authorization": "Bearer bob-token", "X-Workspace": "secret"}}
		resp, body := c.post(t, initialize)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"You are not a member of workspace secret."}}`, body)
	})

	t.Run("a session is bound to its tenant", func(t *testing.T) {
		ada := &rpc{url: ts.URL, headers: map[string]string{"Authorization": "Bearer ada-token", "X-Workspace": "red"}}
		ada.initialize(t)
		ada.headers["X-Workspace"] = "blue"
		resp, body := ada.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"This session was opened for tenant \"red\", not \"blue\"; initialize a new session for that tenant."}}`, body)
	})

	t.Run("a session is bound to its principal", func(t *testing.T) {
		ada := &rpc{url: ts.URL, headers: map[string]string{"Authorization": "Bearer ada-token"}}
		ada.initialize(t)
		bob := &rpc{url: ts.URL, headers: map[string]string{"Authorization": "Bearer bob-token"}, session: ada.session}
		resp, body := bob.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"This session belongs to another user; initialize a session of your own."}}`, body)
	})
}

func TestHTTPResourceMetadata(t *testing.T) {
	t.Parallel()
	opts := authOptions()
	opts.ResourceMetadata = "https://mcp.example.com/.well-known/oauth-protected-resource"
	f := newFixture(t, opts)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	resp, _ := (&rpc{url: ts.URL}).post(t, initialize)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, `Bearer realm="mcp", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`, resp.Header.Get("WWW-Authenticate"))
}

func TestHTTPRebinding(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &mcpadapter.Options{AllowedHosts: []string{"mcp.example.com"}, AllowedOrigins: []string{"https://app.example.com"}})
	ts := httptest.NewServer(f.srv.Handler()) // listens on 127.0.0.1
	t.Cleanup(ts.Close)
	host := strings.TrimPrefix(ts.URL, "http://")

	tests := []struct {
		name    string
		headers map[string]string
		status  int
		message string
	}{
		{"loopback host", map[string]string{"Host": host}, http.StatusOK, ""},
		{"localhost host and origin", map[string]string{"Host": "localhost:1234", "Origin": "http://localhost:1234"}, http.StatusOK, ""},
		{"ipv6 loopback", map[string]string{"Host": "[::1]:80", "Origin": "http://[::1]"}, http.StatusOK, ""},
		{"allowed host", map[string]string{"Host": "mcp.example.com"}, http.StatusOK, ""},
		{"allowed origin", map[string]string{"Host": host, "Origin": "https://app.example.com"}, http.StatusOK, ""},
		{"rebound host", map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"}, http.StatusForbidden,
			`Host "evil.example.com" is not allowed on this loopback server (DNS rebinding protection); connect to localhost, or add the host to mcpadapter.Options.AllowedHosts`},
		{"foreign origin", map[string]string{"Host": host, "Origin": "http://evil.example.com"}, http.StatusForbidden,
			`Origin "http://evil.example.com" is not allowed on this loopback server (DNS rebinding protection); add it to mcpadapter.Options.AllowedOrigins`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := (&rpc{url: ts.URL, headers: tt.headers}).post(t, initialize)
			require.Equal(t, tt.status, resp.StatusCode, body)
			if tt.message != "" {
				var e struct{ Error struct{ Message string } }
				require.NoError(t, json.Unmarshal([]byte(body), &e))
				require.Equal(t, tt.message, e.Error.Message)
			}
		})
	}
}

func TestHTTPBodyLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &mcpadapter.Options{MaxBodyBytes: 512})
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := &rpc{url: ts.URL}
	c.initialize(t)
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_note","arguments":{"id":1,"pad":"` + strings.Repeat("x", 600) + `"}}}`
	resp, body := c.post(t, big)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"The request body is larger than this server's limit of 512 bytes; send smaller arguments."}}`, body)
	resp, _ = c.post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_note","arguments":{"id":1}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// listAll follows tools/list pages to the end and returns every tool as
// raw JSON, checking the page size.
func (c *rpc) listAll(t *testing.T, pageSize int) []map[string]json.RawMessage {
	t.Helper()
	var tools []map[string]json.RawMessage
	cursor := ""
	for page := 0; ; page++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		_, body := c.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":`+params+`}`)
		var res struct {
			Tools      []map[string]json.RawMessage `json:"tools"`
			NextCursor string                       `json:"nextCursor"`
		}
		require.NoError(t, json.Unmarshal(result(t, body), &res))
		require.LessOrEqual(t, len(res.Tools), pageSize)
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			return tools
		}
		cursor = res.NextCursor
		require.Less(t, page, 10, "too many pages")
	}
}

func byName(t *testing.T, tools []map[string]json.RawMessage) ([]string, map[string]map[string]json.RawMessage) {
	t.Helper()
	var names []string
	m := map[string]map[string]json.RawMessage{}
	for _, tl := range tools {
		var name string
		require.NoError(t, json.Unmarshal(tl["name"], &name))
		names = append(names, name)
		m[name] = tl
	}
	return names, m
}

// TestHTTPWire checks the listing's bytes: schemas verbatim, annotations
// explicit, pagination.
func TestHTTPWire(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &mcpadapter.Options{PageSize: 4})
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := &rpc{url: ts.URL}
	c.initialize(t)

	names, tools := byName(t, c.listAll(t, 4))
	require.Equal(t, []string{"ask_model", "ask_name", "ask_twice", "crash", "get_note", "man", "picture", "slow_count", "web_lookup", "whoami"}, names)
	spec, ok := f.reg.Tool(context.Background(), "get_note")
	require.True(t, ok)
	get := tools["get_note"]
	require.Equal(t, string(spec.InputSchema), string(get["inputSchema"]))
	require.Equal(t, string(spec.OutputSchema), string(get["outputSchema"]))
	require.JSONEq(t, `{"title":"Read note","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}`, string(get["annotations"]))
	require.JSONEq(t, `"Read note"`, string(get["title"]))
	require.NotContains(t, tools["picture"], "outputSchema")

	require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", true))
	names, tools = byName(t, c.listAll(t, 4))
	require.Len(t, names, 15)
	require.JSONEq(t, `{"title":"Delete note","readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false}`, string(tools["delete_note"]["annotations"]))
	require.JSONEq(t, `{"title":"Create note","readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false}`, string(tools["create_note"]["annotations"]))
}

// TestHTTPScopes checks that a scope's change notifies that scope's
// sessions only, and that each tenant lists what it may call.
func TestHTTPScopes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, authOptions())
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	connect := func(token, workspace string) (*client.Client, *notifications) {
		//lint:ignore SA1019 the standalone GET stream is how streamable HTTP clients of the revisions served (2025-03-26 to 2025-11-25) get tools/list_changed; only 2026-07-28 removed it
		tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithContinuousListening(),
			transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token, "X-Workspace": workspace}))
		require.NoError(t, err)
		c := client.NewClient(tr, clientOptions()...)
		n := collect(c)
		start(t, c)
		return c, n
	}
	red, redNotes := connect("ada-token", "red")
	blue, blueNotes := connect("bob-token", "blue")
	ctx := context.Background()

	require.NotContains(t, toolNames(t, red), "create_note")
	require.NoError(t, f.reg.Tenants().SetWrites(ctx, "red", true))
	redNotes.next(t, string(mcp.MethodNotificationToolsListChanged))
	require.Contains(t, toolNames(t, red), "create_note")
	require.NotContains(t, toolNames(t, blue), "create_note")

	res := call(t, red, "create_note", map[string]any{"title": "Red note"})
	require.False(t, res.IsError)
	res = call(t, blue, "create_note", map[string]any{"title": "Blue note"})
	require.True(t, res.IsError)
	require.Equal(t, `Tool "create_note" changes data, and write tools are off in tenant "blue". Ask the user to enable write tools for this tenant, then call create_note again.`, text(t, res))
	require.Equal(t, 2, f.noteCount(t))

	// A change for every tenant reaches blue too; it is blue's first
	// list_changed, so red's change did not reach it.
	require.NoError(t, f.reg.SetEnabled("web_lookup", false))
	blueNotes.next(t, string(mcp.MethodNotificationToolsListChanged))
	for _, n := range blueNotes.drain() {
		require.NotEqual(t, string(mcp.MethodNotificationToolsListChanged), n.Method)
	}
}

// TestStatelessReplicas serves one database from two stateless replicas
// behind a round-robin balancer: a session-less client lists on one and
// calls on the other.
func TestStatelessReplicas(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	other := mcpadapter.New(f.reg, &mcpadapter.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { other.Close() })
	replicas := []http.Handler{f.srv.StatelessHandler(), other.StatelessHandler()}
	var served [2]atomic.Int64
	var next atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := next.Add(1) % 2
		served[i].Add(1)
		replicas[i].ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	start(t, c)
	require.Empty(t, c.GetSessionId())
	require.Contains(t, toolNames(t, c), "get_note")
	for range 3 {
		res := call(t, c, "get_note", map[string]any{"id": 1})
		require.JSONEq(t, `{"id":1,"title":"Hello","body":"World"}`, structured(t, res))
	}
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "slow_count", Meta: &mcp.Meta{ProgressToken: "p"}}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.NotZero(t, served[0].Load())
	require.NotZero(t, served[1].Load())

	// There is no GET stream.
	req, err := http.NewRequest(http.MethodGet, ts.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := rawHTTP.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// TestHTTPCallStream checks that a call's notifications come on its own
// response stream, in order, before its result.
func TestHTTPCallStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := &rpc{url: ts.URL}
	c.initialize(t)
	resp, body := c.post(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow_count","_meta":{"progressToken":7}}}`)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var methods []string
	for _, ev := range strings.Split(strings.TrimSpace(body), "\n\n") {
		data := ev[strings.Index(ev, "data: ")+len("data: "):]
		if data == "" {
			continue // the priming event (streams_test.go)
		}
		var msg struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			ID     any             `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &msg))
		if msg.Method == "" {
			methods = append(methods, "result")
			continue
		}
		methods = append(methods, msg.Method+" "+string(bytes.TrimSpace(msg.Params)))
	}
	require.Equal(t, []string{
		`notifications/progress {"message":"counted","progress":1,"progressToken":7,"total":3}`,
		`notifications/progress {"message":"counted","progress":2,"progressToken":7,"total":3}`,
		`notifications/progress {"message":"counted","progress":3,"progressToken":7,"total":3}`,
		`notifications/message {"data":"counted to three","level":"info","logger":"slow_count"}`,
		`notifications/message {"data":"that was all","level":"warning","logger":"slow_count"}`,
		"result",
	}, methods)
}

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
