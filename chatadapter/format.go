package chatadapter

import (
	"encoding/json"

	"github.com/llmtool/llmtool"
)

// What each provider's format means to the projection, one file each
// (openai_chat.go, openai_responses.go, anthropic.go, gemini.go), behind
// format: a tool's definition, the request's tools value, reading the
// calls of a turn, the results' messages, a prompt's messages, and the
// provider's tool search tool. The strict shapes are options of the
// OpenAI formats (Shape.strict), not formats of their own. Adding a
// provider is one file with one format, its case in formatOf, and its
// Shape constant (package run has the other half: the provider's HTTP
// API, one file too).
type format interface {
	// definition is one tool's definition: its name and description as
	// JSON strings, its parameters' schema (nil: none), and whether the
	// schema is strict.
	definition(name, desc json.RawMessage, params any, strict bool) object
	// parameters is a tool's input schema as the format takes it (nil:
	// none), converted by c where the format needs it (strict mode,
	// Gemini's subset), or an *UnsupportedError.
	parameters(c *converter, schema []byte, strict bool) (any, error)
	// tools is the request's tools value holding the definitions.
	tools(defs []any) any
	// parse reads the calls of one turn (see Dispatch for its forms); a
	// turn without calls gives none.
	parse(turn []byte) ([]ToolCall, error)
	// results are the messages answering a turn's outcomes, at least one.
	results(outcomes []Outcome) []json.RawMessage
	// message is one prompt message of role ("user" or "assistant") made
	// of parts.
	message(role string, parts []llmtool.Content) json.RawMessage
	// searchTool is the provider's own tool search tool
	// (Options.ToolSearch), nil when it has none: its definition, its
	// name in ToolSet.Names, and the anthropic-beta header it needs
	// (ToolSet.Beta), "" if none.
	searchTool() (def json.RawMessage, name, beta string)
	// forms says what a turn may be, for the error of a turn in another
	// format.
	forms() string
}

// formatOf returns the format of shape (a strict shape's is its plain
// one's), nil for an unknown shape.
func formatOf(shape Shape) format {
	switch shape {
	case OpenAIChat, OpenAIChatStrict:
		return openAIChat{}
	case OpenAIResponses, OpenAIResponsesStrict:
		return openAIResponses{}
	case Anthropic:
		return anthropic{}
	case Gemini:
		return gemini{}
	}
	return nil
}
