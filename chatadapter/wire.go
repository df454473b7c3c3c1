package chatadapter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
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
	calls, err := formatOf(shape).parse(turn)
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
	return formatOf(shape).results(outcomes)
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
