package llmtool

import (
	"encoding/json"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
)

// Call is one tool call, as an adapter received it.
type Call struct {
	// Tool is the tool's name.
	Tool string
	// Args are the arguments as sent by the model. Missing, null, "" and
	// {} all mean no arguments; an object sent as a JSON-encoded string is
	// accepted.
	Args json.RawMessage
	// Resource, set instead of Tool, reads the resource at this URI (see
	// Resource): the registry finds the resource whose URI or URI template
	// matches and calls it with the template's variables as arguments.
	// Args is not used.
	Resource string
	// Prompt, set instead of Tool, renders the named prompt (see Prompt)
	// with Args.
	Prompt string
	// DryRun runs a write tool's call in its transaction and rolls it
	// back: the Result carries the Preview of what it would change (and
	// JSON {"dryRun": true, "result": ..., "changes": [...]}). Nothing is
	// saved, whatever the tool.
	DryRun bool
	// Approval answers the approval.Request an earlier call with the same
	// tool and arguments returned: the call runs again and commits only if
	// its preview is the one approved; a denial saves nothing.
	Approval *approval.Answer
	// OutputBudget bounds the result to this many bytes of JSON for the
	// consumer that makes the call, such as a chat whose model has a small
	// context window: adapters set it from their own OutputBudget option.
	// It lowers the tool's budget (OutputBudget), never raises it, and
	// bounds a tool without one; 0 means none.
	OutputBudget int
	// Conversation names the conversation or session the call belongs
	// to, recorded with its changeset (Options.Changesets) so that a
	// conversation's changes can be listed and undone together. Adapters
	// set it: chatadapter from the conversation, mcpadapter from the MCP
	// session.
	Conversation string
	// Locale is the person's locale, such as "de", in which the call
	// describes the rows it changes (changeset.Row.Text) to a person:
	// an approval's question, the Result's Changeset, the history.
	// Adapters set it: chatadapter from the context's locale. Empty
	// means English.
	Locale string
}

// target returns the name and the kind of definition the call is for.
func (c *Call) target() (string, toolKind) {
	switch {
	case c.Resource != "":
		return c.Resource, kindResource
	case c.Prompt != "":
		return c.Prompt, kindPrompt
	}
	return c.Tool, kindTool
}

// Result is the outcome of a call, ready for an adapter to send.
type Result struct {
	// JSON is the tool's output on success and {"error": "..."} on failure.
	// A success never has an "error" property.
	JSON []byte
	// IsError reports a failed call.
	IsError bool
	// Err is the error behind a failed call; errors.Is and errors.As work on
	// it (ErrUnknownTool, ErrToolDisabled, *Error, *panicError, context
	// errors).
	Err error
	// Content holds the parts of a rich result, when the tool's Out is
	// Rich (and of a resource); nil otherwise. JSON holds the same parts.
	Content []Content
	// Messages holds a rendered prompt's messages (Call.Prompt); nil
	// otherwise. JSON holds them too, as {"messages": [...]}.
	Messages []Message
	// Preview is what a dry run (Call.DryRun) or a call needing approval
	// would change; nil otherwise.
	Preview *approval.Preview
	// Approval asks a person to approve the change Preview shows, when the
	// call needs approval (first, or again because the data changed since
	// the approval): the call failed with approval.ErrRequired and nothing
	// was saved. Send Approval.Token back in Call.Approval.
	Approval *approval.Request
	// Changeset is what a committed write call changed in the tables the
	// host tracks (Options.Changesets), with its ID in the history, which
	// the tool undo_changes takes; nil for a read, a call that changed no
	// tracked row, or one that did not commit.
	Changeset *changeset.Set

	msg string // the rendered error message
}

// Text returns the message the model sees: the error text for a failed
// call, the JSON for a successful one.
func (r Result) Text() string {
	if r.IsError {
		return r.msg
	}
	return string(r.JSON)
}
