package interop_test

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/chatadapter"
)

func TestOpenAIChatTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, shape := range []chatadapter.Shape{chatadapter.OpenAIChat, chatadapter.OpenAIChatStrict} {
		set := f.set(t, shape)
		tools := roundTrip[[]openai.ChatCompletionToolUnionParam](t, set.JSON)
		require.Len(t, tools, len(set.Names))
		for i, tool := range tools {
			require.NotNil(t, tool.OfFunction, set.Names[i])
			fn := tool.OfFunction.Function
			require.Equal(t, set.Names[i], fn.Name)
			require.NotEmpty(t, fn.Description.Value)
			require.Equal(t, "object", fn.Parameters["type"])
			require.Equal(t, shape == chatadapter.OpenAIChatStrict, fn.Strict.Value, fn.Name)
		}
		// The tools fit a request as they are.
		req := openai.ChatCompletionNewParams{Model: "gpt-4.1-mini", Tools: tools,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}
		var back struct{ Tools json.RawMessage }
		require.NoError(t, json.Unmarshal(mustJSON(t, req), &back))
		require.JSONEq(t, string(set.JSON), string(back.Tools))
	}
}

func TestOpenAIChatDispatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	call := func(id, name, args string) openai.ChatCompletionMessageToolCallUnionParam {
		return openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: args}}}
	}
	turn := openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{
		call("call_1", "get_note", getRoadmap),
		call("call_2", "create_note", createIdea),
		call("call_3", "create_note", badArgs),
		call("call_4", "get_nite", `{}`),
		call("call_5", "photo", `{"id":"p1"}`),
	}}
	reply, err := f.a.Dispatch(f.ctx, chatadapter.OpenAIChat, mustJSON(t, turn))
	require.NoError(t, err)
	require.Len(t, reply.Messages, 5)
	for i, m := range reply.Messages {
		msg := roundTrip[openai.ChatCompletionMessageParamUnion](t, m)
		require.NotNil(t, msg.OfTool, string(m))
		require.Equal(t, turn.ToolCalls[i].OfFunction.ID, msg.OfTool.ToolCallID)
		o := reply.Outcomes[i]
		if i < 4 {
			require.Equal(t, string(o.Result.JSON), msg.OfTool.Content.OfString.Value)
		}
		require.Equal(t, i == 2 || i == 3, o.Result.IsError, o.Result.Text())
	}
	require.Equal(t, "Photo p1.\n\n[image (image/png, 4 bytes) not shown: OpenAI Chat Completions takes no such content in tool results]\n\n"+
		"[resource file:///photos/p1.pdf (application/pdf, 8 bytes) not shown: OpenAI Chat Completions takes no such content in tool results]",
		roundTrip[openai.ChatCompletionMessageParamUnion](t, reply.Messages[4]).OfTool.Content.OfString.Value)
	require.Equal(t, "Unknown tool \"get_nite\". Did you mean \"get_note\"?", reply.Outcomes[3].Result.Text())
	require.Contains(t, f.childTitles(t, "projects"), "Idea")

	// A turn read back from an SDK response (ToParam) dispatches the same.
	var completion openai.ChatCompletion
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,
		"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"get_note","arguments":"{\"noteId\":\"roadmap\"}"}}]}}]}`), &completion))
	param := completion.Choices[0].Message.ToParam()
	reply, err = f.a.Dispatch(f.ctx, chatadapter.OpenAIChat, mustJSON(t, param.OfAssistant))
	require.NoError(t, err)
	require.Len(t, reply.Outcomes, 1)
	require.False(t, reply.Outcomes[0].Result.IsError, reply.Outcomes[0].Result.Text())
	require.Equal(t, "call_9", reply.Outcomes[0].Call.ID)
}

func TestOpenAIResponsesTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, shape := range []chatadapter.Shape{chatadapter.OpenAIResponses, chatadapter.OpenAIResponsesStrict} {
		set := f.set(t, shape)
		tools := roundTrip[[]responses.ToolUnionParam](t, set.JSON)
		for i, tool := range tools {
			require.NotNil(t, tool.OfFunction, set.Names[i])
			require.Equal(t, set.Names[i], tool.OfFunction.Name)
			require.True(t, tool.OfFunction.Strict.Valid(), "strict is always sent: the API's default is true")
			require.Equal(t, shape == chatadapter.OpenAIResponsesStrict, tool.OfFunction.Strict.Value)
			require.Equal(t, "object", tool.OfFunction.Parameters["type"])
		}
		req := responses.ResponseNewParams{Model: "gpt-4.1-mini", Tools: tools}
		var back struct{ Tools json.RawMessage }
		require.NoError(t, json.Unmarshal(mustJSON(t, req), &back))
		require.JSONEq(t, string(set.JSON), string(back.Tools))
	}
}

func TestOpenAIResponsesDispatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	items := []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfFunctionCall(getRoadmap, "call_1", "get_note"),
		responses.ResponseInputItemParamOfFunctionCall(createIdea, "call_2", "create_note"),
		responses.ResponseInputItemParamOfFunctionCall(badArgs, "call_3", "create_note"),
		responses.ResponseInputItemParamOfFunctionCall(`{}`, "call_4", "get_nite"),
		responses.ResponseInputItemParamOfFunctionCall(`{"id":"p1"}`, "call_5", "photo"),
	}
	reply, err := f.a.Dispatch(f.ctx, chatadapter.OpenAIResponses, mustJSON(t, items))
	require.NoError(t, err)
	require.Len(t, reply.Messages, 5)
	for i, m := range reply.Messages {
		item := roundTrip[responses.ResponseInputItemUnionParam](t, m)
		out := item.OfFunctionCallOutput
		require.NotNil(t, out, string(m))
		require.Equal(t, items[i].OfFunctionCall.CallID, out.CallID.Value)
		if i < 4 {
			require.Equal(t, string(reply.Outcomes[i].Result.JSON), out.Output.OfString.Value)
		}
	}
	rich := roundTrip[responses.ResponseInputItemUnionParam](t, reply.Messages[4]).OfFunctionCallOutput.Output.OfResponseFunctionCallOutputItemArray
	require.Len(t, rich, 3)
	require.Equal(t, "Photo p1.", rich[0].OfInputText.Text)
	require.Equal(t, "data:image/png;base64,iVBORw==", rich[1].OfInputImage.ImageURL.Value)
	require.Equal(t, "p1.pdf", rich[2].OfInputFile.Filename.Value)
	require.Equal(t, "data:application/pdf;base64,JVBERi0xLjc=", rich[2].OfInputFile.FileData.Value)
	require.Contains(t, f.childTitles(t, "projects"), "Idea")

	// A whole Response, as the SDK reads it, dispatches its function calls.
	var resp responses.Response
	require.NoError(t, json.Unmarshal([]byte(`{"id":"resp_1","object":"response","created_at":1,"model":"m","status":"completed","output":[
		{"type":"reasoning","id":"rs_1","summary":[]},
		{"type":"function_call","id":"fc_1","call_id":"call_9","name":"get_note","arguments":"{\"noteId\":\"roadmap\"}","status":"completed"}]}`), &resp))
	require.Equal(t, "call_9", resp.Output[1].CallID)
	reply, err = f.a.Dispatch(f.ctx, chatadapter.OpenAIResponses, []byte(resp.RawJSON()))
	require.NoError(t, err)
	require.Len(t, reply.Outcomes, 1)
	require.Equal(t, "call_9", reply.Outcomes[0].Call.ID)
	require.False(t, reply.Outcomes[0].Result.IsError, reply.Outcomes[0].Result.Text())
	_ = param.Opt[string]{}
}
