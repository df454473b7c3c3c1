package interop_test

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"
)

// A turn paused at a call that needs approval, then resumed (one call
// denied, one approved), gives messages each SDK reads back whole, with a
// result for every call in the model's order.
func TestApprovalResumeSDKs(t *testing.T) {
	t.Parallel()
	input := func(s string) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m))
		return m
	}
	resume := func(t *testing.T, f *fixture, shape chatadapter.Shape, turn []byte) *chatadapter.Reply {
		require.NoError(t, f.reg.Tenants().SetApproval(f.ctx, tenant, "delete_note", true))
		reply, err := f.a.Dispatch(f.ctx, shape, turn)
		require.NoError(t, err)
		require.Empty(t, reply.Messages)
		require.Equal(t, "pancakes", input(string(reply.Pending.Call.Args))["noteId"])
		reply, err = reply.Pending.Resume(f.ctx, ask.ElicitResult{Action: ask.Decline})
		require.NoError(t, err)
		require.Equal(t, "meetings", input(string(reply.Pending.Call.Args))["noteId"])
		reply, err = reply.Pending.Resume(f.ctx, ask.ElicitResult{Action: ask.Accept})
		require.NoError(t, err)
		require.Nil(t, reply.Pending)
		require.Len(t, reply.Outcomes, 3)
		require.Contains(t, f.childTitles(t, "recipes"), "Pancakes", "denied")
		require.Contains(t, f.childTitles(t, "projects"), "Roadmap")
		require.NotContains(t, f.childTitles(t, "projects"), "Meeting notes", "approved")
		return reply
	}
	const denied = `{"error":"The user denied this change. Nothing was saved. Ask the user what to do instead."}`

	t.Run("Anthropic", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		turn := anthropic.NewAssistantMessage(
			anthropic.NewToolUseBlock("toolu_1", input(getRoadmap), "get_note"),
			anthropic.NewToolUseBlock("toolu_2", input(`{"noteId":"pancakes"}`), "delete_note"),
			anthropic.NewToolUseBlock("toolu_3", input(`{"noteId":"meetings"}`), "delete_note"),
		)
		reply := resume(t, f, chatadapter.Anthropic, mustJSON(t, turn))
		require.Len(t, reply.Messages, 1)
		msg := roundTrip[anthropic.MessageParam](t, reply.Messages[0])
		require.Len(t, msg.OfUser.Content, 3)
		for i, id := range []string{"toolu_1", "toolu_2", "toolu_3"} {
			require.Equal(t, id, msg.OfUser.Content[i].OfToolResult.ToolUseID)
			require.Equal(t, i == 1, msg.OfUser.Content[i].OfToolResult.IsError.Value)
		}
		require.Equal(t, denied, msg.OfUser.Content[1].OfToolResult.Content[0].OfText.Text)
	})

	t.Run("Gemini", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		turn := genai.NewContentFromParts([]*genai.Part{
			genai.NewPartFromFunctionCall("get_note", input(getRoadmap)),
			genai.NewPartFromFunctionCall("delete_note", input(`{"noteId":"pancakes"}`)),
			genai.NewPartFromFunctionCall("delete_note", input(`{"noteId":"meetings"}`)),
		}, genai.RoleModel)
		reply := resume(t, f, chatadapter.Gemini, mustJSON(t, turn))
		require.Len(t, reply.Messages, 1)
		content := roundTrip[genai.Content](t, reply.Messages[0])
		require.Len(t, content.Parts, 3)
		for i, name := range []string{"get_note", "delete_note", "delete_note"} {
			require.Equal(t, name, content.Parts[i].FunctionResponse.Name)
		}
		require.Equal(t, input(denied)["error"], content.Parts[1].FunctionResponse.Response["error"])
		require.Equal(t, []any{"meetings"}, content.Parts[2].FunctionResponse.Response["deletedNoteIds"])
	})
}
