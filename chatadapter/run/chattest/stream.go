package chattest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmtool/llmtool/chatadapter"
)

// argPiece is how many bytes of a tool call's arguments one chunk
// carries, so that the client has to put them together.
const argPiece = 7

// stream answers request n with rep as the API streams it.
func stream(w http.ResponseWriter, shape chatadapter.Shape, n int, rep Reply, req Request) {
	sse := req.Query.Get("alt") == "sse" || shape != chatadapter.Gemini
	e := &events{w: w, sse: sse}
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
	} else { // Gemini without alt=sse: the chunks as one JSON array
		w.Header().Set("Content-Type", "application/json")
	}
	switch shape {
	case chatadapter.OpenAIResponses:
		streamResponses(e, n, rep) // stream_apis.go
	case chatadapter.Anthropic:
		streamAnthropic(e, n, rep)
	case chatadapter.Gemini:
		streamGemini(e, n, rep)
	default:
		streamChat(e, n, rep, req.Body["stream_options"])
	}
	e.close()
}

// events writes server-sent events, each flushed as it is written; or,
// without sse, a JSON array of their data.
type events struct {
	w     http.ResponseWriter
	sse   bool
	array []any
}

// send writes v as an event's data, under the event name if one is given.
func (e *events) send(name string, v any) {
	if !e.sse {
		e.array = append(e.array, v)
		return
	}
	b, _ := json.Marshal(v)
	if name != "" {
		_, _ = fmt.Fprintf(e.w, "event: %s\n", name) // an error: the client went away
	}
	_, _ = fmt.Fprintf(e.w, "data: %s\n\n", b)
	e.flush()
}

func (e *events) flush() {
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (e *events) close() {
	if !e.sse {
		b, _ := json.Marshal(orEmpty(e.array))
		_, _ = e.w.Write(b)
	}
}

// streamChat streams as OpenAI Chat Completions does: chunks, then
// [DONE].
func streamChat(e *events, n int, rep Reply, options json.RawMessage) {
	send := func(v any) { e.send("", v) }
	base := func(choices []any) map[string]any {
		return map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk",
			"created": 1700000000 + n, "model": Model, "choices": choices}
	}
	delta := func(d map[string]any, finish any) {
		send(base([]any{map[string]any{"index": 0, "delta": d, "finish_reason": finish, "logprobs": nil}}))
	}

	first := map[string]any{"role": "assistant", "content": ""}
	if rep.Text == "" && len(rep.Calls) > 0 {
		first["content"] = nil
	}
	delta(first, nil)
	for _, word := range words(rep.Text) {
		delta(map[string]any{"content": word}, nil)
	}
	for i, c := range rep.Calls {
		delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID(c, "call", n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		a := string(args(c))
		for len(a) > 0 {
			k := min(argPiece, len(a))
			delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a[:k]}}}}, nil)
			a = a[k:]
		}
	}
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
	}
	if rep.Truncated {
		finish = "length"
	}
	delta(map[string]any{}, finish)
	var o struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if json.Unmarshal(options, &o) == nil && o.IncludeUsage {
		u := rep.Usage
		c := base([]any{})
		c["usage"] = map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.PromptTokens + u.CompletionTokens,
			"prompt_tokens_details": map[string]any{"cached_tokens": u.CachedTokens}}
		send(c)
	}
	_, _ = fmt.Fprint(e.w, "data: [DONE]\n\n")
	e.flush()
}

// words splits text as the stream sends it: each word with the spaces
// before it, so that the pieces joined are text.
func words(text string) []string {
	var out []string
	for len(text) > 0 {
		i := len(text) - len(strings.TrimLeft(text, " \n"))
		j := strings.IndexAny(text[i:], " \n")
		if j < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+j])
		text = text[i+j:]
	}
	return out
}
