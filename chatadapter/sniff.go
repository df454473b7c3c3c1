package chatadapter

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// shapeError is the error of Dispatch for a turn in another provider's
// format than the shape it was given, such as an Anthropic message
// dispatched as OpenAIChat: without it the turn would give no calls, and
// the mistake would show only when the provider refused the next
// request. It wraps ErrShape.
type shapeError struct {
	Want Shape  // the shape given
	Seen Shape  // the format the turn is in
	Sign string // what in the turn shows it, such as `a "tool_use" block`
}

func (e *shapeError) Unwrap() error { return ErrShape }

func (e *shapeError) Error() string {
	return fmt.Sprintf("chatadapter: the turn is in %s (%s), not %s: dispatch it with the shape of the API that answered; %s takes %s",
		e.Seen, e.Sign, e.Want.wire(), e.Want.wire(), formatOf(e.Want).forms())
}

// sniff tells which format turn is in from the members only that format
// has, and says which; it gives 0 when nothing tells, such as for
// {"role":"assistant","content":"Hi."}, which three formats share.
func sniff(turn []byte) (Shape, string) {
	turn = bytes.TrimSpace(turn)
	if len(turn) > 0 && turn[0] == '[' {
		var items []json.RawMessage
		if json.Unmarshal(turn, &items) != nil || len(items) == 0 {
			return 0, ""
		}
		return sniffItem(items[0])
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(turn, &m) != nil {
		return 0, ""
	}
	for _, k := range []struct {
		key   string
		shape Shape
	}{{"choices", OpenAIChat}, {"tool_calls", OpenAIChat}, {"output", OpenAIResponses}, {"stop_reason", Anthropic},
		{"candidates", Gemini}, {"parts", Gemini}} {
		if _, ok := m[k.key]; ok {
			return k.shape, fmt.Sprintf("its %q member", k.key)
		}
	}
	if _, ok := m["type"]; ok {
		return sniffItem(turn)
	}
	var blocks []json.RawMessage
	if json.Unmarshal(m["content"], &blocks) == nil {
		for _, b := range blocks {
			if s, sign := sniffItem(b); s == Anthropic || s == OpenAIResponses {
				return s, sign + " in its content"
			}
		}
	}
	return 0, ""
}

// sniffItem tells the format of one element of a turn's array.
func sniffItem(item []byte) (Shape, string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(item, &m) != nil {
		return 0, ""
	}
	if _, ok := m["function"]; ok {
		return OpenAIChat, `a "function" member`
	}
	for _, k := range []string{"functionCall", "functionResponse", "inlineData"} {
		if _, ok := m[k]; ok {
			return Gemini, fmt.Sprintf("a %q part", k)
		}
	}
	typ, _ := ordered.String(m["type"])
	switch typ {
	case "function_call", "function_call_output", "reasoning", "output_text":
		return OpenAIResponses, fmt.Sprintf("a %q item", typ)
	case "tool_use", "tool_result", "thinking", "server_tool_use":
		return Anthropic, fmt.Sprintf("a %q block", typ)
	case "message":
		// Both Anthropic's messages and Responses' message items say so;
		// their content blocks differ.
		var blocks []json.RawMessage
		if json.Unmarshal(m["content"], &blocks) == nil {
			for _, b := range blocks {
				if s, sign := sniffItem(b); s != 0 {
					return s, sign
				}
			}
		}
	}
	return 0, ""
}
