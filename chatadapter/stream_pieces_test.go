package chatadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/stretchr/testify/require"
)

// Streams recorded in the shapes of each provider's documentation: the
// model thinks, says a word, then calls add_item, its arguments coming
// piece by piece (whole from Gemini); the next request gets the answer.
var piecesStreams = map[chatadapter.Shape][2][]string{
	chatadapter.OpenAIChat: {{ // DeepSeek's and vLLM's reasoning_content, OpenAI's tool_calls deltas and usage chunk
		delta(`{"role":"assistant","content":null,"reasoning_content":"The person "}`),
		delta(`{"reasoning_content":"wants a pear."}`),
		delta(`{"content":"Adding."}`),
		delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"add_item","arguments":""}}]}`),
		delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"name\":"}}]}`),
		delta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"pear\",\"qty\":2}"}}]}`),
		finish("tool_calls"),
		`{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":30,"total_tokens":50,"completion_tokens_details":{"reasoning_tokens":12}}}`,
		`[DONE]`,
	}, {
		delta(`{"role":"assistant","content":"Added."}`), finish("stop"),
		`{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":2,"total_tokens":42,"completion_tokens_details":{"reasoning_tokens":0}}}`,
		`[DONE]`,
	}},
	chatadapter.OpenAIResponses: {{ // a reasoning summary, a message, a function_call item
		rCreated,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}`,
		`{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"The person "}`,
		`{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"wants a pear."}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}`,
		`{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Adding."}`,
		`{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"add_item","arguments":"","status":"in_progress"}}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"{\"name\":"}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"\"pear\",\"qty\":2}"}`,
		`{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":2,"arguments":"{\"name\":\"pear\",\"qty\":2}"}`,
		`{"type":"response.completed","response":{"object":"response","status":"completed","output":[` +
			`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"The person wants a pear."}]},` +
			`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Adding."}]},` +
			`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"add_item","arguments":"{\"name\":\"pear\",\"qty\":2}","status":"completed"}],` +
			`"usage":{"input_tokens":20,"output_tokens":30,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":50}}}`,
	}, {
		rCreated, rText("Added."),
		`{"type":"response.completed","response":{"object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Added."}]}],` +
			`"usage":{"input_tokens":40,"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0}}}}`,
	}},
	chatadapter.Anthropic: {{ // extended thinking, then a tool_use block
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The person "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"wants a pear."}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Adding."}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"add_item","input":{}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"name\":"}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"pear\",\"qty\":2}"}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}`,
		aStop,
	}, {aStart, aTextStart, aText("Added."), aDelta("end_turn"), aStop}},
	chatadapter.Gemini: {{ // includeThoughts: thought parts, then a whole functionCall
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"The person ","thought":true}]}}],"usageMetadata":{"promptTokenCount":20}}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"wants a pear.","thought":true}]}}],"usageMetadata":{"promptTokenCount":20}}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Adding."}]}}],"usageMetadata":{"promptTokenCount":20}}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"add_item","args":{"name":"pear","qty":2}},"thoughtSignature":"c2ln"}]},"finishReason":"STOP"}],` +
			`"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":18,"thoughtsTokenCount":12,"totalTokenCount":50}}`,
	}, {gText("Added.", "STOP")}},
}

// streamPaths are where each API streams, for model "m".
var streamPaths = map[chatadapter.Shape]string{chatadapter.OpenAIChat: "/chat/completions", chatadapter.OpenAIResponses: "/responses",
	chatadapter.Anthropic: "/messages", chatadapter.Gemini: "/models/m:streamGenerateContent"}

// pieceLines are the turn's reasoning and forming-call events, as lines.
func pieceLines(rec *recorder) []string {
	var out []string
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range rec.events {
		switch e.Kind {
		case chatadapter.ReasoningDelta:
			out = append(out, "thinking: "+e.Text)
		case chatadapter.CallInputDelta:
			out = append(out, fmt.Sprintf("call %d %s (%s, %s, write %t): %s", e.Index, e.Tool, e.FriendlyName, e.CallID, e.Write, e.Text))
		}
	}
	return out
}

// Each API's reasoning and forming tool calls reach the events as they
// stream, in order, before the call runs; the reasoning stays out of the
// answer's text, and its tokens are counted apart in the usage.
func TestStreamPieces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		shape  chatadapter.Shape
		id     string
		pieces []string // after the two thinking lines
		usage  chatadapter.Usage
	}{
		{chatadapter.OpenAIChat, "call_1", []string{"", `{"name":`, `"pear","qty":2}`},
			chatadapter.Usage{PromptTokens: 20, CompletionTokens: 30, ReasoningTokens: 12}},
		{chatadapter.OpenAIResponses, "call_1", []string{"", `{"name":`, `"pear","qty":2}`},
			chatadapter.Usage{PromptTokens: 20, CompletionTokens: 30, ReasoningTokens: 12}},
		{chatadapter.Anthropic, "toolu_1", []string{"", `{"name":`, `"pear","qty":2}`}, // no reasoning tokens apart
			chatadapter.Usage{PromptTokens: 20, CompletionTokens: 30}},
		{chatadapter.Gemini, "", []string{`{"name":"pear","qty":2}`}, // the call whole
			chatadapter.Usage{PromptTokens: 20, CompletionTokens: 30, ReasoningTokens: 12}},
	}
	for _, tt := range tests {
		t.Run(tt.shape.String(), func(t *testing.T) {
			t.Parallel()
			f := newStreamFixture(t)
			m := newModelAt(t, "/v1"+streamPaths[tt.shape], sse(piecesStreams[tt.shape][0]...), sse(piecesStreams[tt.shape][1]...))
			rec := &recorder{}
			ep := run.Endpoint{Shape: tt.shape, BaseURL: m.srv.URL + "/v1", Model: "m"}
			tr, err := streamRunner(t, f, ep, nil).Run(chatadapter.WithEvents(f.ctx, rec.add), []json.RawMessage{run.TextMessage(tt.shape, "user", "Add two pears.")})
			require.NoError(t, err)
			want := []string{"thinking: The person ", "thinking: wants a pear."}
			for _, p := range tt.pieces {
				want = append(want, fmt.Sprintf("call 0 add_item (Add item, %s, write true): %s", tt.id, p))
			}
			require.Equal(t, want, pieceLines(rec))
			require.Equal(t, []string{"delta: Adding.", "reply: Adding.", "started: Add item…", "progress: Add item… 1/1 saved",
				"finished: Add item… done", "delta: Added.", "reply: Added.", "ended: Added."}, rec.lines(), "the reasoning is not the answer")
			require.Equal(t, "Added.", tr.Answer)
			require.Equal(t, tt.usage, tr.StepUsage[0])
			require.Equal(t, tt.usage.ReasoningTokens, tr.Usage.ReasoningTokens)
			require.Equal(t, [][3]any{{1, "apple", 3}, {2, "pear", 2}}, f.rows(t))
			var last int // the forming call's pieces come before it runs
			for i, e := range rec.events {
				if e.Kind == chatadapter.TextDelta && e.Tool != "" {
					last = i
				}
				if e.Kind == chatadapter.CallStarted {
					require.Less(t, last, i)
				}
			}
		})
	}
}

// Stop while the model streams its text, in each API: the words the
// person saw stay as the assistant's message in the endpoint's format,
// marked cut, and saved so; the reasoning is not among them.
func TestStreamStopKeepsText(t *testing.T) {
	t.Parallel()
	first := map[chatadapter.Shape][]string{ // the stream up to its text; then the words, one per event
		chatadapter.OpenAIChat:      {delta(`{"role":"assistant","content":null,"reasoning_content":"Hm."}`)},
		chatadapter.OpenAIResponses: {rCreated, `{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Hm."}`},
		chatadapter.Anthropic:       {aStart, `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hm."}}`, `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
		chatadapter.Gemini:          {`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hm.","thought":true}]}}]}`},
	}
	word := map[chatadapter.Shape]func(string) string{
		chatadapter.OpenAIChat:      func(s string) string { return delta(`{"content":"` + s + `"}`) },
		chatadapter.OpenAIResponses: rText,
		chatadapter.Anthropic: func(s string) string {
			return `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"` + s + `"}}`
		},
		chatadapter.Gemini: func(s string) string { return gText(s, "") },
	}
	words := []string{"Pears ", "are ", "in ", "season ", "now."}
	for _, n := range []int{1, 3} { // Stop after n words of 5
		for shape := range first {
			t.Run(fmt.Sprintf("%s/%d", shape, n), func(t *testing.T) {
				t.Parallel()
				f := newStreamFixture(t)
				next := make(chan struct{}) // the page saw a word: the server may send the next
				m := newModelAt(t, "/v1"+streamPaths[shape], func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					for _, d := range first[shape] {
						fmt.Fprintf(w, "data: %s\n\n", d)
					}
					for _, s := range words {
						fmt.Fprintf(w, "data: %s\n\n", word[shape](s))
						w.(http.Flusher).Flush()
						select {
						case <-next:
						case <-r.Context().Done():
							return
						}
					}
				})
				ctx, cancel := context.WithCancel(f.ctx)
				defer cancel()
				seen := 0
				ctx = chatadapter.WithEvents(ctx, func(e chatadapter.Event) {
					if e.Kind != chatadapter.TextDelta {
						return
					}
					if seen++; seen == n {
						cancel() // the person presses Stop
						return
					}
					next <- struct{}{}
				})
				in := []json.RawMessage{run.TextMessage(shape, "user", "Tell me about pears.")}
				ep := run.Endpoint{Shape: shape, BaseURL: m.srv.URL + "/v1", Model: "m"}
				r := streamRunner(t, f, ep, nil)
				tr, err := r.Run(ctx, in)
				require.ErrorIs(t, err, context.Canceled)
				require.EqualError(t, err, "chatadapter: run: context canceled")
				text := strings.Join(words[:n], "")
				require.True(t, tr.Cut)
				require.Equal(t, text, tr.Answer)
				require.Equal(t, append(in, run.TextMessage(shape, "assistant", text)), tr.Messages)
				require.Zero(t, tr.Steps)

				b, err := json.Marshal(tr)
				require.NoError(t, err)
				back, err := r.Restore(b)
				require.NoError(t, err)
				require.True(t, back.Cut)
				require.Equal(t, tr.Messages, back.Messages)
			})
		}
	}
}
