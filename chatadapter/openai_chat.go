package chatadapter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// OpenAI Chat Completions, and every compatible server: tools as
// {"type":"function","function":{...}} ("strict": true in strict mode),
// calls in the assistant message's tool_calls with arguments as a JSON
// string, one {"role":"tool"} message per result, text-only results.
type openAIChat struct{}

func (openAIChat) definition(name, desc json.RawMessage, params any, strict bool) object {
	fn := object{{"name", name}, {"description", desc}, {"parameters", params}}
	if strict {
		fn = append(fn, member{"strict", json.RawMessage("true")})
	}
	return object{{"type", json.RawMessage(`"function"`)}, {"function", fn}}
}

// parameters are the schema as it is, or in strict mode closed, every
// property required and the optional ones nullable.
func (openAIChat) parameters(c *converter, schema []byte, strict bool) (any, error) {
	if !strict {
		return json.RawMessage(schema), nil
	}
	o, err := c.object(schema)
	if err != nil {
		return nil, err
	}
	return c.strict(o, "", 0)
}

func (openAIChat) tools(defs []any) any { return defs }

func (openAIChat) forms() string {
	return `a chat completion, its assistant message or its tool_calls array`
}

func (openAIChat) searchTool() (json.RawMessage, string, string) { return nil, "", "" }

func (openAIChat) parse(turn []byte) ([]ToolCall, error) { return parseOpenAIChat(turn) }

func (openAIChat) results(outcomes []Outcome) []json.RawMessage {
	shape := OpenAIChat
	msgs := make([]json.RawMessage, len(outcomes))
	for i, o := range outcomes {
		msgs[i] = ordered.Append(nil, object{
			{"role", json.RawMessage(`"tool"`)},
			{"tool_call_id", o.Call.ID},
			{"content", textOf(o.Result, shape)},
		})
	}
	return msgs
}

// message is a prompt's message: text, or for the person's the content
// parts Chat Completions takes.
func (openAIChat) message(role string, parts []llmtool.Content) json.RawMessage {
	where := role + " messages"
	var content any = richText(parts, OpenAIChat, where)
	if role == "user" && !allText(parts) {
		content = openAIChatParts(parts, where)
	}
	return ordered.Append(nil, object{{"role", role}, {"content", content}})
}

// openAIArgs turns OpenAI's arguments (a JSON string holding JSON; some
// compatible servers send the object itself) into the arguments' text.
func openAIArgs(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if s, ok := ordered.String(raw); ok {
		return json.RawMessage(s)
	}
	return raw
}

func parseOpenAIChat(turn []byte) ([]ToolCall, error) {
	type toolCall struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	var tcs []toolCall
	if turn[0] == '[' {
		if err := json.Unmarshal(turn, &tcs); err != nil {
			return nil, err
		}
	} else {
		var m struct {
			Choices []struct {
				Message json.RawMessage `json:"message"`
			} `json:"choices"`
			ToolCalls []toolCall `json:"tool_calls"`
		}
		if err := json.Unmarshal(turn, &m); err != nil {
			return nil, err
		}
		if len(m.Choices) > 0 {
			if len(m.Choices[0].Message) == 0 || m.Choices[0].Message[0] != '{' {
				return nil, fmt.Errorf("choices[0] has no message")
			}
			return parseOpenAIChat(m.Choices[0].Message)
		}
		tcs = m.ToolCalls
	}
	if len(tcs) == 0 {
		return nil, nil
	}
	calls := make([]ToolCall, len(tcs))
	for i, tc := range tcs {
		calls[i] = ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: openAIArgs(tc.Function.Arguments)}
	}
	return calls, nil
}

var openAIImages = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// openAIAudio maps the audio types Chat Completions takes to its format
// names.
var openAIAudio = map[string]string{"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}

// openAIChatParts renders parts as a Chat Completions user message's
// content list.
func openAIChatParts(parts []llmtool.Content, where string) []any {
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Data != nil && openAIImages[p.MIMEType]:
			out = append(out, object{{"type", json.RawMessage(`"image_url"`)}, {"image_url", object{{"url", dataURL(p)}}}})
		case p.Data != nil && p.MIMEType == "application/pdf":
			out = append(out, object{{"type", json.RawMessage(`"file"`)}, {"file", object{{"filename", fileName(p)}, {"file_data", dataURL(p)}}}})
		case p.Data != nil && openAIAudio[p.MIMEType] != "":
			out = append(out, object{{"type", json.RawMessage(`"input_audio"`)}, {"input_audio", object{
				{"data", base64.StdEncoding.EncodeToString(p.Data)}, {"format", openAIAudio[p.MIMEType]}}}})
		default:
			out = append(out, textPart("text", richText([]llmtool.Content{p}, OpenAIChat, where)))
		}
	}
	return out
}
