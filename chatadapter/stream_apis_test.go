package chatadapter_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
	"github.com/stretchr/testify/require"
)

// Each API's sign of an answer cut at its output limit fails a streamed
// turn as it fails an unstreamed one, after its text was shown, with the
// usage the stream reported.
func TestStreamTruncatedEachAPI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		shape chatadapter.Shape
		cut   string
	}{
		{chatadapter.OpenAIChat, `finish_reason "length"): raise max_completion_tokens`},
		{chatadapter.OpenAIResponses, `status "incomplete", reason "max_output_tokens"): raise max_output_tokens`},
		{chatadapter.Anthropic, `stop_reason "max_tokens"): raise max_tokens`},
		{chatadapter.Gemini, `finishReason "MAX_TOKENS"): raise generationConfig's "maxOutputTokens"`},
	}
	for _, tt := range tests {
		t.Run(tt.shape.String(), func(t *testing.T) {
			t.Parallel()
			f := newStreamFixture(t)
			usage := chatadapter.Usage{PromptTokens: 30, CompletionTokens: 2, CachedTokens: 10}
			srv := chattest.NewServer(tt.shape, chattest.Reply{Text: "Cut short", Truncated: true, Usage: usage})
			defer srv.Close()
			rec := &recorder{}
			in := []json.RawMessage{run.TextMessage(tt.shape, "user", "Go.")}
			tr, err := streamRunner(t, f, srv.Endpoint(), nil).Run(chatadapter.WithEvents(f.ctx, rec.add), in)
			url := srv.Endpoint().BaseURL + map[chatadapter.Shape]string{chatadapter.OpenAIChat: "/chat/completions",
				chatadapter.OpenAIResponses: "/responses", chatadapter.Anthropic: "/messages",
				chatadapter.Gemini: "/models/scripted-model:streamGenerateContent?alt=sse"}[tt.shape]
			require.EqualError(t, err, "chatadapter: POST "+url+": chatadapter: the model's response was cut at its output limit ("+tt.cut+
				" in run.Options.RequestFields, or ask for less; the transcript ends before this response, so Run can send it again")
			require.ErrorIs(t, err, run.ErrTruncated)
			require.Equal(t, []string{"delta: Cut", "delta:  short", "reply: ",
				"ended: The answer was cut off at its length limit. Ask for less at once, or ask the site's owner to raise the limit."}, rec.lines())
			require.Equal(t, "length", tr.Finish)
			require.Equal(t, []string{"length"}, tr.StepFinish)
			require.Equal(t, "length", rec.of(chatadapter.TurnEnded)[0].Finish)
			require.Equal(t, in, tr.Messages)
			require.Equal(t, usage, tr.Usage)
		})
	}
}

// broken answers with the events, then breaks the connection.
func broken(data ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", "1000") // promises more than it sends: the client reads an unexpected EOF
		for _, d := range data {
			fmt.Fprintf(w, "data: %s\n\n", d)
		}
	}
}

// The wire's events, for each API.
const (
	aStart     = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`
	aTextStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	aStop      = `{"type":"message_stop"}`
	// aOverloaded is Anthropic's error event for what an unstreamed answer
	// gives as status 529.
	aOverloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	rCreated    = `{"type":"response.created","sequence_number":0,"response":{"object":"response","status":"in_progress","output":[]}}`
)

func aText(s string) string {
	return `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + s + `"}}`
}

func aDelta(stop string) string {
	return `{"type":"message_delta","delta":{"stop_reason":"` + stop + `","stop_sequence":null},"usage":{"output_tokens":3}}`
}

func rText(s string) string {
	return `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"` + s + `"}`
}

func gText(s, finish string) string {
	c := `{"content":{"role":"model","parts":[{"text":"` + s + `"}]}`
	if finish != "" {
		c += `,"finishReason":"` + finish + `"`
	}
	return `{"candidates":[` + c + `}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1}}`
}

// A stream that fails, in each API: the error says how, and a stream that
// broke before the model's first words is tried again, one that broke
// after is not.
func TestStreamErrorsEachAPI(t *testing.T) {
	t.Parallel()
	type handler = func(http.ResponseWriter, *http.Request)
	ok := map[chatadapter.Shape]handler{
		chatadapter.Anthropic:       sse(aStart, aTextStart, aText("Fine."), aDelta("end_turn"), aStop),
		chatadapter.OpenAIResponses: sse(rCreated, rText("Fine."), `{"type":"response.completed","response":{"object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fine."}]}]}}`),
		chatadapter.Gemini:          sse(gText("Fine.", "STOP")),
	}
	tests := []struct {
		shape    chatadapter.Shape
		name     string
		replies  []handler
		err      string // "" for none
		requests int
		deltas   []string
	}{
		{chatadapter.Anthropic, "an error event after text: not retried", []handler{sse(aStart, aTextStart, aText("Hm"), aOverloaded), ok[chatadapter.Anthropic]},
			"the endpoint sent an error in the stream: overloaded_error: Overloaded", 1, []string{"Hm"}},
		{chatadapter.Anthropic, "overloaded before text: retried as a 529", []handler{sse(aStart, aOverloaded), sse(aStart, aTextStart, aOverloaded), ok[chatadapter.Anthropic]},
			"", 3, []string{"Fine."}},
		{chatadapter.Anthropic, "overloaded before text, every time: retries spent", []handler{sse(aOverloaded), sse(aOverloaded), sse(aOverloaded), sse(aOverloaded), ok[chatadapter.Anthropic]},
			"the endpoint sent an error in the stream: overloaded_error: Overloaded", 4, nil},
		{chatadapter.Anthropic, "rate limited before text: retried as a 429", []handler{sse(aStart, `{"type":"error","error":{"type":"rate_limit_error","message":"Slow down."}}`), ok[chatadapter.Anthropic]},
			"", 2, []string{"Fine."}},
		{chatadapter.Anthropic, "a bad request before text: not retried, as a 400", []handler{sse(aStart, `{"type":"error","error":{"type":"invalid_request_error","message":"Bad tools."}}`), ok[chatadapter.Anthropic]},
			"the endpoint sent an error in the stream: invalid_request_error: Bad tools.", 1, nil},
		{chatadapter.Anthropic, "the stream ends early", []handler{sse(aStart, aTextStart, aText("Half"))},
			"the stream ended before the answer did (no stop_reason, no message_stop)", 1, []string{"Half"}},
		{chatadapter.Anthropic, "broken after text: not retried", []handler{broken(aStart, aTextStart, aText("Half")), ok[chatadapter.Anthropic]},
			"unexpected EOF", 1, []string{"Half"}},
		{chatadapter.Anthropic, "broken before text: retried", []handler{broken(aStart, aTextStart), ok[chatadapter.Anthropic]}, "", 2, []string{"Fine."}},
		{chatadapter.Anthropic, "an event that is not JSON", []handler{sse(`{"type":`)},
			`a stream event is not an Anthropic message event (unexpected end of JSON input): {"type":`, 1, nil},
		{chatadapter.Anthropic, "a block out of reach", []handler{sse(aStart, `{"type":"content_block_start","index":5000,"content_block":{"type":"text","text":""}}`)},
			`a stream event's content block has no index, or one out of reach (at most 1024 blocks are read): {"type":"content_block_start","index":5000,"content_block":{"type":"text","text":""}}`, 1, nil},
		{chatadapter.Anthropic, "deltas without their block", []handler{sse(aStart, aText("Hi"), aDelta("end_turn"), aStop)},
			"content block 0 had deltas but no content_block_start", 1, []string{"Hi"}},
		{chatadapter.Anthropic, "a tool call's input cut", []handler{sse(aStart,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"get_item","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"id\":"}}`, aDelta("tool_use"), aStop)},
			`content block 0: the tool call's input is not JSON: {"id":`, 1, nil},
		{chatadapter.OpenAIResponses, "an error event", []handler{sse(rCreated, rText("Hm"), `{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong.","param":null,"sequence_number":2}`)},
			"the endpoint sent an error in the stream: ERR_SOMETHING: Something went wrong.", 1, []string{"Hm"}},
		{chatadapter.OpenAIResponses, "a server error before text: retried", []handler{sse(rCreated, `{"type":"error","code":"server_error","message":"The server had an error.","param":null,"sequence_number":1}`), ok[chatadapter.OpenAIResponses]},
			"", 2, []string{"Fine."}},
		{chatadapter.OpenAIResponses, "the response failed before text: retried as a 500", []handler{sse(rCreated, `{"type":"response.failed","response":{"object":"response","status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}}`), ok[chatadapter.OpenAIResponses]},
			"", 2, []string{"Fine."}},
		{chatadapter.OpenAIResponses, "the stream ends early", []handler{sse(rCreated, rText("Half"))},
			"the stream ended before the answer did (no response.completed, response.incomplete or response.failed)", 1, []string{"Half"}},
		{chatadapter.OpenAIResponses, "broken before text: retried", []handler{broken(rCreated), ok[chatadapter.OpenAIResponses]}, "", 2, []string{"Fine."}},
		{chatadapter.OpenAIResponses, "the last event without its response", []handler{sse(`{"type":"response.completed"}`)},
			`a response.completed event without its response: {"type":"response.completed"}`, 1, nil},
		{chatadapter.OpenAIResponses, "an event that is not JSON", []handler{sse(`{"type":`)},
			`a stream event is not a Responses API event (unexpected end of JSON input): {"type":`, 1, nil},
		{chatadapter.Gemini, "an error chunk", []handler{sse(gText("Hm", ""), `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`)},
			"the endpoint sent an error in the stream: INTERNAL: An internal error has occurred.", 1, []string{"Hm"}},
		{chatadapter.Gemini, "unavailable before text: retried as a 503", []handler{sse(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), ok[chatadapter.Gemini]},
			"", 2, []string{"Fine."}},
		{chatadapter.Gemini, "an error chunk after text: not retried", []handler{sse(gText("Hm", ""), `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), ok[chatadapter.Gemini]},
			"the endpoint sent an error in the stream: UNAVAILABLE: The model is overloaded.", 1, []string{"Hm"}},
		{chatadapter.Gemini, "the stream ends early", []handler{sse(gText("Half", ""))},
			"the stream ended before the answer did (no finishReason)", 1, []string{"Half"}},
		{chatadapter.Gemini, "broken after text: not retried", []handler{broken(gText("Half", "")), ok[chatadapter.Gemini]}, "unexpected EOF", 1, []string{"Half"}},
		{chatadapter.Gemini, "broken before text: retried", []handler{broken(`{"candidates":[{"content":{"role":"model","parts":[]}}]}`), ok[chatadapter.Gemini]},
			"", 2, []string{"Fine."}},
		{chatadapter.Gemini, "a chunk that is not JSON", []handler{sse(`{"candidates":`)},
			`a stream chunk is not a Gemini response (EOF): {"candidates":`, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.shape.String()+"/"+tt.name, func(t *testing.T) {
			t.Parallel()
			path := map[chatadapter.Shape]string{chatadapter.OpenAIResponses: "/responses", chatadapter.Anthropic: "/messages",
				chatadapter.Gemini: "/models/m:streamGenerateContent"}[tt.shape]
			m := newModelAt(t, "/v1"+path, tt.replies...)
			want := ""
			if tt.err != "" {
				want = "chatadapter: POST " + m.srv.URL + "/v1" + path
				if tt.shape == chatadapter.Gemini {
					want += "?alt=sse"
				}
				want += ": " + tt.err
			}
			ep := run.Endpoint{Shape: tt.shape, BaseURL: m.srv.URL + "/v1", Model: "m"}
			streamCase(t, m, ep, []json.RawMessage{run.TextMessage(tt.shape, "user", "Go.")}, tt.deltas, tt.requests, want)
		})
	}
}

// A call without arguments, streamed by Anthropic: content_block_start
// gives input {}, and its one input_json_delta an empty partial_json. The
// call runs with {}, as Anthropic's SDK reads it.
func TestStreamAnthropicCallWithoutArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		deltas []string // the input_json_delta events' partial_json
		input  string   // the input the transcript keeps
	}{
		{"one empty delta", []string{""}, `{}`},
		{"no delta", nil, `{}`},
		{"empty deltas then an object", []string{"", "{}"}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			events := []string{aStart, `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"man","input":{}}}`}
			for _, d := range tt.deltas {
				events = append(events, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"`+d+`"}}`)
			}
			events = append(events, `{"type":"content_block_stop","index":0}`, aDelta("tool_use"), aStop)
			m := newModelAt(t, "/v1/messages", sse(events...), sse(aStart, aTextStart, aText("Fine."), aDelta("end_turn"), aStop))
			f := newStreamFixture(t)
			ep := run.Endpoint{Shape: chatadapter.Anthropic, BaseURL: m.srv.URL + "/v1", Model: "m"}
			tr, err := streamRunner(t, f, ep, nil).Run(f.ctx, []json.RawMessage{run.TextMessage(chatadapter.Anthropic, "user", "Help.")})
			require.NoError(t, err)
			require.Equal(t, "Fine.", tr.Answer)
			require.Len(t, m.requests(), 2)
			require.Len(t, tr.Outcomes, 1)
			require.False(t, tr.Outcomes[0].Result.IsError, string(tr.Outcomes[0].Result.JSON))
			var kept struct {
				Content []struct {
					Type  string          `json:"type"`
					Input json.RawMessage `json:"input"`
				} `json:"content"`
			}
			require.NoError(t, json.Unmarshal(tr.Messages[1], &kept))
			require.Len(t, kept.Content, 1)
			require.Equal(t, "tool_use", kept.Content[0].Type)
			require.JSONEq(t, tt.input, string(kept.Content[0].Input))
		})
	}
}
