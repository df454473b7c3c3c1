package chattest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// argPiece is how many bytes of a tool call's arguments one chunk
// carries, so that the client has to put them together.
const argPiece = 7

// stream answers request n with rep as OpenAI Chat Completions streams
// it: chunks as server-sent events, flushed one by one, then [DONE].
func stream(w http.ResponseWriter, n int, rep Reply, options json.RawMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b) // an error: the client went away
		if flusher != nil {
			flusher.Flush()
		}
	}
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
		c["usage"] = map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.Total(),
			"prompt_tokens_details": map[string]any{"cached_tokens": u.CachedTokens}}
		send(c)
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
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
