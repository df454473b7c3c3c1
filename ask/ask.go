// Package ask lets a tool's handler ask the client that called it for two
// things while it runs: a completion from the client's model (Sample) and
// an answer from the client's user (Elicit). Over MCP they become
// sampling/createMessage and elicitation/create requests; an adapter
// installs an Asker per call with With, and a call without one gets
// ErrUnsupported.
//
// Both are refused inside a write tool, whose transaction holds the
// database's only writer while the client answers: ask in a read tool,
// then call the write tool with the answer.
package ask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/callinfo"
)

// ErrUnsupported is wrapped by the error of Sample or Elicit when the
// caller cannot answer: the adapter installed no Asker, or the client did
// not declare the capability.
var ErrUnsupported = errors.New("ask: the client cannot answer this request")

// ErrInWrite is wrapped by the error of Sample or Elicit called from a
// write tool or one of its guards.
var ErrInWrite = errors.New("ask: sampling and elicitation are refused inside a write transaction")

// Asker sends a handler's requests to the client that made the call.
// Adapters install one per call with With; handlers reach it through
// Sample and Elicit. Implementations wrap ErrUnsupported when the client
// lacks the capability.
type Asker interface {
	Sample(ctx context.Context, req SampleRequest) (SampleResult, error)
	Elicit(ctx context.Context, req ElicitRequest) (ElicitResult, error)
}

type askerKey struct{}

// With returns a context whose calls send sampling and elicitation
// requests to a.
func With(ctx context.Context, a Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, a)
}

// SampleMessage is one message of a sampling conversation. Content is a
// text, image or audio part (see llmtool.TextContent, ImageContent, AudioContent).
type SampleMessage struct {
	Role    string          // "user" or "assistant"
	Content llmtool.Content // the message's one part
}

// SampleRequest asks the client's model for a completion.
type SampleRequest struct {
	// Messages is the conversation so far, oldest first.
	Messages []SampleMessage
	// SystemPrompt is an optional system prompt; the client may ignore it.
	SystemPrompt string
	// MaxTokens bounds the completion's length. Zero means 1000.
	MaxTokens int
	// Temperature is the sampling temperature; zero leaves it to the client.
	Temperature float64
	// ModelHints name preferred models, best first ("claude-3-5-sonnet",
	// "gpt-4o"); the client decides.
	ModelHints []string
}

// SampleResult is the client model's reply.
type SampleResult struct {
	Role       string          // "assistant"
	Content    llmtool.Content // the reply, usually a text part
	Model      string          // the model the client used
	StopReason string          // such as "endTurn" or "maxTokens", if known
}

// ElicitRequest asks the client's user for structured input.
type ElicitRequest struct {
	// Message tells the user what is asked and why.
	Message string
	// Schema is the JSON Schema of the answer: an object whose properties
	// are strings, numbers, integers, booleans or enums (the subset MCP
	// clients render as a form). It is sent verbatim, so keywords such as
	// "default", "oneOf" titles and "enumNames" reach the client.
	Schema json.RawMessage
}

// Actions an elicitation can end with.
const (
	Accept  = "accept"  // the user answered; Content holds the answer
	Decline = "decline" // the user refused to answer
	Cancel  = "cancel"  // the user dismissed the request
)

// ElicitResult is the user's answer.
type ElicitResult struct {
	// Action is Accept, Decline or Cancel.
	Action string
	// Content is the answer as a JSON object when Action is Accept,
	// nil otherwise. Decode it with json.Unmarshal.
	Content json.RawMessage
}

// Sample asks the client's model for a completion, as MCP sampling. It
// blocks until the client answers or the call's context ends. It returns an
// error wrapping ErrInWrite inside a write tool (c is the WriteCtx's
// ReadCtx, or a guard's), and one wrapping ErrUnsupported when the client
// cannot sample.
func Sample(c *llmtool.ReadCtx, req SampleRequest) (SampleResult, error) {
	a, info, err := asker(c, "Sample")
	if err != nil {
		return SampleResult{}, err
	}
	if len(req.Messages) == 0 {
		return SampleResult{}, fmt.Errorf("llmtool: tool %s: Sample needs at least one message", info.Tool)
	}
	if req.MaxTokens <= 0 {
		req.MaxTokens = 1000
	}
	res, err := a.Sample(c, req)
	if err != nil {
		return SampleResult{}, fmt.Errorf("llmtool: tool %s: sampling: %w", info.Tool, err)
	}
	return res, nil
}

// Elicit asks the client's user for input, as MCP elicitation. It blocks
// until the user answers or the call's context ends; the result's Action
// says whether the user answered. It returns an error wrapping ErrInWrite
// inside a write tool, and one wrapping ErrUnsupported when the client
// cannot elicit.
func Elicit(c *llmtool.ReadCtx, req ElicitRequest) (ElicitResult, error) {
	a, info, err := asker(c, "Elicit")
	if err != nil {
		return ElicitResult{}, err
	}
	if len(req.Schema) == 0 {
		req.Schema = json.RawMessage(`{"type":"object","properties":{}}`)
	} else if !json.Valid(req.Schema) {
		return ElicitResult{}, fmt.Errorf("llmtool: tool %s: Elicit: the schema is not valid JSON", info.Tool)
	}
	res, err := a.Elicit(c, req)
	if err != nil {
		return ElicitResult{}, fmt.Errorf("llmtool: tool %s: elicitation: %w", info.Tool, err)
	}
	return res, nil
}

// asker returns the call's Asker, refusing inside a write transaction and
// after the handler returned.
func asker(c *llmtool.ReadCtx, op string) (Asker, callinfo.Info, error) {
	info, _ := c.Value(callinfo.Key{}).(callinfo.Info)
	if info.Late != nil {
		return nil, info, info.Late(op)
	}
	if info.Write {
		return nil, info, fmt.Errorf("llmtool: tool %s: %s inside a write tool would hold the database's only writer while the client answers; ask from a read tool first, then call the write tool with the answer: %w", info.Tool, op, ErrInWrite)
	}
	a, _ := c.Value(askerKey{}).(Asker)
	if a == nil {
		return nil, info, fmt.Errorf("llmtool: tool %s: %s: the adapter serving this call cannot reach its client: %w", info.Tool, op, ErrUnsupported)
	}
	return a, info, nil
}
