package chatadapter

import (
	"bytes"
	"encoding/json"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// Anthropic Messages: tools as {"name","description","input_schema"},
// tool_use content blocks, tool_result blocks with is_error in one user
// message, and Anthropic's BM25 tool search tool.
type anthropic struct{}

func (anthropic) definition(name, desc json.RawMessage, params any, _ bool) object {
	return object{{"name", name}, {"description", desc}, {"input_schema", params}}
}

func (anthropic) parameters(_ *converter, schema []byte, _ bool) (any, error) {
	return json.RawMessage(schema), nil
}

func (anthropic) tools(defs []any) any { return defs }

func (anthropic) forms() string { return `a message or its content array` }

// searchTool is the variant that takes words, as find_tools does
// (Anthropic's other variant takes regular expressions); it needs the
// beta header while it is in beta.
func (anthropic) searchTool() (json.RawMessage, string, string) {
	return json.RawMessage(`{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`), "tool_search_tool_bm25",
		"advanced-tool-use-2025-11-20"
}

func (anthropic) parse(turn []byte) ([]ToolCall, error) { return parseAnthropic(turn) }

func (anthropic) results(outcomes []Outcome) []json.RawMessage {
	shape := Anthropic
	blocks := make([]any, len(outcomes))
	for i, o := range outcomes {
		// Content as blocks, as the SDKs send it (a string is accepted
		// too, but the Go SDK's type has no such variant).
		var content any = []any{textPart("text", textOf(o.Result, shape))}
		if rich(o.Result) {
			content = anthropicParts(o.Result.Content, inResults)
		}
		blocks[i] = object{
			{"type", json.RawMessage(`"tool_result"`)},
			{"tool_use_id", o.Call.ID},
			{"content", content},
			{"is_error", o.Result.IsError},
		}
	}
	return []json.RawMessage{ordered.Append(nil, object{{"role", json.RawMessage(`"user"`)}, {"content", blocks}})}
}

func (anthropic) message(role string, parts []llmtool.Content) json.RawMessage {
	where := role + " messages"
	user := role == "user"
	var content []any
	if user {
		content = anthropicParts(parts, where)
	} else {
		for _, p := range parts {
			content = append(content, textPart("text", richText([]llmtool.Content{p}, Anthropic, where)))
		}
	}
	return ordered.Append(nil, object{{"role", role}, {"content", content}})
}

func parseAnthropic(turn []byte) ([]ToolCall, error) {
	type block struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	var blocks []block
	if turn[0] == '[' {
		if err := json.Unmarshal(turn, &blocks); err != nil {
			return nil, err
		}
	} else {
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(turn, &m); err != nil {
			return nil, err
		}
		c := bytes.TrimSpace(m.Content)
		if len(c) == 0 || c[0] != '[' {
			return nil, nil // no content, or plain text
		}
		if err := json.Unmarshal(c, &blocks); err != nil {
			return nil, err
		}
	}
	var calls []ToolCall
	for _, b := range blocks {
		if b.Type == "tool_use" {
			calls = append(calls, ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
		}
	}
	return calls, nil
}

var anthropicImages = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// anthropicParts renders parts as a tool_result's content blocks (where is
// inResults), or a user message's.
func anthropicParts(parts []llmtool.Content, where string) []any {
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		src := func() object {
			return object{{"type", json.RawMessage(`"base64"`)}, {"media_type", p.MIMEType}, {"data", p.Data}}
		}
		switch {
		case p.Data != nil && anthropicImages[p.MIMEType]:
			out = append(out, object{{"type", json.RawMessage(`"image"`)}, {"source", src()}})
		case p.Data != nil && p.MIMEType == "application/pdf":
			out = append(out, object{{"type", json.RawMessage(`"document"`)}, {"source", src()}})
		default:
			out = append(out, textPart("text", richText([]llmtool.Content{p}, Anthropic, where)))
		}
	}
	return out
}
