package chatadapter

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// OpenAI Responses: flat function tools with "strict", function_call
// output items, one function_call_output item per result (with content
// parts for a rich result), and OpenAI's own tool search tool.
type openAIResponses struct{}

func (openAIResponses) definition(name, desc json.RawMessage, params any, strict bool) object {
	return object{{"type", json.RawMessage(`"function"`)}, {"name", name}, {"description", desc}, {"parameters", params},
		{"strict", json.RawMessage(fmt.Sprint(strict))}}
}

func (openAIResponses) parameters(c *converter, schema []byte, strict bool) (any, error) {
	return openAIChat{}.parameters(c, schema, strict)
}

func (openAIResponses) tools(defs []any) any { return defs }

func (openAIResponses) forms() string { return `a response, its output array or a function_call item` }

// searchTool is {"type":"tool_search"}, searched by OpenAI's servers.
func (openAIResponses) searchTool() (json.RawMessage, string, string) {
	return json.RawMessage(`{"type":"tool_search"}`), "tool_search", ""
}

func (openAIResponses) parse(turn []byte) ([]ToolCall, error) { return parseResponses(turn) }

func (openAIResponses) results(outcomes []Outcome) []json.RawMessage {
	shape := OpenAIResponses
	msgs := make([]json.RawMessage, len(outcomes))
	for i, o := range outcomes {
		var output any = textOf(o.Result, shape)
		if rich(o.Result) {
			output = responsesParts(o.Result.Content, inResults)
		}
		msgs[i] = ordered.Append(nil, object{
			{"type", json.RawMessage(`"function_call_output"`)},
			{"call_id", o.Call.ID},
			{"output", output},
		})
	}
	return msgs
}

func (openAIResponses) message(role string, parts []llmtool.Content) json.RawMessage {
	where := role + " messages"
	var content any = richText(parts, OpenAIResponses, where)
	if role == "user" && !allText(parts) {
		content = responsesParts(parts, where)
	}
	return ordered.Append(nil, object{{"role", role}, {"content", content}})
}

func parseResponses(turn []byte) ([]ToolCall, error) {
	type item struct {
		Type      string          `json:"type"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var items []item
	if turn[0] == '[' {
		if err := json.Unmarshal(turn, &items); err != nil {
			return nil, err
		}
	} else {
		var r struct {
			item
			Output *[]item `json:"output"`
		}
		if err := json.Unmarshal(turn, &r); err != nil {
			return nil, err
		}
		if r.Output != nil {
			items = *r.Output
		} else {
			items = []item{r.item}
		}
	}
	var calls []ToolCall
	for _, it := range items {
		if it.Type == "function_call" {
			calls = append(calls, ToolCall{ID: it.CallID, Name: it.Name, Args: openAIArgs(it.Arguments)})
		}
	}
	return calls, nil
}

// responsesParts renders parts as a function_call_output's output list
// (where is inResults), or a user message's content list.
func responsesParts(parts []llmtool.Content, where string) []any {
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Type == "image" && p.Data != nil:
			out = append(out, object{{"type", json.RawMessage(`"input_image"`)}, {"image_url", dataURL(p)}})
		case p.Data != nil && p.MIMEType == "application/pdf":
			out = append(out, object{{"type", json.RawMessage(`"input_file"`)}, {"filename", fileName(p)}, {"file_data", dataURL(p)}})
		default:
			out = append(out, textPart("input_text", richText([]llmtool.Content{p}, OpenAIResponses, where)))
		}
	}
	return out
}

func fileName(p llmtool.Content) string {
	if i := strings.LastIndexByte(p.URI, '/'); i >= 0 && i < len(p.URI)-1 {
		return p.URI[i+1:]
	}
	return "file.pdf"
}
