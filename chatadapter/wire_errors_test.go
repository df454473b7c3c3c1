package chatadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
	"github.com/stretchr/testify/require"
)

// A 2xx response Run cannot read is an error that says what it is and
// shows its start, for each API.
func TestRunUnreadable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		shape chatadapter.Shape
		body  string
		want  string // after "chatadapter: POST <url>: "
	}{
		{chatadapter.OpenAIChat, `[]`, `response is not a chat completion (json: cannot unmarshal array into Go value of type struct { Choices []struct { Message json.RawMessage "json:\"message\""; FinishReason string "json:\"finish_reason\"" } "json:\"choices\""; Usage struct { PromptTokens int "json:\"prompt_tokens\""; CompletionTokens int "json:\"completion_tokens\""; PromptTokensDetails struct { CachedTokens int "json:\"cached_tokens\"" } "json:\"prompt_tokens_details\""; CompletionTokensDetails struct { ReasoningTokens int "json:\"reasoning_tokens\"" } "json:\"completion_tokens_details\"" } "json:\"usage\"" }): []`},
		{chatadapter.OpenAIChat, `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":1}]}}]}`, `chatadapter: OpenAI Chat Completions turn: json: cannot unmarshal number into Go struct field toolCall.tool_calls.id of type string`},
		{chatadapter.OpenAIResponses, `{"id":"x"}`, `response is not a Responses API response (<nil>): {"id":"x"}`},
		{chatadapter.OpenAIResponses, `{"object":"response","status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}`, `the response failed: server_error: The model failed.`},
		{chatadapter.OpenAIResponses, `{"object":"response","output":[1]}`, `output item: json: cannot unmarshal number into Go value of type struct { Type string "json:\"type\""; Content []struct { Type string "json:\"type\""; Text string "json:\"text\""; Refusal string "json:\"refusal\"" } "json:\"content\"" }`},
		{chatadapter.Anthropic, `{"type":"error"}`, `response is not an Anthropic message (<nil>): {"type":"error"}`},
		{chatadapter.Anthropic, `{"type":"message","content":"Hi."}`, `content: json: cannot unmarshal string into Go value of type []struct { Type string "json:\"type\""; Text string "json:\"text\"" }`},
		{chatadapter.Gemini, `{"candidates":[]}`, `response has no candidate: {"candidates":[]}`},
		{chatadapter.Gemini, `{"candidates":[{"content":{"parts":"x"}}]}`, `content: json: cannot unmarshal string into Go struct field .parts of type []struct { Text *string "json:\"text\""; Thought bool "json:\"thought\""; FunctionCall json.RawMessage "json:\"functionCall\"" }`},
		{chatadapter.Gemini, `not json`, `response is not a Gemini response (invalid character 'o' in literal null (expecting 'u')): not json`},
	}
	f := newFixture(t)
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, tt.body) }))
		ep := run.Endpoint{Shape: tt.shape, BaseURL: srv.URL, Model: "m"}
		tr, err := run.Run(f.ctx, f.a, ep, []json.RawMessage{run.TextMessage(tt.shape, "user", "Hi.")}, nil)
		srv.Close()
		require.Error(t, err, tt.body)
		msg := regexp.MustCompile(`^chatadapter: POST http://[^ ]+: `).ReplaceAllString(err.Error(), "")
		require.Equal(t, tt.want, msg, tt.body)
		require.Len(t, tr.Messages, 1, "the conversation stays as it was")
	}
}

// A server that cannot be reached is tried again, then reported; a
// request field that cannot be encoded fails before anything is sent.
func TestRunTransportAndFieldErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	var retries int
	ctx := chatadapter.WithEvents(f.ctx, func(e chatadapter.Event) {
		if e.Kind == chatadapter.ModelRetry {
			retries++
		}
	})
	_, err := run.Run(ctx, f.a, run.Endpoint{BaseURL: url, Model: "m"}, []json.RawMessage{run.UserMessage("Hi.")},
		&run.Options{MaxRetries: 2, RetryDelay: time.Millisecond})
	require.Regexp(t, `^chatadapter: run: Post "http://127\.0\.0\.1:\d+/chat/completions": dial tcp 127\.0\.0\.1:\d+: connect: connection refused$`, err.Error())
	require.Equal(t, 2, retries)

	tr, err := run.Run(f.ctx, f.a, run.Endpoint{BaseURL: url}, []json.RawMessage{run.UserMessage("Hi.")},
		&run.Options{RequestFields: map[string]any{"bad": func() {}}})
	require.EqualError(t, err, `chatadapter: run: request field "bad": json: unsupported type: func()`)
	require.Len(t, tr.Messages, 1)
}

// A context that ends while Run waits to try again ends the wait.
func TestRunCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := chattest.NewServer(chatadapter.OpenAIChat, chattest.Reply{Status: 429, Text: "Later.", RetryAfter: "30"})
	defer srv.Close()
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	ctx = chatadapter.WithEvents(ctx, func(e chatadapter.Event) {
		if e.Kind == chatadapter.ModelRetry {
			require.Equal(t, 30*time.Second, e.Wait)
			cancel() // the person leaves while Run waits
		}
	})
	_, err := run.Run(ctx, f.a, srv.Endpoint(), []json.RawMessage{run.UserMessage("Hi.")}, nil)
	require.EqualError(t, err, "chatadapter: run: context canceled")
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, srv.Requests(), 1)
}

type TwiceIn struct {
	Key string `json:"key" desc:"The second question's key."`
}

// asksTwice asks under the key "a", then under in.Key; it samples when
// in.Key is "sample".
var asksTwice = llmtool.Read("asks_twice", "Ask two questions.",
	func(c *llmtool.ReadCtx, in TwiceIn) (struct{}, error) {
		if in.Key == "sample" {
			_, err := ask.Sample(c, ask.SampleRequest{Messages: []ask.SampleMessage{{Role: "user", Content: llmtool.TextContent("Hi")}}})
			return struct{}{}, err
		}
		if _, err := ask.Elicit(c, ask.ElicitRequest{Key: "a", Message: "First?"}); err != nil && !errors.Is(err, ask.ErrInputRequired) {
			return struct{}{}, err
		}
		_, err := ask.Elicit(c, ask.ElicitRequest{Key: in.Key, Message: "Second?"})
		return struct{}{}, err
	})

// A tool's mistakes in asking are its errors: two questions under one
// key, and sampling, which chat does not do.
func TestAskMistakes(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg, err := llmtool.NewRegistry(db, nil, llmtool.DefineTools("asking", asksTwice))
	require.NoError(t, err)
	a := chatadapter.New(reg, nil)
	ctx := context.Background()
	tests := []struct{ key, want string }{
		{"a", `llmtool: tool asks_twice: elicitation: two questions of one run under the key "a": give each its own Key`},
		{"sample", `llmtool: tool asks_twice: sampling: chat asks the person, never a model: ask: the client cannot answer this request`},
	}
	for _, tt := range tests {
		r, err := a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(`[{"id":"c1","type":"function","function":{"name":"asks_twice","arguments":"{\"key\":\"`+tt.key+`\"}"}}]`))
		require.NoError(t, err)
		if tt.key == "a" { // the first question is asked; its answer brings the second to light
			require.Equal(t, "a", r.Pending.Question.Key)
			r, err = r.Pending.Resume(ctx, yes(true))
			require.NoError(t, err)
		}
		require.Nil(t, r.Pending)
		require.EqualError(t, r.Outcomes[0].Result.Err, tt.want)
	}
	// Two questions of one run are asked one after the other.
	r, err := a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(`[{"id":"c1","type":"function","function":{"name":"asks_twice","arguments":"{\"key\":\"b\"}"}}]`))
	require.NoError(t, err)
	require.Equal(t, "a", r.Pending.Question.Key)
	r, err = r.Pending.Resume(ctx, yes(true))
	require.NoError(t, err)
	require.Equal(t, "b", r.Pending.Question.Key)
	r, err = r.Pending.Resume(ctx, yes(false))
	require.NoError(t, err)
	require.Nil(t, r.Pending)
	require.Equal(t, `{}`, string(r.Outcomes[0].Result.JSON))
}
