package interop_test

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/chatadapter"
)

func TestAnthropicTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	set := f.set(t, chatadapter.Anthropic)
	tools := roundTrip[[]anthropic.ToolUnionParam](t, set.JSON)
	for i, tool := range tools {
		require.NotNil(t, tool.OfTool, set.Names[i])
		require.Equal(t, set.Names[i], tool.OfTool.Name)
		require.NotEmpty(t, tool.OfTool.Description.Value)
		require.NotNil(t, tool.OfTool.InputSchema.Properties, tool.OfTool.Name)
	}
	req := anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 1024, Tools: tools,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}
	var back struct{ Tools json.RawMessage }
	require.NoError(t, json.Unmarshal(mustJSON(t, req), &back))
	require.JSONEq(t, string(set.JSON), string(back.Tools))
}

func TestAnthropicDispatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	input := func(s string) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m))
		return m
	}
	turn := anthropic.NewAssistantMessage(
		anthropic.NewTextBlock("Let me look."),
		anthropic.NewToolUseBlock("toolu_1", input(getRoadmap), "get_note"),
		anthropic.NewToolUseBlock("toolu_2", input(createIdea), "create_note"),
		anthropic.NewToolUseBlock("toolu_3", input(badArgs), "create_note"),
		anthropic.NewToolUseBlock("toolu_4", map[string]any{}, "get_nite"),
		anthropic.NewToolUseBlock("toolu_5", input(`{"id":"p1"}`), "photo"),
	)
	reply, err := f.a.Dispatch(f.ctx, chatadapter.Anthropic, mustJSON(t, turn))
	require.NoError(t, err)
	require.Len(t, reply.Messages, 1, "one user message holds every tool_result")
	msg := roundTrip[anthropic.MessageParam](t, reply.Messages[0])
	require.NotNil(t, msg.OfUser, "a user message")
	require.Len(t, msg.OfUser.Content, 5)
	for i, block := range msg.OfUser.Content {
		tr := block.OfToolResult
		require.NotNil(t, tr)
		require.Equal(t, turn.OfAssistant.Content[i+1].OfToolUse.ID, tr.ToolUseID)
		o := reply.Outcomes[i]
		require.Equal(t, o.Result.IsError, tr.IsError.Value, o.Result.Text())
		if i < 4 {
			require.Len(t, tr.Content, 1)
			require.Equal(t, string(o.Result.JSON), tr.Content[0].OfText.Text)
		}
	}
	require.Equal(t, []bool{false, false, true, true, false}, []bool{
		reply.Outcomes[0].Result.IsError, reply.Outcomes[1].Result.IsError, reply.Outcomes[2].Result.IsError,
		reply.Outcomes[3].Result.IsError, reply.Outcomes[4].Result.IsError})
	rich := msg.OfUser.Content[4].OfToolResult.Content
	require.Len(t, rich, 3)
	require.Equal(t, "Photo p1.", rich[0].OfText.Text)
	require.Equal(t, "iVBORw==", rich[1].OfImage.Source.OfBase64.Data)
	require.Equal(t, "image/png", string(rich[1].OfImage.Source.OfBase64.MediaType))
	require.Equal(t, "JVBERi0xLjc=", rich[2].OfDocument.Source.OfBase64.Data)
	require.Contains(t, f.childTitles(t, "projects"), "Idea")

	// A response Message, as the SDK reads it, dispatches its tool_use
	// blocks.
	var resp anthropic.Message
	require.NoError(t, json.Unmarshal([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude","stop_reason":"tool_use",
		"content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_9","name":"get_note","input":{"noteId":"roadmap"}}],
		"usage":{"input_tokens":1,"output_tokens":1}}`), &resp))
	reply, err = f.a.Dispatch(f.ctx, chatadapter.Anthropic, mustJSON(t, resp.ToParam()))
	require.NoError(t, err)
	require.Len(t, reply.Outcomes, 1)
	require.Equal(t, "toolu_9", reply.Outcomes[0].Call.ID)
	require.False(t, reply.Outcomes[0].Result.IsError, reply.Outcomes[0].Result.Text())
}
