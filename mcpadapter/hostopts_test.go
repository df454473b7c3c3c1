package mcpadapter_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
)

// tracer stands for an APM library that records a span per request with
// Options.OnRequest.
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

func (tr *tracer) onRequest(_ context.Context, r mcpadapter.Request) func(error) {
	if r.Method != "tools/call" && r.Method != "tools/list" && r.Method != "prompts/get" {
		return nil
	}
	tr.note(fmt.Sprintf("start %s %s", r.Method, r.Name))
	return func(err error) { tr.note(fmt.Sprintf("end %s %s: %v", r.Method, r.Name, err)) }
}

// TestOnRequest: a host's Options.OnRequest sees every request, from its
// start to its answer, with the tool or prompt it names and the JSON-RPC
// error the client gets, while the adapter still filters tools by tenant
// and answers refusals with the registry's sentence.
func TestOnRequest(t *testing.T) {
	t.Parallel()
	tr := &tracer{}
	f := newFixture(t, &mcpadapter.Options{OnRequest: tr.onRequest})
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)

	tp, err := transport.NewStreamableHTTP(ts.URL)
	require.NoError(t, err)
	c := client.NewClient(tp, clientOptions()...)
	start(t, c)

	// Writes are off in the default tenant: the listing hides the write
	// tools, and a call of one gets the registry's sentence.
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
	require.Equal(t, `Tool "create_note" changes data, and write tools are off in the default tenant. Ask the user to enable write tools for this tenant, then call create_note again.`, text(t, res))
	_, err = c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_nose"}})
	require.EqualError(t, err, `invalid params: Unknown tool "get_nose". Did you mean "get_note"?`)

	require.Equal(t, []string{
		"start tools/list ", "end tools/list : <nil>",
		"start tools/call get_note", "end tools/call get_note: <nil>",
		"start tools/call create_note", "end tools/call create_note: <nil>",
		"start tools/call get_nose", `end tools/call get_nose: Unknown tool "get_nose". Did you mean "get_note"?`,
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
