package chattest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
)

// OpenAI Responses: a response of output items, OpenAI's error body, its
// stream from response.created to response.completed.
type openAIResponses struct{}

func (openAIResponses) path() string       { return "/v1/responses" }
func (openAIResponses) streamPath() string { return "" }
func (openAIResponses) required() []string { return []string{"model", "input"} }
func (openAIResponses) history() string    { return "input" }

func (openAIResponses) authorized(r *http.Request) bool { return bearer(r) }

func (openAIResponses) failure(h http.Header, rep Reply) any { return openAIChat{}.failure(h, rep) }

func (openAIResponses) response(n int, rep Reply) map[string]any {
	u := rep.Usage
	var output []any
	if rep.Text != "" {
		output = append(output, map[string]any{
			"type": "message", "id": fmt.Sprintf("msg_%d", n), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}},
		})
	}
	for i, c := range rep.Calls {
		output = append(output, map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", n, i+1), "call_id": callID(c, "call", n, i),
			"name": c.Name, "arguments": string(args(c)), "status": "completed",
		})
	}
	status, incomplete := "completed", any(nil)
	if rep.Truncated {
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	return map[string]any{
		"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": 1700000000 + n, "model": Model,
		"status": status, "incomplete_details": incomplete, "error": nil, "output": orEmpty(output),
		"usage": map[string]any{
			"input_tokens": u.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CachedTokens},
			"output_tokens": u.CompletionTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": u.PromptTokens + u.CompletionTokens,
		},
	}
}

func (openAIResponses) turnOf(raw json.RawMessage) (calls, results []string, opens bool) {
	var m struct {
		Role   string `json:"role"`
		Type   string `json:"type"`
		CallID string `json:"call_id"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil, nil, true
	}
	switch m.Type {
	case "function_call":
		return []string{m.CallID}, nil, false
	case "function_call_output":
		return nil, []string{m.CallID}, false
	}
	return nil, nil, m.Role == "user" || m.Role == "system" || m.Role == "developer"
}

// stream streams as OpenAI Responses does: response.created, each output
// item added, its text a word at a time or its arguments in pieces,
// done, then the whole response in response.completed (or
// response.incomplete).
func (a openAIResponses) stream(e *events, n int, rep Reply, _ Request) {
	seq := 0
	send := func(v map[string]any) {
		v["sequence_number"] = seq
		seq++
		e.send(v["type"].(string), v)
	}
	final := a.response(n, rep)
	created := maps.Clone(final)
	created["status"], created["output"], created["usage"], created["incomplete_details"] = "in_progress", []any{}, nil, nil
	send(map[string]any{"type": "response.created", "response": created})
	for i, it := range final["output"].([]any) {
		item := it.(map[string]any)
		added := maps.Clone(item)
		added["status"] = "in_progress"
		id := item["id"]
		switch item["type"] {
		case "message":
			added["content"] = []any{}
			send(map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			send(map[string]any{"type": "response.content_part.added", "item_id": id, "output_index": i, "content_index": 0, "part": part})
			for _, w := range words(rep.Text) {
				send(map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": i, "content_index": 0, "delta": w})
			}
			send(map[string]any{"type": "response.output_text.done", "item_id": id, "output_index": i, "content_index": 0, "text": rep.Text})
			part["text"] = rep.Text
			send(map[string]any{"type": "response.content_part.done", "item_id": id, "output_index": i, "content_index": 0, "part": part})
		case "function_call":
			added["arguments"] = ""
			send(map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
			for _, p := range pieces(item["arguments"].(string)) {
				send(map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": i, "delta": p})
			}
			send(map[string]any{"type": "response.function_call_arguments.done", "item_id": id, "output_index": i, "arguments": item["arguments"]})
		}
		send(map[string]any{"type": "response.output_item.done", "output_index": i, "item": item})
	}
	last := "response.completed"
	if rep.Truncated {
		last = "response.incomplete"
	}
	send(map[string]any{"type": last, "response": final})
}
