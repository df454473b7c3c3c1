package chatadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/stretchr/testify/require"
)

const userAsk = `{"role":"user","content":"Go."}`

func TestRunOneToolCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	call := toolCalls([2]string{"get_item", `{"id":1}`})
	m := newModel(t, reply(call), reply(answer("Item 1 is an apple; there are 3.")))
	var events, model []string
	ctx := chatadapter.WithEvents(f.ctx, func(e chatadapter.Event) {
		if e.Tool == "" {
			model = append(model, fmt.Sprintf("%d %d %q", e.Kind, e.Step, e.Label))
			return
		}
		events = append(events, e.Label)
	})

	tr, err := run.Run(ctx, f.a, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, nil)
	require.NoError(t, err)
	require.Equal(t, "Item 1 is an apple; there are 3.", tr.Answer)
	require.Equal(t, 2, tr.Steps)
	require.Equal(t, []string{"Read item…", "Read item… done"}, events)
	require.Equal(t, []string{
		fmt.Sprintf("%d 1 %q", chatadapter.ModelRequest, "Asking the model…"),
		fmt.Sprintf("%d 1 %q", chatadapter.ModelReply, ""), // the first answer: only tool calls
		fmt.Sprintf("%d 2 %q", chatadapter.ModelRequest, "Asking the model…"),
		fmt.Sprintf("%d 2 %q", chatadapter.ModelReply, "Item 1 is an apple; there are 3."),
		fmt.Sprintf("%d 2 %q", chatadapter.TurnEnded, "Item 1 is an apple; there are 3."),
	}, model)

	reqs := m.requests()
	require.Len(t, reqs, 2)
	require.JSONEq(t, `"test-model"`, string(reqs[0]["model"]))
	require.Equal(t, []string{userAsk}, messagesOf(t, reqs[0]))
	set, err := f.a.Tools(f.ctx, chatadapter.OpenAIChat)
	require.NoError(t, err)
	require.Equal(t, string(set.JSON), string(reqs[0]["tools"]))
	require.Equal(t, []string{
		userAsk,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}}]}`,
		`{"role":"tool","tool_call_id":"call_1","content":"{\"id\":1,\"name\":\"apple\",\"qty\":3}"}`,
	}, messagesOf(t, reqs[1]))
	require.Equal(t, []string{"Bearer sk-test", "Bearer sk-test"}, m.auth)
	require.Len(t, tr.Messages, 4)
	require.Equal(t, `{"role":"assistant","content":"Item 1 is an apple; there are 3."}`, string(tr.Messages[3]))
	require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))
}

func TestRunParallelCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Two writes, then four reads (two of which only return once both run
	// at the same time), then a read of what the writes made.
	call := toolCalls(
		[2]string{"add_item", `{"name":"pear","qty":2}`},
		[2]string{"add_item", `{"name":"plum"}`},
		[2]string{"meet", `{"name":"a"}`},
		[2]string{"meet", `{"name":"b"}`},
		[2]string{"get_item", `{"id":3}`},
		[2]string{"list_items", ``},
	)
	m := newModel(t, reply(call), reply(answer("Done.")))
	var events []chatadapter.Event
	// The deadline only ends a hung test: if the two meet calls ran one
	// after the other, the first would wait for it and fail.
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	ctx = context.WithValue(ctx, partyKey{}, newParty(2))
	ctx = chatadapter.WithEvents(ctx, func(e chatadapter.Event) {
		if e.Tool != "" { // the calls' events; the model's are TestRunOneToolCall's
			events = append(events, e)
		}
	})

	tr, err := run.Run(ctx, f.a, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, nil)
	require.NoError(t, err)
	require.Equal(t, "Done.", tr.Answer)

	reqs := m.requests()
	require.Len(t, reqs, 2)
	got := messagesOf(t, reqs[1])
	require.Len(t, got, 8)
	require.Equal(t, []string{
		`{"role":"tool","tool_call_id":"call_1","content":"{\"id\":2,\"name\":\"pear\",\"qty\":2}"}`,
		`{"role":"tool","tool_call_id":"call_2","content":"{\"id\":3,\"name\":\"plum\",\"qty\":1}"}`,
		`{"role":"tool","tool_call_id":"call_3","content":"{\"met\":2}"}`,
		`{"role":"tool","tool_call_id":"call_4","content":"{\"met\":2}"}`,
		`{"role":"tool","tool_call_id":"call_5","content":"{\"id\":3,\"name\":\"plum\",\"qty\":1}"}`,
		`{"role":"tool","tool_call_id":"call_6","content":"{\"items\":[{\"id\":1,\"name\":\"apple\",\"qty\":3},{\"id\":2,\"name\":\"pear\",\"qty\":2},{\"id\":3,\"name\":\"plum\",\"qty\":1}]}"}`,
	}, got[2:])
	require.Equal(t, [][3]any{{1, "apple", 3}, {2, "pear", 2}, {3, "plum", 1}}, f.rows(t))

	// The writes ran alone and in order, before any read started.
	var first []string
	for _, e := range events[:6] {
		first = append(first, e.Label)
	}
	require.Equal(t, []string{"Add item…", "Add item… 1/1 saved", "Add item… done", "Add item…", "Add item… 1/1 saved", "Add item… done"}, first)
	require.Equal(t, []int{0, 0, 0, 1, 1, 1}, []int{events[0].Index, events[1].Index, events[2].Index, events[3].Index, events[4].Index, events[5].Index})
	require.Len(t, events, 14)
	finished := map[int]bool{}
	for _, e := range events[6:] {
		require.GreaterOrEqual(t, e.Index, 2)
		require.False(t, e.Write)
		if e.Kind == chatadapter.CallFinished {
			require.False(t, e.IsError, e.Tool)
			finished[e.Index] = true
		}
	}
	require.Len(t, finished, 4)
}

// A read the model asks for before a write does not see it; one after it
// does: each call sees exactly the writes the model ordered before it.
func TestExecuteMixedOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	out := f.a.Execute(f.ctx, []chatadapter.ToolCall{
		{ID: "1", Name: "get_item", Args: []byte(`{"id":2}`)},
		{ID: "2", Name: "list_items"},
		{ID: "3", Name: "add_item", Args: []byte(`{"name":"pear"}`)},
		{ID: "4", Name: "get_item", Args: []byte(`{"id":2}`)},
		{ID: "5", Name: "add_item", Args: []byte(`{"name":"plum"}`)},
		{ID: "6", Name: "list_items"},
	})
	var got []string
	for _, o := range out {
		got = append(got, o.Call.ID+" "+o.Result.Text())
	}
	require.Equal(t, []string{
		`1 Item 2 not found. Call list_items to see the IDs.`,
		`2 {"items":[{"id":1,"name":"apple","qty":3}]}`,
		`3 {"id":2,"name":"pear","qty":1}`,
		`4 {"id":2,"name":"pear","qty":1}`,
		`5 {"id":3,"name":"plum","qty":1}`,
		`6 {"items":[{"id":1,"name":"apple","qty":3},{"id":2,"name":"pear","qty":1},{"id":3,"name":"plum","qty":1}]}`,
	}, got)
	require.Equal(t, [][3]any{{1, "apple", 3}, {2, "pear", 1}, {3, "plum", 1}}, f.rows(t))
}

func TestRunErrorResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		call [2]string
		want string // the tool message's content
	}{
		{"malformed arguments", [2]string{"add_item", `{"name": "pear"`},
			`{"error":"Error: arguments: not valid JSON (unexpected EOF). Send one JSON object, such as {\"name\": \"...\"}."}`},
		{"arguments of the wrong type", [2]string{"add_item", `{"name": 7}`},
			`{"error":"Error: /name: expected string, got number. Send a string of 1 to 40 characters."}`},
		{"unknown tool", [2]string{"add_itme", `{"name":"pear"}`},
			`{"error":"Unknown tool \"add_itme\". Did you mean \"add_item\"?"}`},
		{"tool error", [2]string{"add_item", `{"name":"pear","fail":"error"}`},
			`{"error":"Internal error in add_item; the details were logged. Try again once; if it fails again, tell the user the tool is failing."}`},
		{"tool refusal", [2]string{"add_item", `{"name":"pear","fail":"conflict"}`},
			`{"error":"An item named \"pear\" exists. Pick another name."}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			m := newModel(t, reply(toolCalls(tt.call)), reply(answer("Sorry.")))
			var events []chatadapter.Event
			ctx := chatadapter.WithEvents(f.ctx, func(e chatadapter.Event) {
				if e.Tool != "" { // the calls' events
					events = append(events, e)
				}
			})
			tr, err := run.Run(ctx, f.a, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, nil)
			require.NoError(t, err)
			require.Equal(t, "Sorry.", tr.Answer)
			reqs := m.requests()
			require.Len(t, reqs, 2)
			got := messagesOf(t, reqs[1])
			require.Len(t, got, 3)
			want, _ := json.Marshal(map[string]string{"role": "tool", "tool_call_id": "call_1", "content": tt.want})
			require.JSONEq(t, string(want), got[2])
			require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t), "nothing written")
			require.Len(t, events, 2)
			require.True(t, events[1].IsError)
			line := "Add item… failed"
			if tt.call[0] != "add_item" {
				line = tt.call[0] + "… failed" // unknown tools go by their name
			}
			require.Equal(t, line, events[1].Label)
		})
	}
}

func TestRunStepLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	call := toolCalls([2]string{"add_item", `{"name":"pear"}`})
	m := newModel(t, reply(call), reply(call), reply(call))
	tr, err := run.Run(f.ctx, f.a, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, &run.Options{MaxSteps: 2})
	require.NoError(t, err, "the step limit ends the turn with its history, not an error")
	require.ErrorIs(t, tr.Stopped, run.ErrStepLimit)
	require.EqualError(t, tr.Stopped, "chatadapter: step limit reached: the model asked for tool calls in each of 2 requests; raise MaxSteps or ask for less in one turn")
	require.Equal(t, 2, tr.Steps)
	require.Len(t, m.requests(), 2)
	require.Len(t, tr.Messages, 5)
	require.Equal(t, `{"role":"tool","tool_call_id":"call_1","content":"{\"id\":3,\"name\":\"pear\",\"qty\":1}"}`, string(tr.Messages[4]))
	require.Equal(t, "", tr.Answer)
	require.Equal(t, [][3]any{{1, "apple", 3}, {2, "pear", 1}, {3, "pear", 1}}, f.rows(t))
}

func TestRunCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	m := newModel(t,
		reply(toolCalls([2]string{"add_item", `{"name":"pear"}`})),
		func(w http.ResponseWriter, r *http.Request) {
			cancel() // the user gives up while the model thinks
			<-r.Context().Done()
		})
	tr, err := run.Run(ctx, f.a, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "chatadapter: run: context canceled")
	require.Equal(t, 1, tr.Steps)
	require.Len(t, tr.Messages, 3)
	require.Len(t, m.requests(), 2)
	require.Equal(t, [][3]any{{1, "apple", 3}, {2, "pear", 1}}, f.rows(t), "the committed call stays")

	// Cancelled before the first request: nothing is sent.
	tr, err = run.Run(ctx, f.a, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, nil)
	require.EqualError(t, err, "chatadapter: run: context canceled")
	require.Equal(t, 0, tr.Steps)
	require.Len(t, m.requests(), 2)
}

func TestRunHTTPError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	overloaded := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "{\"error\": {\"message\": \"model overloaded\",\n \"type\": \"server_error\"}}")
	}
	m := newModel(t, overloaded, overloaded, overloaded, overloaded) // the first try and the default 3 retries
	tr, err := run.Run(f.ctx, f.a, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, nil)
	require.Len(t, m.requests(), 1+3) // the first try and the default 3 retries
	var he *run.HTTPError
	require.True(t, errors.As(err, &he))
	require.Equal(t, http.StatusInternalServerError, he.StatusCode)
	require.EqualError(t, err, "chatadapter: POST "+m.srv.URL+`/v1/chat/completions: 500 Internal Server Error: {"error": {"message": "model overloaded", "type": "server_error"}}`)
	require.Equal(t, 0, tr.Steps)
	require.Len(t, tr.Messages, 1)
	require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))
}

func TestRunUnreadableResponse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := newModel(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"choices":[]}`) })
	_, err := run.Run(f.ctx, f.a, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, nil)
	require.EqualError(t, err, "chatadapter: POST "+m.srv.URL+`/v1/chat/completions: response has no message: {"choices":[]}`)
}

// Write tools are off until the tenant enables them: the set Run sends
// leaves them out, and a call to one is refused.
func TestRunTenantWithoutWrites(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := llmtoolTenant(f.ctx, "visitors")
	m := newModel(t, reply(toolCalls([2]string{"add_item", `{"name":"pear"}`})), reply(answer("I may not.")))
	_, err := run.Run(ctx, f.a, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, nil)
	require.NoError(t, err)
	reqs := m.requests()
	var tools []struct {
		Function struct{ Name string } `json:"function"`
	}
	require.NoError(t, json.Unmarshal(reqs[0]["tools"], &tools))
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Function.Name)
	}
	require.NotContains(t, names, "add_item")
	require.Contains(t, names, "get_item")
	got := messagesOf(t, reqs[1])
	var msg struct{ Content string }
	require.NoError(t, json.Unmarshal([]byte(got[2]), &msg))
	require.Contains(t, msg.Content, `{"error":`)
	require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))
}

// With a strict shape, Run sends the strict set and reads the nulls a
// strict model sends for optional parameters as "not given".
func TestRunStrict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := newModel(t, reply(toolCalls([2]string{"get_item", `{"id":1,"maxChars":null}`})), reply(answer("An apple.")))
	ep := m.endpoint()
	ep.Shape = chatadapter.OpenAIChatStrict
	tr, err := run.Run(f.ctx, f.a, ep, []json.RawMessage{run.UserMessage("Go.")},
		&run.Options{RequestFields: map[string]any{"temperature": 0, "parallel_tool_calls": true}})
	require.NoError(t, err)
	require.Equal(t, "An apple.", tr.Answer)
	reqs := m.requests()
	set, err := f.a.Tools(f.ctx, chatadapter.OpenAIChatStrict)
	require.NoError(t, err)
	require.Equal(t, string(set.JSON), string(reqs[0]["tools"]))
	require.Equal(t, "0", string(reqs[0]["temperature"]))
	require.Equal(t, "true", string(reqs[1]["parallel_tool_calls"]))
	require.Equal(t, `{"role":"tool","tool_call_id":"call_1","content":"{\"id\":1,\"name\":\"apple\",\"qty\":3}"}`, messagesOf(t, reqs[1])[2])
}
