package chatadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/ask"
)

// Pending is a call of a turn that waits for the person, in one of two
// ways:
//
//   - for their approval before it commits (llmtool.NeedsApproval,
//     Registry.Tenants().SetApproval): the registry ran it, recorded what
//     it would change (Preview, Summary), and rolled it back;
//   - for their answer to the tool's question (ask.Elicit; Question is
//     set): the call ended to ask, rolled back if it wrote, and runs again,
//     from the start, with the answer.
//
// Show the person Prompt (or FriendlyName with the Preview in detail, or
// the Question's form), then resume the turn with their answer:
// Pending.Resume, or package run's Runner.Resume, which goes on with the
// run after it. It is the one pause of a turn, whether Dispatch or Run
// paused it: json.Marshal saves it with its turn, and Adapter.Restore
// reads it back, in this process or another.
type Pending struct {
	Index        int      `json:"index"`        // the call's position in its turn
	Call         ToolCall `json:"call"`         // the call as the model asked for it
	FriendlyName string   `json:"friendlyName"` // the tool's label in the context's locale, such as "Delete note"
	// Prompt is the line to show the person, in the context's locale:
	// `Delete note asks to make this change: Delete note "Plans". (notes:
	// 1 deleted). Approve it?`, or "Find note asks: Which one do you
	// mean?".
	Prompt string `json:"prompt"`

	// Question is what the tool asks (ask.Elicit), its Key the one the
	// call asked under ("elicit-1", "elicit-2"... in the order it asked,
	// when it named none); nil when the call waits for
	// approval.
	Question *ask.ElicitRequest `json:"question,omitempty"`

	// The approval's fields; zero for a question.

	Preview approval.Preview `json:"preview"` // the call's result and the rows it would change per table
	// Summary is the Preview in one line in the context's locale; in
	// English Preview.String(), such as `Delete note "Plans" and its 2
	// child notes. (notes: 3 deleted)`.
	Summary string `json:"summary,omitempty"`
	// Token is what Resume sends back with the answer (approval.Answer);
	// a host that keeps pending calls itself can send it in
	// llmtool.Call.Approval with the same tool and arguments. It is
	// single-use and bound to the principal, tenant, tool and arguments.
	Token string `json:"token,omitempty"`
	// Expires is when the token runs out; an answer after it saves
	// nothing, and the model reads that it should call the tool again.
	Expires time.Time `json:"expires"`

	hold *paused // its turn; nil in a copy (Event.Pending)
}

// ErrNotPending is returned by Pending.Resume (and package run's
// Runner.Resume) when no call waits for the person there: Pending is nil
// or a copy (Event.Pending), or it was resumed already (each pause is
// answered once).
var ErrNotPending = errors.New("chatadapter: no call waits for the person here (Pending is nil, or it was resumed already)")

// paused is a Pending call's hold on its turn, spent by the first Resume.
type paused struct {
	turn *turn
	at   int // the pending call's index
	done atomic.Bool
}

func (a *Adapter) approvalPending(index int, c ToolCall, name, locale string, req *approval.Request) *Pending {
	summary := previewLine(a.msgs, locale, req.Preview)
	return &Pending{
		Index:        index,
		Call:         c,
		FriendlyName: name,
		Prompt:       a.msgs.Message(keyApproval, locale, "tool", name, "summary", summary),
		Preview:      req.Preview,
		Summary:      summary,
		Token:        req.Token,
		Expires:      req.Expires,
	}
}

func (a *Adapter) questionPending(index int, c ToolCall, name, locale string, q *ask.ElicitRequest) *Pending {
	text, ok := a.msgs.Lookup(questionKey(c.Name, q.Key), locale)
	if !ok {
		text = q.Message
	}
	return &Pending{
		Index:        index,
		Call:         c,
		FriendlyName: name,
		Prompt:       a.msgs.Message(keyQuestion, locale, "tool", name, "question", text),
		Question:     q,
	}
}

// Resume answers the pending call with the person's answer and goes
// on with the turn, returning the reply that follows; ctx carries the
// same tenant and principal as Dispatch's (an approval token is bound to
// them), and its events (WithEvents) are reported as in Dispatch.
//
// For an approval, the call runs again through Registry.Invoke with the
// answer (llmtool.Call.Approval):
//
//   - approved, and its preview unchanged: it commits, and the calls after
//     it run, as Dispatch runs them, until the turn completes (Messages
//     holds a result for every call) or another call waits (Pending);
//   - approved, but the data changed since the preview: nothing is saved,
//     and the new reply's Pending is the same call with its new preview
//     and token, for the person to decide again;
//   - denied: nothing is saved, and the call's result tells the model
//     "The user denied this change. Nothing was saved. Ask the user what
//     to do instead."; the calls after it run, as after any failed call;
//   - an expired token saves nothing either, and its result tells the
//     model to call the tool again.
//
// For a question, the call runs again from the start, and its
// ask.Elicit returns answer: Action ask.Accept with Content, the filled
// form as a JSON object (empty: a confirmation), or ask.Decline or
// ask.Cancel. A call that asks again (a second question, or a question
// whose message changed) pauses the turn again; a write that then needs
// approval pauses it for that. For an approval, ask.Accept approves and
// any other Action denies.
//
// A person who leaves without answering has said no: resume with
// ask.Decline,
// so that every call of the turn has its result before the next request.
// Each pause is resumed once; Resume on nil, on a copy (Event.Pending),
// or a second time, returns ErrNotPending. It returns an error, and keeps
// the pause, for an answer with another Action, or with Accept and
// Content that is not a JSON object. When ctx ends meanwhile, Resume
// returns the reply with an error wrapping ctx.Err(), as Dispatch does.
func (p *Pending) Resume(ctx context.Context, answer ask.ElicitResult) (*Reply, error) {
	if err := checkAnswer(&answer); err != nil {
		return nil, err
	}
	if p == nil || p.hold == nil || !p.hold.done.CompareAndSwap(false, true) {
		return nil, ErrNotPending
	}
	h := p.hold
	t := h.turn
	t.lookup(ctx)
	obs := t.a.observer(ctx)
	st := &t.state[h.at]
	var approved *approval.Answer
	if st.token != "" {
		approved = &approval.Answer{Token: st.token, Approved: answer.Action == ask.Accept}
	} else {
		st.answers = append(st.answers, answered{Key: st.pending.Question.Key, Digest: st.digest, Action: answer.Action, Content: answer.Content})
	}
	st.pending, st.token, st.digest = nil, "", ""
	at := h.at
	if t.call(ctx, obs, at, approved, true); t.state[at].pending == nil {
		at = t.execute(ctx, obs, at+1, true)
	}
	return t.reply(at), cancelled(ctx, "resume")
}

// checkAnswer refuses an answer ask.Elicit could not return, and gives
// an accepted empty form its empty object.
func checkAnswer(a *ask.ElicitResult) error {
	switch a.Action {
	case ask.Accept:
		c := bytes.TrimSpace(a.Content)
		if len(c) == 0 {
			a.Content = json.RawMessage("{}")
		} else if c[0] != '{' || !json.Valid(c) {
			return fmt.Errorf("chatadapter: an accepted answer's Content must be a JSON object, the filled form; got %s", ordered.Excerpt(c, 80))
		}
	case ask.Decline, ask.Cancel:
		a.Content = nil
	default:
		return fmt.Errorf("chatadapter: an answer's Action is %q; use ask.Accept, ask.Decline or ask.Cancel", a.Action)
	}
	return nil
}
