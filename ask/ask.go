// Package ask lets a tool's handler ask the client that called it for
// three things while it runs: a completion from the client's model
// (Sample), an answer from the client's user (Elicit) and the client's
// roots (Roots). An adapter installs an Asker per call with With, and a
// call without one gets ErrUnsupported.
//
// # Asking by running again
//
// mcpadapter's Asker answers by running the handler again (a Rerunner):
// this is MCP's input-required result (SEP-2322, protocol revision
// 2026-07-28), which mcpadapter also uses, through mcp-go, for clients of
// older revisions, sending them elicitation/create, sampling/createMessage
// and roots/list requests. On its first run a handler that asks gets an
// error wrapping ErrInputRequired. The call then fails whatever the
// handler returns, so its transaction rolls back and nothing commits; the
// client gets the questions, answers them, and the call runs again.
//
// On the next run the handler runs from the start, with the same
// arguments, principal and tenant, in a new transaction (a read tool sees a
// new snapshot; the first run of a write tool wrote nothing), and its
// guards run again. Each Elicit, Sample and Roots call returns the answer
// to the request it made on an earlier run: requests are matched by their
// Key (by default "elicit-1", "sample-1", "roots-1" and so on, counted per
// kind in call order within the run) and by their content, so a request
// whose message, schema or messages changed since it was answered is asked
// anew rather than answered with a stale answer. Answers of every earlier
// round are kept, so a handler can ask, use the answer, and ask again
// (each round is a run). A handler that asks several things before
// returning (continuing past ErrInputRequired) has them asked together in
// one round. A decline or a cancel is an answer too: Elicit returns it
// with its Action, and the handler decides.
//
// Because no transaction is held while a person answers, write tools may
// ask through a Rerunner. The handler must be deterministic up to its
// questions: whatever it did before asking is done again on the next run
// (inside the transaction that is harmless; outside it, use
// WriteCtx.AfterCommit).
//
// An Asker that waits for the answer while the handler runs (not a
// Rerunner) is refused inside a write tool, with ErrInWrite: its
// transaction would hold the database's writer while the client answers.
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

// ErrInWrite is wrapped by the error of Sample, Elicit or Roots called
// from a write tool or one of its guards when the call's Asker is not a
// Rerunner.
var ErrInWrite = errors.New("ask: sampling and elicitation are refused inside a write transaction")

// ErrInputRequired is wrapped by the error of Sample, Elicit or Roots when
// the Asker ends the call to ask the client, and runs the handler again
// with the answer (see Rerunner). The call fails whatever the handler
// returns afterwards: return the error, or carry on to ask more in the
// same round, but nothing the run writes is kept.
var ErrInputRequired = callinfo.ErrInputRequired

// Asker sends a handler's requests to the client that made the call.
// Adapters install one per call with With; handlers reach it through
// Sample and Elicit. Implementations wrap ErrUnsupported when the client
// lacks the capability, and ErrInputRequired when they will answer on the
// handler's next run.
type Asker interface {
	// Sample asks the client's model for a completion.
	Sample(ctx context.Context, req SampleRequest) (SampleResult, error)
	// Elicit asks the client's user for input.
	Elicit(ctx context.Context, req ElicitRequest) (ElicitResult, error)
}

// Rerunner is an Asker that never waits for the client while the handler
// runs: it answers a request it has no answer for yet with an error
// wrapping ErrInputRequired, the call ends, and the handler runs again, in
// a new transaction, once the client answered. Write tools may ask
// through a Rerunner.
type Rerunner interface {
	Asker
	// Reruns reports whether this Asker answers by running the handler
	// again; an Asker that returns false is treated as waiting.
	Reruns() bool
}

// rootLister is an Asker that can also ask the client for its roots (MCP
// roots/list), with a method Roots(ctx, RootsRequest) ([]Root, error).
// Roots returns ErrUnsupported for an Asker without it.
type rootLister interface {
	Asker
	// Roots asks the client for its roots.
	Roots(ctx context.Context, req RootsRequest) ([]Root, error)
}

// Root is a directory or file the client exposes to the server, as MCP
// roots/list gives it.
type Root struct {
	URI  string // a file:// URI
	Name string // a human-readable name; may be empty
}

// RootsRequest asks the client for its roots.
type RootsRequest struct {
	// Key names the request among the call's requests (see ElicitRequest.Key);
	// empty means "roots-N", N counting Roots calls in the run.
	Key string
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
	// Key names the request among the call's requests: the client answers
	// it under this key in an input-required round, and the next run gets
	// that answer. Empty means "sample-N", N counting Sample calls in the
	// run. Keys must be unique within a call.
	Key string
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
	// Key names the request among the call's requests: the client answers
	// it under this key in an input-required round, and the next run gets
	// that answer. Empty means "elicit-N", N counting Elicit calls in the
	// run. Keys must be unique within a call.
	Key string `json:"key"`
	// Message tells the user what is asked and why.
	Message string `json:"message"`
	// Schema is the JSON Schema of the answer: an object whose properties
	// are strings, numbers, integers, booleans or enums (the subset MCP
	// clients render as a form; a choice is a property with "enum", or
	// "oneOf" of {"const","title"}; {"type":"object","properties":{}}
	// asks for a confirmation). It is sent verbatim, so keywords such as
	// "default", "oneOf" titles and "enumNames" reach the client.
	Schema json.RawMessage `json:"schema"`
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

// Sample asks the client's model for a completion, as MCP sampling. With a
// Rerunner it returns the answer of an earlier run, or an error wrapping
// ErrInputRequired; otherwise it blocks until the client answers or the
// call's context ends. It returns an error wrapping ErrInWrite inside a
// write tool (c is the WriteCtx's ReadCtx, or a guard's) when the Asker
// would block, and one wrapping ErrUnsupported when the client cannot
// sample.
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
		return SampleResult{}, failed(info, fmt.Errorf("llmtool: tool %s: sampling: %w", info.Tool, err))
	}
	return res, nil
}

// Elicit asks the client's user for input, as MCP elicitation; the
// result's Action says whether the user answered. With a Rerunner it
// returns the answer of an earlier run, or an error wrapping
// ErrInputRequired; otherwise it blocks until the user answers or the
// call's context ends. It returns an error wrapping ErrInWrite inside a
// write tool when the Asker would block, and one wrapping ErrUnsupported
// when the client cannot elicit.
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
		return ElicitResult{}, failed(info, fmt.Errorf("llmtool: tool %s: elicitation: %w", info.Tool, err))
	}
	return res, nil
}

// Roots asks the client for its roots, as MCP roots/list. With a Rerunner
// it returns the answer of an earlier run, or an error wrapping
// ErrInputRequired. It returns an error wrapping ErrUnsupported when the
// Asker has no Roots method or the client has no roots capability, and
// one wrapping ErrInWrite inside a write tool when the Asker would block.
func Roots(c *llmtool.ReadCtx, req RootsRequest) ([]Root, error) {
	a, info, err := asker(c, "Roots")
	if err != nil {
		return nil, err
	}
	rl, ok := a.(rootLister)
	if !ok {
		return nil, fmt.Errorf("llmtool: tool %s: Roots: the adapter serving this call cannot ask for roots: %w", info.Tool, ErrUnsupported)
	}
	roots, err := rl.Roots(c, req)
	if err != nil {
		return nil, failed(info, fmt.Errorf("llmtool: tool %s: roots: %w", info.Tool, err))
	}
	return roots, nil
}

// failed makes an ErrInputRequired the call's outcome, whatever the
// handler returns, and returns err.
func failed(info callinfo.Info, err error) error {
	if errors.Is(err, ErrInputRequired) && info.Fail != nil {
		info.Fail(err)
	}
	return err
}

// asker returns the call's Asker, refusing after the handler returned,
// and inside a write transaction unless the Asker reruns the handler.
func asker(c *llmtool.ReadCtx, op string) (Asker, callinfo.Info, error) {
	info, _ := c.Value(callinfo.Key{}).(callinfo.Info)
	if info.Late != nil {
		return nil, info, info.Late(op)
	}
	a, _ := c.Value(askerKey{}).(Asker)
	if info.Write && !reruns(a) {
		return nil, info, fmt.Errorf("llmtool: tool %s: %s inside a write tool would hold the database's only writer while the client answers; ask from a read tool first, then call the write tool with the answer: %w", info.Tool, op, ErrInWrite)
	}
	if a == nil {
		return nil, info, fmt.Errorf("llmtool: tool %s: %s: the adapter serving this call cannot reach its client: %w", info.Tool, op, ErrUnsupported)
	}
	return a, info, nil
}

func reruns(a Asker) bool {
	r, ok := a.(Rerunner)
	return ok && r.Reruns()
}
