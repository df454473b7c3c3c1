package chatadapter

import (
	"context"
	"encoding/json"

	"github.com/llmtool/llmtool"
)

// What the tests reach below Dispatch: its three steps, one at a time.

// ParseCalls is parseCalls.
func ParseCalls(shape Shape, turn []byte) ([]ToolCall, error) { return parseCalls(shape, turn) }

// Render is render.
func Render(shape Shape, outcomes []Outcome) []json.RawMessage { return render(shape, outcomes) }

// Execute is execute: the calls run without waiting for a person.
func (a *Adapter) Execute(ctx context.Context, calls []ToolCall) []Outcome {
	return a.execute(ctx, calls)
}

// ToolSearchTool is toolSearchTool.
func ToolSearchTool(shape Shape) json.RawMessage { return toolSearchTool(shape) }

// Shapes is every shape, in declaration order.
func Shapes() []Shape {
	return []Shape{OpenAIChat, OpenAIChatStrict, OpenAIResponses, OpenAIResponsesStrict, Anthropic, Gemini}
}

// Registry is the registry a serves.
func (a *Adapter) Registry() *llmtool.Registry { return a.reg }
