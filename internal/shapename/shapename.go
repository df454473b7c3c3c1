// Package shapename holds the names of the shapes llmtool writes a
// catalog in: the chat providers' tools fields (chatadapter.Shape) and
// MCP's tools/list. A saved chat turn records its shape by this name
// (chatadapter's state.go) and the cost report and the llmtoolcost
// command take it (cost.Shapes), so the two cannot drift apart.
package shapename

// The names, one per shape.
const (
	OpenAIChat            = "openai-chat"
	OpenAIChatStrict      = "openai-chat-strict"
	OpenAIResponses       = "openai-responses"
	OpenAIResponsesStrict = "openai-responses-strict"
	Anthropic             = "anthropic"
	Gemini                = "gemini"
	MCP                   = "mcp"
)
