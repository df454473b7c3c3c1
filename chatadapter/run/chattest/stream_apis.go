package chattest

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/llmtool/llmtool/chatadapter"
)

// geminiStreamPath is where Gemini streams: streamGenerateContent, in
// server-sent events with alt=sse, else as a JSON array.
const geminiStreamPath = "/v1beta/models/" + Model + ":streamGenerateContent"

// pieces cuts s in argPiece bytes, so that the client has to put them
// together.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		k := min(argPiece, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// streamAnthropic streams as Anthropic Messages does: message_start with
// the input's usage, each content block (a text block a word at a time, a
// tool_use block's input in pieces of JSON), a ping, message_delta with
// the stop_reason and the output's usage, then message_stop.
func streamAnthropic(e *events, n int, rep Reply) {
	send := func(v map[string]any) { e.send(v["type"].(string), v) }
	msg := response(chatadapter.Anthropic, n, rep)
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

// streamResponses streams as OpenAI Responses does: response.created,
// each output item added, its text a word at a time or its arguments in
// pieces, done, then the whole response in response.completed (or
// response.incomplete).
func streamResponses(e *events, n int, rep Reply) {
	seq := 0
	send := func(v map[string]any) {
		v["sequence_number"] = seq
		seq++
		e.send(v["type"].(string), v)
	}
	final := responsesResponse(n, rep)
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

// streamGemini streams as Gemini does: GenerateContentResponse chunks,
// the text a word at a time, the function calls whole, the last chunk
// with the finishReason and the whole usage.
func streamGemini(e *events, n int, rep Reply) {
	whole := response(chatadapter.Gemini, n, rep)
	cand := whole["candidates"].([]any)[0].(map[string]any)
	parts := cand["content"].(map[string]any)["parts"].([]any)
	u := rep.Usage
	chunk := func(parts []any, last bool) {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": orEmpty(parts)}, "index": 0}
		usage := map[string]any{"promptTokenCount": u.PromptTokens, "totalTokenCount": u.PromptTokens}
		if last {
			c["finishReason"] = cand["finishReason"]
			usage = whole["usageMetadata"].(map[string]any)
		}
		e.send("", map[string]any{"candidates": []any{c}, "usageMetadata": usage, "modelVersion": Model, "responseId": fmt.Sprintf("resp-%d", n)})
	}
	var calls []any
	for _, p := range parts {
		if _, ok := p.(map[string]any)["text"]; !ok {
			calls = append(calls, p)
		}
	}
	ws := words(rep.Text)
	for i, w := range ws {
		chunk([]any{map[string]any{"text": w}}, i == len(ws)-1 && calls == nil)
	}
	if calls != nil || len(ws) == 0 {
		chunk(calls, true)
	}
}
