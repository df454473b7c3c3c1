package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/internal/replay"
	"github.com/llmtool/llmtool/internal/token"
)

// Approval through the client, as the package documentation describes
// it. The question is an elicitation under approvalAskKey, asked through
// the round machinery of mrtr.go (an input-required result under
// 2026-07-28; elicitation/create within the tools/call before), and the
// approval token travels in the sealed requestState. A stateless request
// of a revision before 2026-07-28 has no session to send the question on,
// so its client cannot ask its user either (canElicit).

// approvalAskKey is the key of the approval question among a call's
// requests; a tool's own requests cannot use it.
const approvalAskKey = "llmtool-approval"

// approvalSchema is the approval question's form: one boolean, unticked
// by default, so a client that submits the form untouched denies.
const approvalSchema = `{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve this change","description":"Tick to make the change; leave unticked to refuse it. Nothing is saved until you approve.","default":false}},"required":["approve"]}`

// maxResultInQuestion bounds the preview's result shown in the question.
const maxResultInQuestion = 300

// canElicit reports whether the client of this request can be asked for
// approval: it declared elicitation and can be reached.
func canElicit(ctx context.Context) bool {
	caps, known := requestCaps(ctx)
	return known && caps.Elicitation != nil && reachable(ctx, mcp.MethodElicitationCreate)
}

// approvalQuestion is the elicitation that asks the person to approve the
// change a call previewed: the tool, the preview's line, the rows it
// changes in tracked tables (llmtool.Options.Changesets), each in the
// host's words where an entity describes its table (changeset.Row.Text,
// llmtool.Entity.NameColumn), the result if it is short. changed says the
// data changed since an earlier approval.
func approvalQuestion(tool string, req *approval.Request, changed bool) mcp.InputRequest {
	change := strings.TrimSuffix(req.Preview.String(), ".") // a summary's own period ends the sentence
	msg := fmt.Sprintf("Tool %s asks to make this change: %s. Approve it?", tool, change)
	if changed {
		msg = fmt.Sprintf("The data changed since you approved, so nothing was saved. Tool %s now asks to make this change: %s. Approve it?", tool, change)
	}
	if cs := req.Preview.Changeset; cs != nil && len(cs.Rows) > 0 {
		msg += "\n\nThe rows it changes:\n" + cs.String()
	}
	if r := req.Preview.Result; len(r) > 0 && len(r) <= maxResultInQuestion && string(r) != "{}" && string(r) != "null" {
		msg += "\n\nIts result would be: " + string(r)
	}
	return mcp.NewElicitationInputRequest(mcp.ElicitationParams{Message: msg, RequestedSchema: json.RawMessage(approvalSchema)})
}

// askApproval adds the approval question of req to the round, whose
// state will carry req's token.
func (r *round) askApproval(tool string, req *approval.Request, changed bool) error {
	q := approvalQuestion(tool, req, changed)
	params, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("encoding the approval request: %w", err)
	}
	r.book.Add(replay.Asked[mcp.InputRequest]{Question: replay.Question{Key: approvalAskKey, Digest: token.Digest(params)}, Request: q})
	r.approval = req.Token
	return nil
}

// approvalAnswer returns the person's answer to the approval question the
// state asked, or nil when the retry brought none (a client of 2026-07-28
// that left it out is asked again). Only an accept whose content has
// approve true approves; anything else denies: a decline, a cancel,
// approve false, and an answer the adapter cannot read, such as an accept
// with empty or missing content (asking again would bring the same answer,
// and mcp-go's bridge asks a client before 2026-07-28 up to ten times).
func (r *round) approvalAnswer() *approval.Answer {
	if r.state == nil || r.state.Approval == "" {
		return nil
	}
	a, ok := r.book.Answer(approvalAskKey)
	if !ok {
		return nil
	}
	var res struct {
		Action  mcp.ElicitationResponseAction `json:"action"`
		Content struct {
			Approve bool `json:"approve"`
		} `json:"content"`
	}
	err := json.Unmarshal(a.Value, &res)
	return &approval.Answer{Token: r.state.Approval, Approved: err == nil && res.Action == mcp.ElicitationResponseActionAccept && res.Content.Approve}
}

// cannotAsk is the result for a call that needs approval from a client
// that cannot ask its user: the registry's sentence with the preview, and
// what to do, which the model cannot do for the user.
func cannotAsk(tool string, res llmtool.Result) *mcp.CallToolResult {
	msg := res.Text()
	var e *llmtool.Error
	if errors.As(res.Err, &e) {
		msg = e.Message
	}
	msg += " Nothing was saved. This client cannot ask the user for approval (it does not support MCP elicitation here), and an approval cannot come from the model: tell the user, who can make this change from an MCP client that asks for approval, or have approval of " + tool + " turned off for this tenant."
	return mcp.NewToolResultError(msg)
}
