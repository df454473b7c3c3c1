package mcpadapter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"
)

// TestMCPGoSeams pins the mcp-go behaviours the adapter works around or
// relies on, on a bare mcp-go server: when one of them fails, mcp-go
// changed, and the adapter's seam (named in each case) must follow.
func TestMCPGoSeams(t *testing.T) {
	t.Parallel()
	call := func(t *testing.T, m *server.MCPServer, name string) mcp.JSONRPCMessage {
		t.Helper()
		msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": name}})
		require.NoError(t, err)
		return m.HandleMessage(context.Background(), msg)
	}
	ok := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}

	// rpcerror.go: a handler's error, whatever it is, is -32603 with its
	// text; the adapter's writers put the code the error stands for.
	t.Run("handler errors are internal errors", func(t *testing.T) {
		t.Parallel()
		m := server.NewMCPServer("bare", "1")
		m.AddTool(mcp.Tool{Name: "fail"}, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &rpcError{code: mcp.INVALID_PARAMS, message: "the adapter's sentence"}
		})
		res, isErr := call(t, m, "fail").(mcp.JSONRPCError)
		require.True(t, isErr)
		require.Equal(t, mcp.INTERNAL_ERROR, res.Error.Code)
		require.Equal(t, "the adapter's sentence", res.Error.Message)
	})

	// dispatch.go: what a BeforeCallTool hook changes in the request is
	// what mcp-go looks the tool up by and hands the handler.
	t.Run("a BeforeCallTool hook's change reaches the handler", func(t *testing.T) {
		t.Parallel()
		hooks := &server.Hooks{}
		hooks.AddBeforeCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest) {
			req.Params.Meta = withCalledName(req.Params.Meta, req.Params.Name)
			req.Params.Name = toolDispatcher
		})
		m := server.NewMCPServer("bare", "1", server.WithHooks(hooks))
		var got string
		m.AddTool(mcp.Tool{Name: toolDispatcher}, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			got = calledName(req.Params.Meta)
			return mcp.NewToolResultText("ok"), nil
		})
		_, isResp := call(t, m, "any_name").(mcp.JSONRPCResponse)
		require.True(t, isResp)
		require.Equal(t, "any_name", got)
	})

	// dispatch.go, notify.go: with listChanged advertised, registering a
	// tool tells every session, including one whose client speaks
	// 2026-07-28 and opened no listen stream (the stdio session has no
	// subscription filter), so the adapter registers only before sessions
	// exist, and sends list_changed itself.
	t.Run("registering a tool broadcasts list_changed", func(t *testing.T) {
		t.Parallel()
		m := server.NewMCPServer("bare", "1", server.WithToolCapabilities(true))
		cs := &bareSession{ch: make(chan mcp.JSONRPCNotification, 4)}
		require.NoError(t, m.RegisterSession(context.Background(), cs))
		m.AddTool(mcp.Tool{Name: "late"}, ok)
		select {
		case n := <-cs.ch:
			require.Equal(t, mcp.MethodNotificationToolsListChanged, n.Method)
		default:
			t.Fatal("no broadcast")
		}
	})

	// rpcerror.go (outbox): over a session whose client keeps its GET
	// stream open, mcp-go writes a call's notification on whichever stream
	// of the session takes it, the GET stream too, and as the JSON that
	// outbox.add makes of it.
	t.Run("a call's notifications go on any stream of its session", func(t *testing.T) {
		t.Parallel()
		m := server.NewMCPServer("bare", "1")
		seen := make(chan string) // "GET <data>" or "POST <data>", for each notification
		type outcome struct {
			onGet  bool     // a notification went on the GET stream
			unlike []string // notes that are not as written
		}
		outcomes := make(chan outcome, 1)
		m.AddTool(mcp.Tool{Name: "notify"}, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var box outbox
			var onGet bool
			var unlike []string
			defer func() { outcomes <- outcome{onGet, unlike} }()
			for i := 0; i < 100 && !onGet; i++ {
				params := map[string]any{"progressToken": "t", "progress": i, "message": "<&>"}
				note := box.add(string(mcp.MethodNotificationProgress), params)
				if err := m.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params); err != nil {
					return nil, err
				}
				select {
				case got := <-seen:
					stream, data, _ := strings.Cut(got, " ")
					onGet = stream == "GET"
					if data != note {
						unlike = append(unlike, data+" written, "+note+" noted")
					}
				case <-time.After(10 * time.Second):
					return nil, errors.New("a notification was not written")
				}
			}
			return mcp.NewToolResultText("ok"), nil
		})
		ts := httptest.NewServer(server.NewStreamableHTTPServer(m, server.WithEventStore(newEventStore(defaultReplayEvents, defaultReplayAge))))
		t.Cleanup(ts.Close)
		session := ""
		do := func(method, body string) *http.Response {
			req, err := http.NewRequest(method, ts.URL, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
			req.Header.Set("Mcp-Session-Id", session)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			t.Cleanup(func() { resp.Body.Close() })
			return resp
		}
		read := func(stream string, body io.Reader) {
			lines := bufio.NewScanner(body)
			for lines.Scan() {
				if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok && strings.Contains(data, `"method"`) {
					seen <- stream + " " + data
				}
			}
		}
		session = do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+mcp.LATEST_LEGACY_PROTOCOL_VERSION+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`).Header.Get("Mcp-Session-Id")
		require.NotEmpty(t, session)
		require.Equal(t, http.StatusAccepted, do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).StatusCode)
		get := do(http.MethodGet, "")
		require.Equal(t, http.StatusOK, get.StatusCode)
		go read("GET", get.Body)
		resp := do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notify"}}`)
		var last string
		for lines := bufio.NewScanner(resp.Body); lines.Scan(); {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok && strings.Contains(data, `"method"`) {
				seen <- "POST " + data
			} else if ok {
				last = data
			}
		}
		require.Contains(t, last, `"id":2`)
		out := <-outcomes
		require.Empty(t, out.unlike)
		require.True(t, out.onGet, "no notification of the call went on the GET stream")
	})

	// jsonrpc.go: mcp-go serves a request whatever its id is, and takes a
	// message with an id and nothing else for an empty response (202
	// Accepted), so the adapter's transports refuse both before it.
	t.Run("a request runs whatever its id", func(t *testing.T) {
		t.Parallel()
		m := server.NewMCPServer("bare", "1")
		var runs atomic.Int64
		m.AddTool(mcp.Tool{Name: "count"}, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return mcp.NewToolResultText("ok"), nil
		})
		ts := httptest.NewServer(server.NewStreamableHTTPServer(m, server.WithStateLess(true)))
		t.Cleanup(ts.Close)
		post := func(body string) int {
			resp, err := http.Post(ts.URL, "application/json", strings.NewReader(body))
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			return resp.StatusCode
		}
		ids := []string{`{"x":1}`, `true`, `[1]`, `1.5`}
		for _, id := range ids {
			require.Equal(t, http.StatusOK, post(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"count"}}`), id)
		}
		require.Equal(t, int64(len(ids)), runs.Load())
		require.Equal(t, http.StatusAccepted, post(`{"jsonrpc":"2.0","id":7}`))
	})

	// resources.go: a catch-all template serves every URI, with the URI
	// the client asked for.
	t.Run("the catch-all template matches every URI", func(t *testing.T) {
		t.Parallel()
		m := server.NewMCPServer("bare", "1")
		var uris []string
		m.AddResourceTemplate(mcp.NewResourceTemplate(anyURI, "any"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			uris = append(uris, req.Params.URI)
			return nil, errors.New("none")
		})
		for _, uri := range []string{"doc://1", "note://a/b?c=d#e", "urn:x", "x"} {
			msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": map[string]any{"uri": uri}})
			require.NoError(t, err)
			m.HandleMessage(context.Background(), msg)
		}
		require.Equal(t, []string{"doc://1", "note://a/b?c=d#e", "urn:x", "x"}, uris)
	})
}

// bareSession is a registered session with a notification channel.
type bareSession struct{ ch chan mcp.JSONRPCNotification }

func (s *bareSession) Initialize()                                         {}
func (s *bareSession) Initialized() bool                                   { return true }
func (s *bareSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.ch }
func (s *bareSession) SessionID() string                                   { return "bare" }
