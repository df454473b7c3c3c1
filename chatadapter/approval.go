package chatadapter

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
)

// Pending is a call of a turn that waits for a person's approval before
// it commits (llmtool.NeedsApproval, Registry.Tenants().SetApproval): the registry
// ran it, recorded what it would change, and rolled it back. Show the
// person FriendlyName and Summary (or the Preview in detail), then resume
// the turn with their answer: Reply.Resume, or Transcript.Resume in Run.
type Pending struct {
	Index        int              // the call's position in its turn
	Call         ToolCall         // the call as the model asked for it
	FriendlyName string           // the tool's label in the context's locale, such as "Delete note"
	Preview      approval.Preview // the call's result and the rows it would change per table
	// Summary is Preview.String(), one line for the person, such as
	// `Delete note "Plans" and its 2 child notes. (notes: 3 deleted)`.
	Summary string
	// Token is what Resume sends back with the answer (approval.Answer);
	// a host that keeps pending calls itself can send it in
	// llmtool.Call.Approval with the same tool and arguments. It is
	// single-use and bound to the principal, tenant, tool and arguments.
	Token string
	// Expires is when the token runs out; an answer after it saves
	// nothing, and the model reads that it should call the tool again.
	Expires time.Time
}

// ErrNotPending is returned by Reply.Resume and Transcript.Resume when no
// call waits for approval there: Pending is nil, or the reply was resumed
// already (each pause is answered once).
var ErrNotPending = errors.New("chatadapter: no call waits for approval here (Pending is nil, or it was resumed already)")

// turn is a dispatched turn's calls and their outcomes so far.
type turn struct {
	a     *Adapter
	shape Shape
	calls []ToolCall
	specs []*llmtool.Spec
	out   []Outcome // in the model's order; filled up to the pending call
}

// paused is a reply's hold on its turn, spent by the first Resume.
type paused struct {
	turn  *turn
	at    int    // the pending call's index
	token string // the token the registry issued, whatever Pending says
	done  atomic.Bool
}

func (a *Adapter) newTurn(ctx context.Context, shape Shape, calls []ToolCall) *turn {
	return &turn{a: a, shape: shape, calls: calls, specs: a.specs(ctx, calls), out: make([]Outcome, len(calls))}
}

// reply is the turn's reply after a run of execute: complete (at < 0),
// or paused at call at.
func (t *turn) reply(ctx context.Context, at int) *Reply {
	if at < 0 {
		return &Reply{Outcomes: t.out, Messages: Render(t.shape, t.out)}
	}
	req := t.out[at].Result.Approval
	p := &Pending{
		Index:        at,
		Call:         t.calls[at],
		FriendlyName: t.a.friendlyName(t.calls[at].Name, t.specs[at], t.a.localeOf(ctx)),
		Preview:      req.Preview,
		Summary:      req.Preview.String(),
		Token:        req.Token,
		Expires:      req.Expires,
	}
	return &Reply{Outcomes: t.out[:at:at], Pending: p, paused: &paused{turn: t, at: at, token: req.Token}}
}

// Resume answers the reply's Pending call with the person's decision and
// goes on with the turn, returning the reply that follows; ctx carries the
// same tenant and principal as Dispatch's (the token is bound to them), and
// its events (WithEvents) are reported as in Dispatch.
//
// The pending call runs again through Registry.Invoke with the answer
// (llmtool.Call.Approval):
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
// A person who leaves without answering has denied: resume with false, so
// that every call of the turn has its result before the next request.
// Each reply is resumed once; Resume on a reply without a Pending call, or
// a second time, returns ErrNotPending.
func (r *Reply) Resume(ctx context.Context, approved bool) (*Reply, error) {
	p := r.paused
	if r.Pending == nil || p == nil || !p.done.CompareAndSwap(false, true) {
		return nil, ErrNotPending
	}
	t := p.turn
	at := t.a.execute(ctx, t.calls, t.specs, t.out, p.at, &approval.Answer{Token: p.token, Approved: approved}, true)
	return t.reply(ctx, at), nil
}
