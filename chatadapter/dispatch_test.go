package chatadapter_test

import (
	"encoding/json"
	"testing"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/stretchr/testify/require"
)

func TestParseCalls(t *testing.T) {
	t.Parallel()
	get := chatadapter.ToolCall{ID: "c1", Name: "get_item", Args: json.RawMessage(`{"id":1}`)}
	tests := []struct {
		name  string
		shape chatadapter.Shape
		turn  string
		want  []chatadapter.ToolCall
	}{
		{"openai response", chatadapter.OpenAIChat,
			`{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}}]}}]}`,
			[]chatadapter.ToolCall{get}},
		{"openai message", chatadapter.OpenAIChatStrict,
			`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}}]}`,
			[]chatadapter.ToolCall{get}},
		{"openai tool_calls", chatadapter.OpenAIChat,
			`[{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}}]`,
			[]chatadapter.ToolCall{get}},
		{"openai arguments as an object", chatadapter.OpenAIChat,
			`[{"id":"c1","type":"function","function":{"name":"get_item","arguments":{"id":1}}}]`,
			[]chatadapter.ToolCall{get}},
		{"openai malformed arguments kept", chatadapter.OpenAIChat,
			`[{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":"}}]`,
			[]chatadapter.ToolCall{{ID: "c1", Name: "get_item", Args: json.RawMessage(`{"id":`)}}},
		{"openai answer", chatadapter.OpenAIChat, `{"role":"assistant","content":"Hi."}`, nil},
		{"responses response", chatadapter.OpenAIResponses,
			`{"id":"resp_1","output":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"function_call","id":"fc_1","call_id":"c1","name":"get_item","arguments":"{\"id\":1}","status":"completed"},{"type":"message","role":"assistant","content":[]}]}`,
			[]chatadapter.ToolCall{get}},
		{"responses items", chatadapter.OpenAIResponsesStrict,
			`[{"type":"function_call","call_id":"c1","name":"get_item","arguments":"{\"id\":1}"}]`,
			[]chatadapter.ToolCall{get}},
		{"responses one item", chatadapter.OpenAIResponses,
			`{"type":"function_call","call_id":"c1","name":"get_item","arguments":"{\"id\":1}"}`,
			[]chatadapter.ToolCall{get}},
		{"anthropic message", chatadapter.Anthropic,
			`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"c1","name":"get_item","input":{"id":1}}],"stop_reason":"tool_use"}`,
			[]chatadapter.ToolCall{get}},
		{"anthropic content", chatadapter.Anthropic,
			`[{"type":"tool_use","id":"c1","name":"get_item","input":{"id":1}}]`,
			[]chatadapter.ToolCall{get}},
		{"anthropic text", chatadapter.Anthropic, `{"role":"assistant","content":"Hi."}`, nil},
		{"gemini response", chatadapter.Gemini,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Looking."},{"functionCall":{"id":"c1","name":"get_item","args":{"id":1}}}]}}]}`,
			[]chatadapter.ToolCall{get}},
		{"gemini content without ids", chatadapter.Gemini,
			`{"role":"model","parts":[{"functionCall":{"name":"get_item","args":{"id":1}}}]}`,
			[]chatadapter.ToolCall{{Name: "get_item", Args: json.RawMessage(`{"id":1}`)}}},
		{"gemini parts", chatadapter.Gemini,
			`[{"functionCall":{"id":"c1","name":"get_item","args":{"id":1}}}]`,
			[]chatadapter.ToolCall{get}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := chatadapter.ParseCalls(tt.shape, []byte(tt.turn))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseCallsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		shape chatadapter.Shape
		turn  string
		want  string
	}{
		{chatadapter.OpenAIChat, `hello`, `chatadapter: OpenAI Chat Completions turn: expected a JSON object or array`},
		{chatadapter.OpenAIChat, `{"choices":[{}]}`, `chatadapter: OpenAI Chat Completions turn: choices[0] has no message`},
		{chatadapter.OpenAIResponsesStrict, `{"output":`, `chatadapter: OpenAI Responses turn: unexpected end of JSON input`},
		{chatadapter.Anthropic, `{"content":[1]}`, `chatadapter: Anthropic Messages turn: json: cannot unmarshal number into Go value of type chatadapter.block`},
		{chatadapter.Gemini, `[1]`, `chatadapter: Gemini turn: json: cannot unmarshal number into Go value of type chatadapter.part`},
		{chatadapter.Shape(0), `{}`, `chatadapter: unknown shape 0`},
	}
	for _, tt := range tests {
		_, err := chatadapter.ParseCalls(tt.shape, []byte(tt.turn))
		require.EqualError(t, err, tt.want, tt.turn)
	}
}

// Dispatch answers each format's turn in the same format: one success,
// one unknown tool, one refused write.
func TestDispatchShapes(t *testing.T) {
	t.Parallel()
	const okJSON = `{\"id\":1,\"name\":\"apple\",\"qty\":3}`
	const unknown = `{\"error\":\"Unknown tool \\\"nope\\\". Call one of the tools you were given.\"}`
	const conflict = `{\"error\":\"An item named \\\"apple\\\" exists. Pick another name.\"}`
	tests := []struct {
		shape chatadapter.Shape
		turn  string
		want  []string
	}{
		{chatadapter.OpenAIChat,
			`{"role":"assistant","content":null,"tool_calls":[` +
				`{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}},` +
				`{"id":"c2","type":"function","function":{"name":"nope","arguments":"{}"}},` +
				`{"id":"c3","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"apple\",\"fail\":\"conflict\"}"}}]}`,
			[]string{
				`{"role":"tool","tool_call_id":"c1","content":"` + okJSON + `"}`,
				`{"role":"tool","tool_call_id":"c2","content":"` + unknown + `"}`,
				`{"role":"tool","tool_call_id":"c3","content":"` + conflict + `"}`,
			}},
		{chatadapter.OpenAIResponses,
			`{"output":[` +
				`{"type":"function_call","call_id":"c1","name":"get_item","arguments":"{\"id\":1}"},` +
				`{"type":"function_call","call_id":"c2","name":"nope","arguments":"{}"},` +
				`{"type":"function_call","call_id":"c3","name":"add_item","arguments":"{\"name\":\"apple\",\"fail\":\"conflict\"}"}]}`,
			[]string{
				`{"type":"function_call_output","call_id":"c1","output":"` + okJSON + `"}`,
				`{"type":"function_call_output","call_id":"c2","output":"` + unknown + `"}`,
				`{"type":"function_call_output","call_id":"c3","output":"` + conflict + `"}`,
			}},
		{chatadapter.Anthropic,
			`{"role":"assistant","content":[{"type":"text","text":"Looking."},` +
				`{"type":"tool_use","id":"c1","name":"get_item","input":{"id":1}},` +
				`{"type":"tool_use","id":"c2","name":"nope","input":{}},` +
				`{"type":"tool_use","id":"c3","name":"add_item","input":{"name":"apple","fail":"conflict"}}]}`,
			[]string{
				`{"role":"user","content":[` +
					`{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"` + okJSON + `"}],"is_error":false},` +
					`{"type":"tool_result","tool_use_id":"c2","content":[{"type":"text","text":"` + unknown + `"}],"is_error":true},` +
					`{"type":"tool_result","tool_use_id":"c3","content":[{"type":"text","text":"` + conflict + `"}],"is_error":true}]}`,
			}},
		{chatadapter.Gemini,
			`{"candidates":[{"content":{"role":"model","parts":[` +
				`{"functionCall":{"name":"get_item","args":{"id":1}}},` +
				`{"functionCall":{"id":"c2","name":"nope","args":{}}},` +
				`{"functionCall":{"name":"add_item","args":{"name":"apple","fail":"conflict"}}}]}}]}`,
			[]string{
				`{"role":"user","parts":[` +
					`{"functionResponse":{"name":"get_item","response":{"id":1,"name":"apple","qty":3}}},` +
					`{"functionResponse":{"id":"c2","name":"nope","response":{"error":"Unknown tool \"nope\". Call one of the tools you were given."}}},` +
					`{"functionResponse":{"name":"add_item","response":{"error":"An item named \"apple\" exists. Pick another name."}}}]}`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.shape.String(), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r, err := f.a.Dispatch(f.ctx, tt.shape, []byte(tt.turn))
			require.NoError(t, err)
			var got []string
			for _, m := range r.Messages {
				got = append(got, string(m))
			}
			require.Equal(t, tt.want, got)
			require.Len(t, r.Outcomes, 3)
			require.False(t, r.Outcomes[0].Result.IsError)
			require.NotContains(t, string(r.Outcomes[0].Result.JSON), `"error"`)
			require.True(t, r.Outcomes[1].Result.IsError)
			require.True(t, r.Outcomes[2].Result.IsError)
			require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t), "the conflicting write rolled back")
		})
	}
}

func TestDispatchNoCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r, err := f.a.Dispatch(f.ctx, chatadapter.OpenAIChat, []byte(`{"role":"assistant","content":"Hello."}`))
	require.NoError(t, err)
	require.Empty(t, r.Outcomes)
	require.Empty(t, r.Messages)
}

// A rich result becomes each provider's content parts; what a provider
// cannot take is named in a placeholder.
func TestRenderRich(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	out := f.a.Execute(f.ctx, []chatadapter.ToolCall{{ID: "c1", Name: "photo", Args: json.RawMessage(`{"id":1}`)}})
	require.False(t, out[0].Result.IsError, out[0].Result.Text())
	// "PNG" and "WAV" in base64.
	tests := []struct {
		shape chatadapter.Shape
		want  string
	}{
		{chatadapter.OpenAIChat, `{"role":"tool","tool_call_id":"c1","content":"Item 1, front.\n\n` +
			`[image (image/png, 3 bytes) not shown: OpenAI Chat Completions takes no such content in tool results]\n\n` +
			`[audio (audio/wav, 3 bytes) not shown: OpenAI Chat Completions takes no such content in tool results]"}`},
		{chatadapter.OpenAIResponses, `{"type":"function_call_output","call_id":"c1","output":[` +
			`{"type":"input_text","text":"Item 1, front."},` +
			`{"type":"input_image","image_url":"data:image/png;base64,UE5H"},` +
			`{"type":"input_text","text":"[audio (audio/wav, 3 bytes) not shown: OpenAI Responses takes no such content in tool results]"}]}`},
		{chatadapter.Anthropic, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[` +
			`{"type":"text","text":"Item 1, front."},` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"UE5H"}},` +
			`{"type":"text","text":"[audio (audio/wav, 3 bytes) not shown: Anthropic Messages takes no such content in tool results]"}],"is_error":false}]}`},
		{chatadapter.Gemini, `{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"photo",` +
			`"response":{"output":"Item 1, front.\n\n[image (image/png, 3 bytes) attached]\n\n[audio (audio/wav, 3 bytes) attached]"},` +
			`"parts":[{"inlineData":{"mimeType":"image/png","data":"UE5H"}},{"inlineData":{"mimeType":"audio/wav","data":"V0FW"}}]}}]}`},
	}
	for _, tt := range tests {
		msgs := chatadapter.Render(tt.shape, out)
		require.Len(t, msgs, 1)
		require.Equal(t, tt.want, string(msgs[0]), tt.shape.String())
	}
}
