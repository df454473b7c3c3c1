package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/sqlite"
)

// answers plays the suite's client: it answers sampling and elicitation as
// the conformance client does.
type answers struct{}

func (answers) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
		Content: mcp.TextContent{Type: "text", Text: "This is a test response from the client"}}, Model: "test-model", StopReason: "endTurn"}, nil
}

func (answers) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"username": "testuser", "email": "test@example.com"}}}, nil
}

// TestFixtures calls every fixture over streamable HTTP and checks the
// shape of its answer; the suite itself runs in CI (.ci/conformance-run.sh).
func TestFixtures(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "c.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)}, fixtures)
	require.NoError(t, err)
	srv := mcpadapter.New(reg, &mcpadapter.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	//lint:ignore SA1019 the standalone GET stream is how streamable HTTP clients of the revisions served (2025-03-26 to 2025-11-25) get tools/list_changed; only 2026-07-28 removed it
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithContinuousListening(), transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION),
		client.WithSamplingHandler(answers{}), client.WithElicitationHandler(answers{}))
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { c.Close() })
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}})
	require.NoError(t, err)

	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	want := []string{"json_schema_2020_12_tool", "man", "test_audio_content", "test_elicitation", "test_elicitation_sep1034_defaults",
		"test_elicitation_sep1330_enums", "test_embedded_resource", "test_error_handling", "test_image_content",
		"test_multiple_content_types", "test_reconnection", "test_sampling", "test_simple_text", "test_tool_with_logging", "test_tool_with_progress"}
	sort.Strings(want)
	require.Equal(t, want, names)

	tests := []struct {
		tool    string
		args    map[string]any
		isError bool
		types   []string
		text    string // of the first block, if it is text
	}{
		{"test_simple_text", nil, false, []string{"text"}, "This is a simple text response for testing."},
		{"test_image_content", nil, false, []string{"image"}, ""},
		{"test_audio_content", nil, false, []string{"audio"}, ""},
		{"test_embedded_resource", nil, false, []string{"resource"}, ""},
		{"test_multiple_content_types", nil, false, []string{"text", "image", "resource"}, "Multiple content types test:"},
		{"test_tool_with_logging", nil, false, []string{"text"}, "Tool with logging executed successfully"},
		{"test_tool_with_progress", nil, false, []string{"text"}, "Progress reported"},
		{"test_error_handling", nil, true, []string{"text"}, "This tool intentionally returns an error for testing"},
		{"test_sampling", map[string]any{"prompt": "Test prompt"}, false, []string{"text"}, "LLM response: This is a test response from the client"},
		{"test_elicitation", map[string]any{"message": "Who?"}, false, []string{"text"},
			`User response: action=accept, content={"email":"test@example.com","username":"testuser"}`},
		{"test_reconnection", nil, false, []string{"text"}, "Reconnection test completed"},
		{"json_schema_2020_12_tool", map[string]any{"name": "Ada", "address": map[string]any{"city": "London"}}, false, []string{"text"}, "Hello Ada"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tt.tool, Arguments: tt.args}})
			require.NoError(t, err)
			require.Equal(t, tt.isError, res.IsError)
			var types []string
			for _, b := range res.Content {
				types = append(types, blockType(b))
			}
			require.Equal(t, tt.types, types)
			if tt.text != "" {
				require.Equal(t, tt.text, res.Content[0].(mcp.TextContent).Text)
			}
		})
	}
}

// blockType names a content block's type.
func blockType(b mcp.Content) string {
	switch b.(type) {
	case mcp.TextContent:
		return "text"
	case mcp.ImageContent:
		return "image"
	case mcp.AudioContent:
		return "audio"
	case mcp.EmbeddedResource:
		return "resource"
	}
	return fmt.Sprintf("%T", b)
}
