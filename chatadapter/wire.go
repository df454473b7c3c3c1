package chatadapter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"slices"
	"strings"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/jsonenc"
)

// parseCalls extracts the tool calls of one model turn, in the model's
// order. See Dispatch for the forms turn may take. A turn without tool
// calls gives none and no error; a turn in another format than shape's
// wraps ErrShape.
func parseCalls(shape Shape, turn []byte) ([]ToolCall, error) {
	if !shape.valid() {
		return nil, fmt.Errorf("%w %d", ErrShape, shape)
	}
	turn = bytes.TrimSpace(turn)
	if len(turn) == 0 || (turn[0] != '{' && turn[0] != '[') {
		return nil, fmt.Errorf("chatadapter: %s turn: expected a JSON object or array", shape.wire())
	}
	var calls []ToolCall
	var err error
	switch shape.wire() {
	case OpenAIChat:
		calls, err = parseOpenAIChat(turn)
	case OpenAIResponses:
		calls, err = parseResponses(turn)
	case Anthropic:
		calls, err = parseAnthropic(turn)
	case Gemini:
		calls, err = parseGemini(turn)
	}
	// A turn of another format parses into no calls, or calls without a
	// name: only then is it worth telling the format.
	if len(calls) == 0 || slices.ContainsFunc(calls, func(c ToolCall) bool { return c.Name == "" }) || err != nil {
		if seen, sign := sniff(turn); seen != 0 && seen != shape.wire() {
			return nil, &shapeError{Want: shape, Seen: seen, Sign: sign}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("chatadapter: %s turn: %w", shape.wire(), err)
	}
	return calls, nil
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

func parseGemini(turn []byte) ([]ToolCall, error) {
	type part struct {
		FunctionCall *struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
	}
	var parts []part
	if turn[0] == '[' {
		if err := json.Unmarshal(turn, &parts); err != nil {
			return nil, err
		}
	} else {
		var r struct {
			Candidates []struct {
				Content struct {
					Parts []part `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
			Parts []part `json:"parts"`
		}
		if err := json.Unmarshal(turn, &r); err != nil {
			return nil, err
		}
		parts = r.Parts
		if len(r.Candidates) > 0 {
			parts = r.Candidates[0].Content.Parts
		}
	}
	var calls []ToolCall
	for _, p := range parts {
		if fc := p.FunctionCall; fc != nil {
			calls = append(calls, ToolCall{ID: fc.ID, Name: fc.Name, Args: fc.Args})
		}
	}
	return calls, nil
}

// render returns the outcomes' results as messages to append to the
// conversation, in shape's format (see Reply.Messages). A result's content
// is its JSON: the tool's output, or {"error": "..."} for a failed call
// (for Anthropic in one text block, with is_error set; for Gemini as the
// functionResponse's response object). A rich result (llmtool.Rich) becomes the
// provider's content parts where it has them: text and images for
// Anthropic, text, images and files for OpenAI Responses, inline data for
// Gemini; OpenAI Chat Completions takes text only, so other parts are
// named in a placeholder line.
func render(shape Shape, outcomes []Outcome) []json.RawMessage {
	if len(outcomes) == 0 {
		return nil
	}
	switch shape.wire() {
	case OpenAIChat:
		msgs := make([]json.RawMessage, len(outcomes))
		for i, o := range outcomes {
			msgs[i] = ordered.Append(nil, object{
				{"role", json.RawMessage(`"tool"`)},
				{"tool_call_id", o.Call.ID},
				{"content", textOf(o.Result, shape)},
			})
		}
		return msgs
	case OpenAIResponses:
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
	case Anthropic:
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
	case Gemini:
		parts := make([]any, len(outcomes))
		for i, o := range outcomes {
			fr := object{}
			if o.Call.ID != "" {
				fr = append(fr, member{"id", o.Call.ID})
			}
			fr = append(fr, member{"name", o.Call.Name})
			if rich(o.Result) {
				fr = append(fr, member{"response", object{{"output", richText(o.Result.Content, shape, inResults)}}})
				if media := geminiParts(o.Result.Content); len(media) > 0 {
					fr = append(fr, member{"parts", media})
				}
			} else {
				fr = append(fr, member{"response", json.RawMessage(resultJSON(o.Result))})
			}
			parts[i] = object{{"functionResponse", fr}}
		}
		return []json.RawMessage{ordered.Append(nil, object{{"role", json.RawMessage(`"user"`)}, {"parts", parts}})}
	}
	return nil
}

func rich(r llmtool.Result) bool { return !r.IsError && r.Content != nil }

// resultJSON is the result's JSON, never empty.
func resultJSON(r llmtool.Result) []byte {
	if len(r.JSON) == 0 {
		return []byte("{}")
	}
	return r.JSON
}

// textOf is a result as one string: its JSON, or a rich result's text.
func textOf(r llmtool.Result, shape Shape) string {
	if rich(r) {
		return richText(r.Content, shape, inResults)
	}
	return string(resultJSON(r))
}

// richText renders parts as text: text parts as they are, text resources
// under their URI, other parts as a placeholder line that names them and
// says the provider takes no such content where they are (inResults, or a
// role's messages for prompts).
func richText(parts []llmtool.Content, shape Shape, where string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		switch {
		case p.Type == "text":
			b.WriteString(p.Text)
		case p.Type == "resource" && p.Data == nil:
			fmt.Fprintf(&b, "[resource %s", p.URI)
			if p.MIMEType != "" {
				fmt.Fprintf(&b, " (%s)", p.MIMEType)
			}
			b.WriteString("]\n")
			b.WriteString(p.Text)
		default:
			b.WriteString(placeholder(p, shape, where))
		}
	}
	return b.String()
}

// inResults is where tool results' parts go, for placeholder.
const inResults = "tool results"

func placeholder(p llmtool.Content, shape Shape, where string) string {
	what := p.Type
	if p.URI != "" {
		what += " " + p.URI
	}
	mime := p.MIMEType
	if mime == "" {
		mime = "unknown type"
	}
	if shape == Gemini && p.Data != nil {
		return fmt.Sprintf("[%s (%s, %d bytes) attached]", what, mime, len(p.Data))
	}
	return fmt.Sprintf("[%s (%s, %d bytes) not shown: %s takes no such content in %s]", what, mime, len(p.Data), shape.wire(), where)
}

func dataURL(p llmtool.Content) string {
	return "data:" + p.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}

func textPart(typ, text string) object {
	return object{{"type", json.RawMessage(jsonenc.AppendString(nil, typ))}, {"text", text}}
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

// geminiParts renders the binary parts of a rich result as a
// functionResponse's inline data parts; richText names them in the output.
func geminiParts(parts []llmtool.Content) []any {
	var out []any
	for _, p := range parts {
		if p.Data != nil {
			out = append(out, object{{"inlineData", object{{"mimeType", p.MIMEType}, {"data", p.Data}}}})
		}
	}
	return out
}
