package chattest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
)

// Anthropic Messages: a message of content blocks, Anthropic's error
// body, its stream from message_start to message_stop.
type anthropic struct{}

func (anthropic) path() string       { return "/v1/messages" }
func (anthropic) streamPath() string { return "" }
func (anthropic) required() []string { return []string{"model", "max_tokens", "messages"} }
func (anthropic) history() string    { return "messages" }

// authorized: x-api-key, as the API reference has it; newer SDKs send a
// bearer token.
func (anthropic) authorized(r *http.Request) bool {
	return (r.Header.Get("X-Api-Key") == Key || bearer(r)) && r.Header.Get("Anthropic-Version") != ""
}

func (anthropic) response(n int, rep Reply) map[string]any {
	u := rep.Usage
	var content []any
	if rep.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": rep.Text})
	}
	for i, c := range rep.Calls {
		content = append(content, map[string]any{"type": "tool_use", "id": callID(c, "toolu", n, i), "name": c.Name, "input": args(c)})
	}
	stop := "end_turn"
	if len(rep.Calls) > 0 {
		stop = "tool_use"
	}
	if rep.Truncated {
		stop = "max_tokens"
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": Model,
		"content": orEmpty(content), "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                u.PromptTokens - u.CachedTokens - u.CacheWriteTokens,
			"cache_creation_input_tokens": u.CacheWriteTokens,
			"cache_read_input_tokens":     u.CachedTokens,
			"output_tokens":               u.CompletionTokens,
		},
	}
}

func (anthropic) failure(h http.Header, rep Reply) any {
	if rep.RetryAfter != "" {
		h.Set("Retry-After", rep.RetryAfter)
	}
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
		405: "invalid_request_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}[rep.Status]
	if typ == "" {
		typ = "api_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": rep.Text}, "request_id": "req_chattest"}
}

func (anthropic) turnOf(raw json.RawMessage) (calls, results []string, opens bool) {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil, nil, true
	}
	var blocks []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		ToolUseID string `json:"tool_use_id"`
	}
	_ = json.Unmarshal(m.Content, &blocks) // a string content has no blocks
	for _, b := range blocks {
		switch b.Type {
		case "tool_use":
			calls = append(calls, b.ID)
		case "tool_result":
			results = append(results, b.ToolUseID)
		}
	}
	return calls, results, len(results) == 0
}

// stream streams as Anthropic Messages does: message_start with the
// input's usage, each content block (a text block a word at a time, a
// tool_use block's input in pieces of JSON), a ping, message_delta with
// the stop_reason and the output's usage, then message_stop.
func (a anthropic) stream(e *events, n int, rep Reply, _ Request) {
	send := func(v map[string]any) { e.send(v["type"].(string), v) }
	msg := a.response(n, rep)
	start := maps.Clone(msg)
	start["content"], start["stop_reason"] = []any{}, nil
	usage := maps.Clone(msg["usage"].(map[string]any))
	usage["output_tokens"] = 1
	start["usage"] = usage
	send(map[string]any{"type": "message_start", "message": start})
	send(map[string]any{"type": "ping"})
	for i, b := range msg["content"].([]any) {
		block := b.(map[string]any)
		first := maps.Clone(block)
		var deltas []map[string]any
		switch block["type"] {
		case "text":
			first["text"] = ""
			for _, w := range words(rep.Text) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": w})
			}
		case "tool_use":
			first["input"] = map[string]any{}
			for _, p := range pieces(string(block["input"].(json.RawMessage))) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
			}
		}
		send(map[string]any{"type": "content_block_start", "index": i, "content_block": first})
		for _, d := range deltas {
			send(map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		send(map[string]any{"type": "content_block_stop", "index": i})
	}
	send(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": rep.Usage.CompletionTokens}})
	send(map[string]any{"type": "message_stop"})
}
