package chattest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// OpenAI Chat Completions, as its API reference gives it, and every
// compatible server: a response with its usage block and finish reason,
// its error body, its stream of chat.completion.chunk events.
type openAIChat struct{}

func (openAIChat) path() string       { return "/v1/chat/completions" }
func (openAIChat) streamPath() string { return "" }
func (openAIChat) required() []string { return []string{"model", "messages"} }
func (openAIChat) history() string    { return "messages" }

func (openAIChat) authorized(r *http.Request) bool { return bearer(r) }

// bearer reports whether r carries the key as OpenAI's APIs take it.
func bearer(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+Key }

func (openAIChat) response(n int, rep Reply) map[string]any {
	u := rep.Usage
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if rep.Text != "" {
		msg["content"] = rep.Text
	}
	var calls []any
	for i, c := range rep.Calls {
		calls = append(calls, map[string]any{"id": callID(c, "call", n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(args(c))}})
	}
	finish := "stop"
	if len(calls) > 0 {
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	if rep.Truncated {
		finish = "length"
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000 + n, "model": Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage": map[string]any{
			"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.PromptTokens + u.CompletionTokens,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens, "audio_tokens": 0},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
		},
	}
}

// failure is OpenAI's error body, for both of its APIs.
func (openAIChat) failure(h http.Header, rep Reply) any {
	if rep.RetryAfter != "" {
		h.Set("Retry-After", rep.RetryAfter)
	}
	typ, code := "invalid_request_error", any(nil)
	switch {
	case rep.Status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case rep.Status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case rep.Status >= 500:
		typ = "server_error"
	}
	return map[string]any{"error": map[string]any{"message": rep.Text, "type": typ, "param": nil, "code": code}}
}

func (openAIChat) turnOf(raw json.RawMessage) (calls, results []string, opens bool) {
	var m struct {
		Role       string                `json:"role"`
		ToolCallID string                `json:"tool_call_id"`
		ToolCalls  []struct{ ID string } `json:"tool_calls"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil, nil, true
	}
	if m.Role == "tool" {
		return nil, []string{m.ToolCallID}, false
	}
	for _, c := range m.ToolCalls {
		calls = append(calls, c.ID)
	}
	return calls, nil, true
}

// stream streams as OpenAI Chat Completions does: chunks, then [DONE].
func (openAIChat) stream(e *events, n int, rep Reply, req Request) {
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
		for _, p := range pieces(string(args(c))) {
			delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil)
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
	if json.Unmarshal(req.Body["stream_options"], &o) == nil && o.IncludeUsage {
		u := rep.Usage
		c := base([]any{})
		c["usage"] = map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.PromptTokens + u.CompletionTokens,
			"prompt_tokens_details": map[string]any{"cached_tokens": u.CachedTokens}}
		send(c)
	}
	_, _ = fmt.Fprint(e.w, "data: [DONE]\n\n")
	e.flush()
}
