// Package toolname checks tool names against every target llmtool serves.
package toolname

import (
	"fmt"
	"regexp"
)

var (
	openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	geminiName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)
	mcpName    = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)
)

// Validate reports whether name is a tool name every target accepts:
// MCP (1 to 128 of A-Z a-z 0-9 _ - .), OpenAI and Anthropic
// (^[a-zA-Z0-9_-]{1,64}$) and Gemini (a letter or underscore first). The
// error names the first target that refuses it.
func Validate(name string) error {
	switch {
	case !mcpName.MatchString(name):
		return fmt.Errorf("tool name %q is invalid for MCP (1 to 128 of A-Z a-z 0-9 _ - .); use lower_snake_case such as \"get_note\"", name)
	case !openAIName.MatchString(name):
		return fmt.Errorf("tool name %q is invalid for OpenAI and Anthropic (^[a-zA-Z0-9_-]{1,64}$); use lower_snake_case such as \"get_note\"", name)
	case !geminiName.MatchString(name):
		return fmt.Errorf("tool name %q is invalid for Gemini (must start with a letter or underscore); use lower_snake_case such as \"get_note\"", name)
	}
	return nil
}
