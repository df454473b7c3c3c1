// Package mcptool builds a tool's entry of an MCP tools/list: what
// mcpadapter lists and package cost counts, from one place.
package mcptool

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/llmtool/llmtool"
)

// Definition returns a tool's entry in a tools/list answer, as mcpadapter
// lists it: name, title, description, the input schema, the output schema
// (none for a tool with Rich output, which answers with content blocks),
// and the four annotations, all explicit. Package cost counts its tokens.
func Definition(spec *llmtool.Spec) (json.RawMessage, error) {
	b, err := json.Marshal(Tool(spec))
	if err != nil {
		return nil, fmt.Errorf("mcpadapter: tool %q: encoding its listing entry: %w", spec.Name, err)
	}
	return b, nil
}

// Tool builds a tool's MCP listing: title, schemas verbatim, and all four
// annotations explicit.
func Tool(sp *llmtool.Spec) mcp.Tool {
	t := mcp.Tool{
		Name:           sp.Name,
		Title:          sp.FriendlyName,
		Description:    sp.Description,
		RawInputSchema: sp.InputSchema,
		Annotations: mcp.ToolAnnotation{
			Title:           sp.FriendlyName,
			ReadOnlyHint:    mcp.ToBoolPtr(sp.ReadOnly),
			DestructiveHint: mcp.ToBoolPtr(sp.Destructive),
			IdempotentHint:  mcp.ToBoolPtr(sp.Idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(sp.OpenWorld),
		},
	}
	// A rich tool answers with content blocks, not structured content, so it
	// declares no output schema (which would oblige structuredContent).
	if !sp.Rich {
		t.RawOutputSchema = sp.OutputSchema
	}
	return t
}
