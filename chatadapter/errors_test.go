package chatadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/stretchr/testify/require"
)

// A turn in another API's format is an error that names both.
func TestDispatchWrongShape(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const (
		chat      = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{}"}}]}`
		responses = `{"object":"response","output":[{"type":"function_call","call_id":"c1","name":"get_item","arguments":"{}"}]}`
		anthropic = `{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"c1","name":"get_item","input":{}}]}`
		gemini    = `[{"functionCall":{"name":"get_item","args":{}}}]`
	)
	tests := []struct {
		shape chatadapter.Shape
		turn  string
		want  string
	}{
		{chatadapter.OpenAIChat, anthropic, `chatadapter: the turn is in Anthropic Messages (a "tool_use" block in its content), not OpenAI Chat Completions: ` +
			`dispatch it with the shape of the API that answered; OpenAI Chat Completions takes a chat completion, its assistant message or its tool_calls array`},
		{chatadapter.OpenAIChatStrict, gemini, `chatadapter: the turn is in Gemini (a "functionCall" part), not OpenAI Chat Completions: ` +
			`dispatch it with the shape of the API that answered; OpenAI Chat Completions takes a chat completion, its assistant message or its tool_calls array`},
		{chatadapter.Anthropic, chat, `chatadapter: the turn is in OpenAI Chat Completions (its "tool_calls" member), not Anthropic Messages: ` +
			`dispatch it with the shape of the API that answered; Anthropic Messages takes a message or its content array`},
		{chatadapter.Gemini, responses, `chatadapter: the turn is in OpenAI Responses (its "output" member), not Gemini: ` +
			`dispatch it with the shape of the API that answered; Gemini takes a response, its content or its parts array`},
		{chatadapter.OpenAIResponses, `[{"type":"tool_use","id":"c1","name":"get_item","input":{}}]`, `chatadapter: the turn is in Anthropic Messages (a "tool_use" block), not OpenAI Responses: ` +
			`dispatch it with the shape of the API that answered; OpenAI Responses takes a response, its output array or a function_call item`},
		{chatadapter.Anthropic, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi."}]}`, `chatadapter: the turn is in OpenAI Responses (a "output_text" item), not Anthropic Messages: ` +
			`dispatch it with the shape of the API that answered; Anthropic Messages takes a message or its content array`},
	}
	for _, tt := range tests {
		r, err := f.a.Dispatch(f.ctx, tt.shape, []byte(tt.turn))
		require.EqualError(t, err, tt.want)
		require.ErrorIs(t, err, chatadapter.ErrShape)
		require.Nil(t, r)
	}
	// Each format's own turn, and what three formats share, go through.
	for shape, turn := range map[chatadapter.Shape]string{chatadapter.OpenAIChat: chat, chatadapter.OpenAIResponses: responses,
		chatadapter.Anthropic: anthropic, chatadapter.Gemini: gemini} {
		calls, err := chatadapter.ParseCalls(shape, []byte(turn))
		require.NoError(t, err)
		require.Len(t, calls, 1)
	}
	for _, shape := range []chatadapter.Shape{chatadapter.OpenAIChat, chatadapter.OpenAIResponses, chatadapter.Anthropic} {
		calls, err := chatadapter.ParseCalls(shape, []byte(`{"role":"assistant","content":"Hi."}`))
		require.NoError(t, err)
		require.Empty(t, calls)
	}
}

// A context that ends is Dispatch's error, with a result for every call.
func TestDispatchCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	r, err := f.a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(`[{"id":"c1","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"pear\"}"}},`+
		`{"id":"c2","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}}]`))
	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "chatadapter: dispatch: context canceled")
	require.Len(t, r.Messages, 2, "the conversation stays whole")
	require.Equal(t, []string{
		"c1 The call to add_item was cancelled before it finished; nothing was saved. Call it again if it is still needed.",
		"c2 The call to get_item was cancelled before it finished; nothing was saved. Call it again if it is still needed.",
	}, texts(r.Outcomes))
	require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))
}

// A paused Dispatch reply's Pending call saved as JSON resumes in another
// process; a restored pause is answered once.
func TestReplyRestore(t *testing.T) {
	t.Parallel()
	path := newShop(t)
	log := &eventLog{}
	first := start(t, path, log)
	r, err := first.a.Dispatch(first.ctx, chatadapter.Anthropic, []byte(`[`+
		`{"type":"tool_use","id":"t1","name":"list_items","input":{}},`+
		`{"type":"tool_use","id":"t2","name":"pick_item","input":{"name":"apple"}},`+
		`{"type":"tool_use","id":"t3","name":"remove_item","input":{"id":2}}]`))
	require.NoError(t, err)
	require.Equal(t, "t2", r.Pending.Call.ID)
	require.ElementsMatch(t, []string{"List items… done", "Pick item… waits for your answer"}, log.take(), "two reads, run together")
	saved, err := json.Marshal(r.Pending)
	require.NoError(t, err)

	second := start(t, path, log)
	paused, err := second.a.Restore(saved)
	require.NoError(t, err)
	require.Equal(t, "pick", paused.Question.Key)
	r, err = paused.Resume(second.ctx, ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"id":2}`)})
	require.NoError(t, err)
	require.Len(t, r.Outcomes, 2, "the call that ran before the pause, and the answered one")
	require.JSONEq(t, `{"items":[{"id":1,"name":"apple","qty":3},{"id":2,"name":"green apple","qty":5}]}`, string(r.Outcomes[0].Result.JSON))
	_, err = paused.Resume(second.ctx, yes(true))
	require.ErrorIs(t, err, chatadapter.ErrNotPending)
	_, err = json.Marshal(paused)
	require.EqualError(t, err, "json: error calling MarshalJSON for type *chatadapter.Pending: chatadapter: the pending call was resumed already: save the Pending of the Reply that Resume returned")
	require.Equal(t, "t3", r.Pending.Call.ID, "then the removal waits for approval")
	require.Equal(t, "Remove item 2 (green apple). (items: 1 deleted)", r.Pending.Summary)

	saved, err = json.Marshal(r.Pending)
	require.NoError(t, err)
	third := start(t, path, log)
	p, err := third.a.Restore(saved)
	require.NoError(t, err)
	r, err = p.Resume(third.ctx, yes(true))
	require.NoError(t, err)
	require.Nil(t, r.Pending)
	require.Len(t, r.Messages, 1)
	require.Equal(t, [][3]any{{1, "apple", 3}}, third.rows(t))
	require.Equal(t, []string{"Pick item… done", "Remove item… needs approval", "Remove item… done"}, log.take())
	require.Equal(t, map[string]int{"t1": 1, "t2": 1, "t3": 1}, log.starts())

	require.Len(t, r.Outcomes, 3)
	_, err = r.Pending.Resume(third.ctx, yes(true))
	require.ErrorIs(t, err, chatadapter.ErrNotPending, "a complete reply has no pause")
}

func TestRestoreErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct{ saved, want string }{
		{`{`, "chatadapter: restore: unexpected end of JSON input"},
		{`{"version":2}`, "chatadapter: restore: a saved turn of version 2; this chatadapter reads version 1"},
		{`{"version":1,"shape":"cohere","calls":[{"call":{"name":"x"}}],"at":0}`, `chatadapter: restore: unknown shape "cohere"`},
		{`{"version":1,"shape":"gemini","calls":[{"call":{"name":"x"}}],"at":0}`, "chatadapter: restore: the saved turn has no pending call at 0"},
		{`{"version":1,"shape":"gemini","calls":[{"call":{"name":"x"},"pending":{"index":0}}],"at":0}`, "chatadapter: restore: call 0 waits for approval without a token"},
	}
	for _, tt := range tests {
		_, err := f.a.Restore([]byte(tt.saved))
		require.EqualError(t, err, tt.want, tt.saved)
	}
	var p chatadapter.Pending
	require.NoError(t, json.Unmarshal([]byte(`{"index":2}`), &p), "plain fields, as an event's copy")
	_, err := p.Resume(f.ctx, yes(true))
	require.ErrorIs(t, err, chatadapter.ErrNotPending, "without its turn: read a saved pause with Adapter.Restore")
	runner, err := run.New(f.a, run.Endpoint{}, nil)
	require.NoError(t, err)
	_, err = runner.Restore([]byte(`{"version":3}`))
	require.EqualError(t, err, "chatadapter: restore: a saved transcript of version 3; this chatadapter reads version 1")
	_, err = run.New(f.a, run.Endpoint{Shape: 99}, nil)
	require.EqualError(t, err, "chatadapter: unknown shape 99 in the Endpoint")
	require.True(t, errors.Is(err, chatadapter.ErrShape))
}
