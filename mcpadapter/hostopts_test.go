package mcpadapter_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
)

// tracer stands for an APM library that instruments mcp-go with a server
// option of its own: hooks and a tool handler middleware.
type tracer struct {
	mu     sync.Mutex
	events []string
}

func (tr *tracer) note(e string) {
	tr.mu.Lock()
	tr.events = append(tr.events, e)
	tr.mu.Unlock()
}

func (tr *tracer) seen() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.events...)
}

// option returns the tracer's server option, and the hooks it installs,
// which the host may add to later.
func (tr *tracer) option() (server.ServerOption, *server.Hooks) {
	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest) { tr.note("hook before " + req.Params.Name) })
	hooks.AddAfterCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest, _ any) {
		tr.note("hook after " + req.Params.Name)
	})
	mw := server.WithToolHandlerMiddleware(func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tr.note("middleware " + req.Params.Name)
			return next(ctx, req)
		}
	})
	return func(s *server.MCPServer) {
		server.WithHooks(hooks)(s)
		mw(s)
	}, hooks
}

// TestHostServerOptions: a host's mcp-go options, hooks included, work
// beside the adapter's: the adapter still filters tools by scope and
// answers refusals with the registry's sentence, and the host's hooks
// and middleware see every call, including hooks added after New.
func TestHostServerOptions(t *testing.T) {
	t.Parallel()
	tr := &tracer{}
	opt, hooks := tr.option()
	var httpOptionUsed bool
	f := newFixture(t, &mcpadapter.Options{
		ServerOptions: []server.ServerOption{opt},
		HTTPOptions: []server.StreamableHTTPOption{func(*server.StreamableHTTPServer) {
			httpOptionUsed = true
		}},
	})
	hooks.AddOnSuccess(func(_ context.Context, _ any, method mcp.MCPMethod, _ any, _ any) {
		if method == mcp.MethodToolsList {
			tr.note("success tools/list")
		}
	})
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	require.True(t, httpOptionUsed)

	tp, err := transport.NewStreamableHTTP(ts.URL)
	require.NoError(t, err)
	c := client.NewClient(tp, clientOptions()...)
	start(t, c)

	// Writes are off in the default scope: the adapter's filter hides the
	// write tools, and a call of one gets the registry's sentence.
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	require.Contains(t, names, "get_note")
	require.NotContains(t, names, "create_note")

	res := call(t, c, "get_note", map[string]any{"id": 1})
	require.False(t, res.IsError, text(t, res))
	res = call(t, c, "create_note", map[string]any{"title": "x"})
	require.True(t, res.IsError)
	require.Equal(t, `Tool "create_note" changes data, and write tools are off in the default scope. Ask the user to enable write tools for this scope, then call create_note again.`, text(t, res))

	require.Equal(t, []string{
		"success tools/list",
		"hook before get_note", "middleware get_note", "hook after get_note",
		"hook before create_note", "middleware create_note", "hook after create_note",
	}, tr.seen())
}

// TestRegistryMiddleware: the registry's middleware (llmtool.Options.Middleware)
// runs on MCP calls, and its refusal reaches the client as the tool's
// error result, in its words.
func TestRegistryMiddleware(t *testing.T) {
	t.Parallel()
	var seen []string
	var mu sync.Mutex
	closed := func(next llmtool.InvokeFunc) llmtool.InvokeFunc {
		return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
			mu.Lock()
			seen = append(seen, req.Spec.Name+" as "+req.Principal.ID)
			mu.Unlock()
			if req.Spec.Name == "web_lookup" {
				return req.Fail(llmtool.Limited("Web lookups are paused for an hour.").Next("Answer from the notes instead."))
			}
			return next(ctx, req)
		}
	}
	f := newFixtureReg(t, &llmtool.Options{Middleware: []llmtool.Middleware{closed}}, &mcpadapter.Options{Principal: &llmtool.Principal{ID: "alice"}})
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	tp, err := transport.NewStreamableHTTP(ts.URL)
	require.NoError(t, err)
	c := client.NewClient(tp, clientOptions()...)
	start(t, c)

	res := call(t, c, "web_lookup", map[string]any{})
	require.True(t, res.IsError)
	require.Equal(t, "Web lookups are paused for an hour. Answer from the notes instead.", text(t, res))
	res = call(t, c, "get_note", map[string]any{"id": 1})
	require.False(t, res.IsError, text(t, res))
	require.NotContains(t, structured(t, res), `"error"`)
	require.Equal(t, []string{"web_lookup as alice", "get_note as alice"}, seen)
}
