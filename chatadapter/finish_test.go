package chatadapter_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
	"github.com/stretchr/testify/require"
)

// The lines of a turn that ended without the answer asked for.
const (
	lineFilter    = "The provider's content filter stopped this answer. Rephrase your message and try again."
	lineRefusal   = "The model declined to answer. Rephrase your message, or ask something else."
	lineMalformed = "The model tried to use a tool but wrote the call wrongly. Send your message again."
	linePause     = "The model paused before finishing. Say “go on” to let it continue."
	lineOther     = "The model stopped without answering. Send your message again, or rephrase it."
)

// Each provider's reason to stop is one word for every provider
// (Transcript.Finish, the events' Finish) beside its own (FinishRaw); a
// turn that ends without the answer (a content filter, a refusal, a
// malformed call, a pause, a blocked prompt) says so in the TurnEnded
// event's Label, streamed or not.
func TestFinishEachAPI(t *testing.T) {
	t.Parallel()
	oa, rs, an, ge := chatadapter.OpenAIChat, chatadapter.OpenAIResponses, chatadapter.Anthropic, chatadapter.Gemini
	chat := func(message, reason string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":` + message + `,"finish_reason":"` + reason + `"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`
	}
	response := func(status, rest string) string {
		return `{"id":"resp_1","object":"response","status":"` + status + `",` + rest + `,"usage":{"input_tokens":5,"output_tokens":1}}`
	}
	rsDone := func(typ, body string) string {
		return `{"type":"` + typ + `","sequence_number":9,"response":` + body + `}`
	}
	message := func(stop, content string) string {
		return `{"id":"msg_1","type":"message","role":"assistant","content":` + content + `,"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}`
	}
	candidate := func(reason string) string {
		return `{"candidates":[{"content":{},"finishReason":"` + reason + `","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5}}`
	}
	rsCompleted := response("completed", `"output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi.","annotations":[]}]}]`)
	rsFiltered := response("incomplete", `"incomplete_details":{"reason":"content_filter"},"output":[]`)
	rsRefused := response("completed", `"output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I cannot help with that."}]}]`)
	tests := []struct {
		shape       chatadapter.Shape
		name        string
		body        string   // the response unstreamed
		events      []string // the same streamed
		finish, raw string
		answer      string
		line        string // the TurnEnded Label when not the answer
	}{
		{oa, "stop", chat(`{"role":"assistant","content":"Hi."}`, "stop"), []string{delta(`{"content":"Hi."}`), finish("stop"), "[DONE]"},
			"stop", "stop", "Hi.", ""},
		{oa, "content_filter", chat(`{"role":"assistant","content":null}`, "content_filter"), []string{finish("content_filter"), "[DONE]"},
			"content_filter", "content_filter", "", lineFilter},
		{oa, "a refusal", chat(`{"role":"assistant","content":null,"refusal":"I'm sorry, I cannot help with that."}`, "stop"),
			[]string{delta(`{"role":"assistant","content":null,"refusal":""}`), delta(`{"refusal":"I'm sorry, "}`), delta(`{"refusal":"I cannot help with that."}`), finish("stop"), "[DONE]"},
			"refusal", "refusal", "I'm sorry, I cannot help with that.", lineRefusal},
		{rs, "completed", rsCompleted, []string{rCreated, rText("Hi."), rsDone("response.completed", rsCompleted)}, "stop", "completed", "Hi.", ""},
		{rs, "incomplete: content_filter", rsFiltered, []string{rCreated, rsDone("response.incomplete", rsFiltered)}, "content_filter", "content_filter", "", lineFilter},
		{rs, "a refusal", rsRefused, []string{rCreated, `{"type":"response.refusal.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"I cannot help with that."}`,
			rsDone("response.completed", rsRefused)}, "refusal", "refusal", "I cannot help with that.", lineRefusal},
		{an, "end_turn", message("end_turn", `[{"type":"text","text":"Hi."}]`), []string{aStart, aTextStart, aText("Hi."), aDelta("end_turn"), aStop},
			"stop", "end_turn", "Hi.", ""},
		{an, "stop_sequence", message("stop_sequence", `[{"type":"text","text":"Hi."}]`), []string{aStart, aTextStart, aText("Hi."), aDelta("stop_sequence"), aStop},
			"stop", "stop_sequence", "Hi.", ""},
		{an, "refusal", message("refusal", `[]`), []string{aStart, aDelta("refusal"), aStop}, "refusal", "refusal", "", lineRefusal},
		{an, "pause_turn", message("pause_turn", `[{"type":"text","text":"Searching"}]`), []string{aStart, aTextStart, aText("Searching"), aDelta("pause_turn"), aStop},
			"pause", "pause_turn", "Searching", linePause},
		{an, "a reason Run does not know", message("something_new", `[{"type":"text","text":"Hi."}]`), []string{aStart, aTextStart, aText("Hi."), aDelta("something_new"), aStop},
			"other", "something_new", "Hi.", lineOther},
		{ge, "STOP", gText("Hi.", "STOP"), []string{gText("Hi.", "STOP")}, "stop", "STOP", "Hi.", ""},
		{ge, "SAFETY", candidate("SAFETY"), []string{candidate("SAFETY")}, "content_filter", "SAFETY", "", lineFilter},
		{ge, "RECITATION", candidate("RECITATION"), []string{candidate("RECITATION")}, "content_filter", "RECITATION", "", lineFilter},
		{ge, "BLOCKLIST", candidate("BLOCKLIST"), []string{candidate("BLOCKLIST")}, "content_filter", "BLOCKLIST", "", lineFilter},
		{ge, "PROHIBITED_CONTENT", candidate("PROHIBITED_CONTENT"), []string{candidate("PROHIBITED_CONTENT")}, "content_filter", "PROHIBITED_CONTENT", "", lineFilter},
		{ge, "SPII", candidate("SPII"), []string{candidate("SPII")}, "content_filter", "SPII", "", lineFilter},
		{ge, "MALFORMED_FUNCTION_CALL", candidate("MALFORMED_FUNCTION_CALL"), []string{candidate("MALFORMED_FUNCTION_CALL")}, "malformed_call", "MALFORMED_FUNCTION_CALL", "", lineMalformed},
		{ge, "OTHER", candidate("OTHER"), []string{candidate("OTHER")}, "other", "OTHER", "", lineOther},
		{ge, "the prompt blocked", `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5}}`,
			[]string{`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5}}`},
			"content_filter", "PROHIBITED_CONTENT", "", lineFilter},
	}
	for _, tt := range tests {
		bothWays(t, tt.shape.String()+"/"+tt.name, func(t *testing.T, stream bool) {
			answer := func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(tt.body))
			}
			if stream {
				answer = sse(tt.events...)
			}
			m := newModelAt(t, pathOf(tt.shape, stream), answer)
			f := newStreamFixture(t)
			r, err := run.New(f.a, run.Endpoint{Shape: tt.shape, BaseURL: m.srv.URL + "/v1", Model: "m"}, &run.Options{Stream: stream})
			require.NoError(t, err)
			rec := &recorder{}
			in := []json.RawMessage{run.TextMessage(tt.shape, "user", "Hi.")}
			tr, err := r.Run(chatadapter.WithEvents(f.ctx, rec.add), in)
			require.NoError(t, err)
			require.Equal(t, tt.answer, tr.Answer)
			require.Equal(t, tt.finish, tr.Finish)
			require.Equal(t, tt.raw, tr.FinishRaw)
			require.Equal(t, []string{tt.finish}, tr.StepFinish)
			replies := rec.of(chatadapter.ModelReply)
			require.Len(t, replies, 1)
			require.Equal(t, tt.finish, replies[0].Finish)
			require.Equal(t, tt.raw, replies[0].FinishRaw)
			ended := rec.of(chatadapter.TurnEnded)
			require.Len(t, ended, 1)
			require.Equal(t, tt.finish, ended[0].Finish)
			require.Equal(t, tt.raw, ended[0].FinishRaw)
			require.Equal(t, tt.answer, ended[0].Text)
			line := tt.line
			if line == "" {
				line = tt.answer
			}
			require.Equal(t, line, ended[0].Label)
			require.Len(t, m.requests(), 1)
		})
	}
}

// Each request's finish is counted in order: a step with tool calls,
// then the answer; a resumed turn goes on from the paused one's.
func TestFinishPerStep(t *testing.T) {
	t.Parallel()
	for _, shape := range runShapes {
		t.Run(shape.String(), func(t *testing.T) {
			t.Parallel()
			p := start(t, newShop(t), nil)
			srv := chattest.NewServer(shape, chattest.Reply{Calls: []chattest.Call{{Name: "add_item", Args: `{"name":"pear"}`}}},
				chattest.Reply{Text: "Added a pear."})
			defer srv.Close()
			rec := &recorder{}
			tr, err := p.runner(t, srv, nil).Run(chatadapter.WithEvents(p.ctx, rec.add), user(shape, "Add a pear."))
			require.NoError(t, err)
			require.Equal(t, "Added a pear.", tr.Answer)
			require.Equal(t, []string{"tool_calls", "stop"}, tr.StepFinish)
			require.Equal(t, "stop", tr.Finish)
			var finishes []string
			for _, e := range rec.of(chatadapter.ModelReply) {
				finishes = append(finishes, e.Finish)
			}
			require.Equal(t, []string{"tool_calls", "stop"}, finishes)
			require.Equal(t, "Added a pear.", rec.of(chatadapter.TurnEnded)[0].Label)
		})
	}
}
