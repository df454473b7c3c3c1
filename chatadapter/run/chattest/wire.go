package chattest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmtool/llmtool/chatadapter"
)

// The providers' wire formats, as their API references give them: each
// response with its usage block and stop signal, each error body.

// render is the response of request n for rep.
func render(shape chatadapter.Shape, n int, rep Reply) []byte {
	b, _ := json.Marshal(response(shape, n, rep))
	return b
}

// response is the response of request n for rep, as JSON's values.
func response(shape chatadapter.Shape, n int, rep Reply) map[string]any {
	u := rep.Usage
	var v map[string]any
	switch shape {
	case chatadapter.OpenAIResponses:
		v = responsesResponse(n, rep)
	case chatadapter.Anthropic:
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
		v = map[string]any{
			"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": Model,
			"content": orEmpty(content), "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens":                u.PromptTokens - u.CachedTokens - u.CacheWriteTokens,
				"cache_creation_input_tokens": u.CacheWriteTokens,
				"cache_read_input_tokens":     u.CachedTokens,
				"output_tokens":               u.CompletionTokens,
			},
		}
	case chatadapter.Gemini:
		var parts []any
		if rep.Text != "" {
			parts = append(parts, map[string]any{"text": rep.Text})
		}
		for _, c := range rep.Calls {
			fc := map[string]any{"name": c.Name, "args": args(c)}
			if c.ID != "" {
				fc["id"] = c.ID
			}
			parts = append(parts, map[string]any{"functionCall": fc})
		}
		finish := "STOP"
		if rep.Truncated {
			finish = "MAX_TOKENS"
		}
		usage := map[string]any{"promptTokenCount": u.PromptTokens, "candidatesTokenCount": u.CompletionTokens, "totalTokenCount": u.PromptTokens + u.CompletionTokens}
		if u.CachedTokens > 0 {
			usage["cachedContentTokenCount"] = u.CachedTokens
		}
		v = map[string]any{
			"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": orEmpty(parts)}, "finishReason": finish, "index": 0}},
			"usageMetadata": usage, "modelVersion": Model, "responseId": fmt.Sprintf("resp-%d", n),
		}
	default:
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
		v = map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000 + n, "model": Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
			"usage": map[string]any{
				"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.PromptTokens + u.CompletionTokens,
				"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens, "audio_tokens": 0},
				"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
			},
		}
	}
	return v
}

func responsesResponse(n int, rep Reply) map[string]any {
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

func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

func callID(c Call, prefix string, n, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("%s_%d_%d", prefix, n, i+1)
}

func args(c Call) json.RawMessage {
	if strings.TrimSpace(c.Args) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(c.Args)
}

// errorBody is the provider's error body for rep.Status with rep.Text.
func errorBody(shape chatadapter.Shape, rep Reply) []byte {
	var v any
	switch shape {
	case chatadapter.Anthropic:
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
			405: "invalid_request_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}[rep.Status]
		if typ == "" {
			typ = "api_error"
		}
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": rep.Text}, "request_id": "req_chattest"}
	case chatadapter.Gemini:
		status := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
			429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[rep.Status]
		if status == "" {
			status = "UNKNOWN"
		}
		e := map[string]any{"code": rep.Status, "message": rep.Text, "status": status}
		if rep.RetryAfter != "" {
			e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": rep.RetryAfter + "s"}}
		}
		v = map[string]any{"error": e}
	default:
		typ, code := "invalid_request_error", any(nil)
		switch {
		case rep.Status == http.StatusUnauthorized:
			code = "invalid_api_key"
		case rep.Status == http.StatusTooManyRequests:
			typ, code = "requests", "rate_limit_exceeded"
		case rep.Status >= 500:
			typ = "server_error"
		}
		v = map[string]any{"error": map[string]any{"message": rep.Text, "type": typ, "param": nil, "code": code}}
	}
	b, _ := json.Marshal(v)
	return b
}

// turnOf reads one message of a conversation: the IDs of the tool calls
// it makes and of the calls its results answer (Gemini pairs by name
// when there are none), and whether it starts a new turn, before which
// every call must have its result.
func turnOf(shape chatadapter.Shape, raw json.RawMessage) (calls, results []string, opens bool) {
	var m struct {
		Role       string                `json:"role"`
		Type       string                `json:"type"`
		ToolCallID string                `json:"tool_call_id"`
		CallID     string                `json:"call_id"`
		ToolCalls  []struct{ ID string } `json:"tool_calls"`
		Content    json.RawMessage       `json:"content"`
		Parts      []struct {
			FunctionCall     *struct{ ID, Name string } `json:"functionCall"`
			FunctionResponse *struct{ ID, Name string } `json:"functionResponse"`
		} `json:"parts"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil, nil, true
	}
	switch shape {
	case chatadapter.OpenAIResponses:
		switch m.Type {
		case "function_call":
			return []string{m.CallID}, nil, false
		case "function_call_output":
			return nil, []string{m.CallID}, false
		}
		return nil, nil, m.Role == "user" || m.Role == "system" || m.Role == "developer"
	case chatadapter.Anthropic:
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
	case chatadapter.Gemini:
		for _, p := range m.Parts {
			if fc := p.FunctionCall; fc != nil {
				calls = append(calls, geminiKey(fc.ID, fc.Name))
			}
			if fr := p.FunctionResponse; fr != nil {
				results = append(results, geminiKey(fr.ID, fr.Name))
			}
		}
		return calls, results, len(results) == 0
	}
	if m.Role == "tool" {
		return nil, []string{m.ToolCallID}, false
	}
	for _, c := range m.ToolCalls {
		calls = append(calls, c.ID)
	}
	return calls, nil, true
}

func geminiKey(id, name string) string {
	if id != "" {
		return id
	}
	return name
}
