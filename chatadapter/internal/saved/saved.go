// Package saved is the saved form of a tool call's outcome, which
// chatadapter's paused turns and package run's transcripts share.
package saved

import (
	"encoding/json"
	"time"

	"github.com/llmtool/llmtool"
)

// Call is chatadapter.ToolCall's saved form: the same fields, so that
// each converts to the other.
type Call struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Outcome is a chatadapter.Outcome's saved form. A restored Result has
// the JSON, IsError and Content it had; its Err is nil.
type Outcome struct {
	Call     Call              `json:"call"`
	JSON     json.RawMessage   `json:"json"`
	IsError  bool              `json:"isError,omitempty"`
	Content  []llmtool.Content `json:"content,omitempty"`
	Duration time.Duration     `json:"duration,omitempty"`
}

// New is the saved form of a call's outcome.
func New(c Call, r llmtool.Result, d time.Duration) Outcome {
	return Outcome{Call: c, JSON: r.JSON, IsError: r.IsError, Content: r.Content, Duration: d}
}

// Result is the restored outcome's result.
func (s Outcome) Result() llmtool.Result {
	return llmtool.Result{JSON: s.JSON, IsError: s.IsError, Content: s.Content}
}
