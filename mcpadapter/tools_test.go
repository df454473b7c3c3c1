package mcpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/mcpadapter"
)

// connectors are the ways a test reaches a fixture's server.
var connectors = []struct {
	name     string
	parallel bool // stdio has one session per process: never in parallel
	connect  func(t *testing.T, f *fixture) *client.Client
}{
	{"stdio", false, stdioClient},
	{"http", true, httpClient},
	{"inprocess", true, inProcessClient},
}

func httpClient(t *testing.T, f *fixture) *client.Client {
	t.Helper()
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	//lint:ignore SA1019 the standalone GET stream is how streamable HTTP clients of the revisions served (2025-03-26 to 2025-11-25) get tools/list_changed; only 2026-07-28 removed it
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithContinuousListening(), transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	c := client.NewClient(tr, clientOptions()...)
	start(t, c)
	return c
}

func inProcessClient(t *testing.T, f *fixture) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClientWithOptions(mcpadapter.MCPServer(f.srv), clientOptions()...)
	require.NoError(t, err)
	start(t, c)
	return c
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestTools runs the same conversation over each transport: listing, a
// read, errors, a panic, writes refused and then enabled, rich content,
// progress and log notifications, sampling and elicitation.
func TestTools(t *testing.T) {
	reads := []string{"ask_model", "ask_name", "ask_twice", "crash", "get_note", "man", "picture", "slow_count", "web_lookup", "whoami"}
	writes := []string{"ask_in_write", "create_note", "crash_write", "delete_note", "swallow_ask"}
	all := append(append([]string(nil), reads...), writes...)
	sort.Strings(all)

	for _, conn := range connectors {
		t.Run(conn.name, func(t *testing.T) {
			if conn.parallel {
				t.Parallel()
			}
			f := newFixture(t, nil)
			c := conn.connect(t, f)
			notes := collect(c)
			ctx := context.Background()

			t.Run("listing without writes", func(t *testing.T) {
				require.Equal(t, reads, toolNames(t, c))
			})

			t.Run("annotations", func(t *testing.T) {
				res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
				require.NoError(t, err)
				byName := map[string]mcp.Tool{}
				for _, tl := range res.Tools {
					byName[tl.Name] = tl
				}
				type hints struct{ ro, destructive, idempotent, openWorld bool }
				for name, want := range map[string]hints{
					"get_note":   {ro: true, idempotent: true},
					"web_lookup": {ro: true, openWorld: true},
					"crash":      {ro: true},
				} {
					a := byName[name].Annotations
					require.NotNil(t, a.ReadOnlyHint, name)
					require.NotNil(t, a.DestructiveHint, name)
					require.NotNil(t, a.IdempotentHint, name)
					require.NotNil(t, a.OpenWorldHint, name)
					require.Equal(t, want, hints{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint}, name)
				}
				require.Equal(t, "Read note", byName["get_note"].Title)
				require.Equal(t, "Read a note's title and body.", byName["get_note"].Description)
				require.Equal(t, "object", byName["get_note"].InputSchema.Type)
				require.Equal(t, []string{"id"}, byName["get_note"].InputSchema.Required)
				require.Equal(t, "object", byName["get_note"].OutputSchema.Type)
				require.Empty(t, byName["picture"].OutputSchema.Type, "a rich tool declares no output schema")
			})

			t.Run("read call", func(t *testing.T) {
				audits := f.audits()
				res := call(t, c, "get_note", map[string]any{"id": 1})
				require.Equal(t, []string{"get_note ok"}, audits())
				require.False(t, res.IsError)
				require.JSONEq(t, `{"id":1,"title":"Hello","body":"World"}`, structured(t, res))
				require.JSONEq(t, `{"id":1,"title":"Hello","body":"World"}`, text(t, res))
				require.NotContains(t, structured(t, res), `"error"`)
			})

			t.Run("error call", func(t *testing.T) {
				res := call(t, c, "get_note", map[string]any{"id": 7})
				require.True(t, res.IsError)
				require.Equal(t, "Note 7 not found. Call list_notes to find the ID.", text(t, res))
				require.Nil(t, res.StructuredContent)
			})

			t.Run("invalid arguments", func(t *testing.T) {
				res := call(t, c, "get_note", map[string]any{"id": "seven"})
				require.True(t, res.IsError)
				require.Equal(t, "Error: /id: expected integer, got string. Send an integer.", text(t, res))
			})

			t.Run("unknown tool", func(t *testing.T) {
				audits := f.audits()
				_, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_nite"}})
				if conn.name == "inprocess" { // no transport whose writer sets the code (rpcerror.go)
					require.EqualError(t, err, `internal error: Unknown tool "get_nite". Did you mean "get_note"?`)
				} else {
					require.ErrorIs(t, err, mcp.ErrInvalidParams)
					require.EqualError(t, err, `invalid params: Unknown tool "get_nite". Did you mean "get_note"?`)
				}
				require.Equal(t, []string{"get_nite not_found"}, audits())
			})

			t.Run("write refused while the tenant's writes are off", func(t *testing.T) {
				audits := f.audits()
				res := call(t, c, "create_note", map[string]any{"title": "No"})
				require.True(t, res.IsError)
				require.Equal(t, `Tool "create_note" changes data, and write tools are off in the default tenant. Ask the user to enable write tools for this tenant, then call create_note again.`, text(t, res))
				require.Equal(t, 1, f.noteCount(t))
				require.Equal(t, []string{"create_note " + audit.OutcomeRefused}, audits())
			})

			t.Run("list_changed after enabling writes", func(t *testing.T) {
				notes.drain()
				require.NoError(t, f.reg.Tenants().SetWrites(ctx, "", true))
				notes.next(t, string(mcp.MethodNotificationToolsListChanged))
				require.Equal(t, all, toolNames(t, c))
			})

			t.Run("write call commits", func(t *testing.T) {
				res := call(t, c, "create_note", map[string]any{"title": "Groceries", "body": "milk"})
				require.False(t, res.IsError, text(t, res))
				require.JSONEq(t, `{"id":2,"title":"Groceries","body":"milk"}`, structured(t, res))
				var title, body string
				require.NoError(t, f.db.QueryRow("SELECT title, body FROM notes WHERE id = 2").Scan(&title, &body))
				require.Equal(t, []string{"Groceries", "milk"}, []string{title, body})
			})

			t.Run("panic call", func(t *testing.T) {
				res := call(t, c, "crash", nil)
				require.True(t, res.IsError)
				require.Equal(t, "Internal error in crash; the details were logged. Try again once; if it fails again, tell the user the tool is failing.", text(t, res))
				// The server survives.
				res = call(t, c, "get_note", map[string]any{"id": 1})
				require.False(t, res.IsError)
			})

			t.Run("panic in a write rolls back", func(t *testing.T) {
				before := f.noteCount(t)
				res := call(t, c, "crash_write", map[string]any{"title": "Lost"})
				require.True(t, res.IsError)
				require.Equal(t, "Internal error in crash_write; the details were logged. Try again once; if it fails again, tell the user the tool is failing.", text(t, res))
				require.Equal(t, before, f.noteCount(t))
			})

			t.Run("rich content", func(t *testing.T) {
				res := call(t, c, "picture", nil)
				require.False(t, res.IsError)
				require.Nil(t, res.StructuredContent)
				require.Len(t, res.Content, 5)
				require.Equal(t, mcp.TextContent{Type: "text", Text: "A red pixel:"}, res.Content[0])
				require.Equal(t, mcp.ImageContent{Type: "image", Data: "UE5H", MIMEType: "image/png"}, res.Content[1])
				require.Equal(t, mcp.AudioContent{Type: "audio", Data: "V0FW", MIMEType: "audio/wav"}, res.Content[2])
				require.Equal(t, mcp.EmbeddedResource{Type: "resource", Resource: mcp.TextResourceContents{URI: "notes://1", MIMEType: "text/plain", Text: "Hello"}}, res.Content[3])
				require.Equal(t, mcp.EmbeddedResource{Type: "resource", Resource: mcp.BlobResourceContents{URI: "notes://1.bin", MIMEType: "application/octet-stream", Blob: "AQI="}}, res.Content[4])
			})

			t.Run("progress and log notifications", func(t *testing.T) {
				// next returns the params of a call's n next progress and
				// log notifications, by method. Over HTTP a session's
				// notifications go on whichever of its streams reads first
				// (mcp-go's transport): the call's own or the GET stream
				// this client keeps open, so their order across the two is
				// the client's (TestSessionNotificationsBeforeResult checks
				// that the server wrote them all before the result); they
				// are compared in order elsewhere.
				progress, message := string(mcp.MethodNotificationProgress), string(mcp.MethodNotificationMessage)
				next := func(n int) map[string][]map[string]any {
					t.Helper()
					out := make(map[string][]map[string]any)
					for range n {
						m := notes.next(t, progress, message)
						out[m.Method] = append(out[m.Method], m.Params.AdditionalFields)
					}
					for _, params := range out {
						if conn.name == "http" {
							slices.SortFunc(params, func(a, b map[string]any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
						}
					}
					return out
				}
				notes.drain()
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
					Name: "slow_count", Meta: &mcp.Meta{ProgressToken: "count-1"},
				}})
				require.NoError(t, err)
				require.False(t, res.IsError)
				var want []map[string]any
				for i := 1; i <= 3; i++ {
					want = append(want, map[string]any{"progressToken": "count-1", "progress": float64(i), "total": float64(3), "message": "counted"})
				}
				got := next(5)
				require.Equal(t, want, got[progress])
				// The default level lets info and above through.
				require.Equal(t, []map[string]any{
					{"level": "info", "logger": "slow_count", "data": "counted to three"},
					{"level": "warning", "logger": "slow_count", "data": "that was all"},
				}, got[message])

				// logging/setLevel is honoured.
				//lint:ignore SA1019 logging/setLevel is part of every revision served (2024-11-05 to 2025-11-25); only 2026-07-28 deprecates it
				require.NoError(t, c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelWarning}}))
				call(t, c, "slow_count", nil)
				require.Equal(t, "warning", next(1)[message][0]["level"])
				//lint:ignore SA1019 logging/setLevel is part of every revision served (2024-11-05 to 2025-11-25); only 2026-07-28 deprecates it
				require.NoError(t, c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}))
				call(t, c, "slow_count", nil)
				var levels []string
				for _, n := range next(3)[message] {
					levels = append(levels, n["level"].(string))
				}
				if conn.name == "http" {
					slices.Sort(levels)
				}
				require.Equal(t, []string{"debug", "info", "warning"}, levels)
			})

			t.Run("sampling", func(t *testing.T) {
				res := call(t, c, "ask_model", nil)
				require.False(t, res.IsError)
				require.JSONEq(t, `{"reply":"haiku for: Write a haiku about SQLite.","model":"test-model"}`, structured(t, res))
			})

			t.Run("elicitation", func(t *testing.T) {
				res := call(t, c, "ask_name", nil)
				require.False(t, res.IsError)
				require.JSONEq(t, `{"action":"accept","answer":{"name":"Ada (asked: Who are you?)"}}`, structured(t, res))
			})

			t.Run("elicitation in a write tool", func(t *testing.T) {
				// mcp-go sends elicitation/create (this client is at
				// 2025-11-25) and runs the handler again with the answer:
				// one note, committed by the second run.
				audits := f.audits()
				before := f.noteCount(t)
				res := call(t, c, "ask_in_write", nil)
				require.False(t, res.IsError, text(t, res))
				var out noteOut
				require.NoError(t, json.Unmarshal([]byte(structured(t, res)), &out))
				require.Equal(t, "Ada (asked: Title of the new note?)", out.Title)
				require.Equal(t, before+1, f.noteCount(t))
				var title string
				require.NoError(t, f.db.QueryRow("SELECT title FROM notes WHERE id = ?", out.ID).Scan(&title))
				require.Equal(t, out.Title, title)
				require.Equal(t, []string{"ask_in_write input_required", "ask_in_write ok"}, audits())
			})

			t.Run("two rounds", func(t *testing.T) {
				res := call(t, c, "ask_twice", nil)
				require.False(t, res.IsError, text(t, res))
				require.JSONEq(t, `{"name":"Ada (asked: Who are you?)","colour":"Ada (asked: Favourite colour, Ada (asked: Who are you?)?)"}`, structured(t, res))
			})

			t.Run("list_changed after the kill switch", func(t *testing.T) {
				notes.drain()
				require.NoError(t, f.reg.SetEnabled("web_lookup", false))
				notes.next(t, string(mcp.MethodNotificationToolsListChanged))
				require.NotContains(t, toolNames(t, c), "web_lookup")
				res := call(t, c, "web_lookup", nil)
				require.True(t, res.IsError)
				require.Equal(t, `Tool "web_lookup" is switched off. Use another tool, or ask the user to have an administrator enable it.`, text(t, res))
			})
		})
	}
}
