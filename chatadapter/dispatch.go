package chatadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/internal/callinfo"
)

// ToolCall is one tool call a model asked for, whatever its format.
type ToolCall struct {
	// ID identifies the call in the conversation: OpenAI's tool_call id or
	// call_id, Anthropic's tool_use id, Gemini's functionCall id ("" when
	// the model sent none; Gemini then pairs results by name and order).
	ID string `json:"id,omitempty"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Args are the arguments as the model sent them: the text of OpenAI's
	// arguments string, Anthropic's input object, Gemini's args object.
	// They may be malformed; Invoke reports that to the model.
	Args json.RawMessage `json:"args,omitempty"`
}

// Outcome is the result of one call of a turn.
type Outcome struct {
	Call     ToolCall       // the call as the model asked for it
	Result   llmtool.Result // what Registry.Invoke returned
	Duration time.Duration  // how long Invoke took
}

// Reply is what Dispatch gives back for one model turn.
type Reply struct {
	// Outcomes are the calls' results, in the model's order. While a call
	// waits for the person (Pending), they are the calls before it.
	Outcomes []Outcome
	// Messages are what to append to the conversation before the next
	// request, in the turn's format: one tool message per call for OpenAI
	// Chat Completions, one function_call_output item per call for OpenAI
	// Responses, one user message of tool_result blocks for Anthropic, one
	// user content of functionResponse parts for Gemini. Empty when the
	// turn asked for no calls, and while a call waits for the person: the
	// providers take the next request only with a result for every call.
	Messages []json.RawMessage
	// Pending is the call that waits for the person (an approval, or an
	// answer to the tool's question), nil if none: show it, then resume
	// it with the person's answer (Pending.Resume), or save it
	// (json.Marshal) to resume later (Adapter.Restore). The calls after
	// it have not run yet (see the package documentation).
	Pending *Pending
}

// Dispatch runs the tool calls of one model turn and returns their results
// in the turn's format. turn is what the provider returned, in any of
// these forms:
//
//   - OpenAIChat: a response {"choices":[{"message":...}]}, an assistant
//     message {"role":"assistant","tool_calls":[...]}, or its tool_calls array;
//   - OpenAIResponses: a response {"output":[...]}, its output array, or one
//     function_call item;
//   - Anthropic: a message {"role":"assistant","content":[...]} or its
//     content array (tool_use blocks);
//   - Gemini: a response {"candidates":[...]}, a content {"parts":[...]},
//     or its parts array (functionCall parts).
//
// The strict shapes read the same as their plain ones. The calls run as
// described in the package documentation (reads of a run of reads
// concurrently, writes one at a time in order) with the tenant and principal
// in ctx. An unknown tool, malformed arguments or a failed call become error
// results for the model.
//
// A call that needs the person pauses the turn there: a write that needs
// approval (llmtool.NeedsApproval, Registry.Tenants().SetApproval), or a
// tool that asks a question (ask.Elicit). The reply's Pending shows what
// to ask, and Pending.Resume goes on with the answer.
//
// Dispatch fails when turn cannot be read: not JSON, or in another shape
// than shape (an error wrapping ErrShape that names both). When ctx ends during the turn, it returns
// the reply with an error wrapping ctx.Err(): the calls that had not
// finished report that they were cancelled, those that committed stay
// committed, and Messages has a result for every call, so the
// conversation stays whole.
func (a *Adapter) Dispatch(ctx context.Context, shape Shape, turn []byte) (*Reply, error) {
	calls, err := parseCalls(shape, turn)
	if err != nil {
		return nil, err
	}
	t := a.newTurn(ctx, shape, calls)
	r := t.reply(t.execute(ctx, a.observer(ctx), 0, true))
	return r, cancelled(ctx, "dispatch")
}

// cancelled wraps ctx's error, if it ended, for op.
func cancelled(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("chatadapter: %s: %w", op, err)
	}
	return nil
}

// execute runs calls in the order described in the package documentation
// and returns their outcomes in the same order. It never fails: every
// problem is an error Result.
//
// Arguments go to Invoke as they are: the nulls a strict-mode model sends
// for optional parameters it leaves out mean "absent" to Invoke itself,
// for every adapter.
//
// execute does not wait for the person: a call that needs approval fails,
// as any failed call, with its approval request in
// Outcome.Result.Approval, and the calls after it run; a tool that asks a
// question gets ask.ErrUnsupported. Dispatch and Pending.Resume, or package run,
// let the person answer first.
func (a *Adapter) execute(ctx context.Context, calls []ToolCall) []Outcome {
	t := a.newTurn(ctx, 0, calls)
	t.execute(ctx, a.observer(ctx), 0, false)
	return t.out
}

// turn is a dispatched turn's calls and their outcomes so far.
type turn struct {
	a     *Adapter
	shape Shape
	calls []ToolCall
	specs []*llmtool.Spec // nil in a turn restored from JSON until it resumes
	out   []Outcome       // in the model's order
	state []callState
}

// callState is where one call of a turn stands.
type callState struct {
	done    bool       // out holds its result
	pending *Pending   // it waits for the person
	token   string     // the approval token the registry issued, whatever Pending says
	digest  string     // the pending question's digest
	answers []answered // the person's answers to its questions, every round
}

func (a *Adapter) newTurn(ctx context.Context, shape Shape, calls []ToolCall) *turn {
	t := &turn{a: a, shape: shape, calls: calls, out: make([]Outcome, len(calls)), state: make([]callState, len(calls))}
	t.lookup(ctx)
	return t
}

// lookup finds the calls' tools for the tenant and principal in ctx.
func (t *turn) lookup(ctx context.Context) {
	if t.specs != nil {
		return
	}
	t.specs = make([]*llmtool.Spec, len(t.calls))
	for i, c := range t.calls {
		t.specs[i], _ = t.a.reg.Tool(ctx, c.Name)
	}
}

// execute runs the calls from index from on that have not run, and
// returns the index of the first that waits for the person, or -1 when
// every call has its result. With pause false, no call waits: approvals
// fail and questions are refused.
func (t *turn) execute(ctx context.Context, obs *observer, from int, pause bool) int {
	// Runs of adjacent reads (unknown tools count as reads: they fail
	// without touching the database) run concurrently; a write runs alone.
	// A read that asks a question pauses the turn once its run is done.
	for i := from; i < len(t.calls); {
		if t.state[i].pending != nil {
			return i // it asked while other reads of its run ran
		}
		if t.state[i].done {
			i++
			continue
		}
		j := i + 1
		if isRead(t.specs[i]) {
			for j < len(t.calls) && isRead(t.specs[j]) && !t.state[j].done && t.state[j].pending == nil {
				j++
			}
		}
		if j-i == 1 || t.a.maxParallel == 1 {
			for k := i; k < j; k++ {
				if t.call(ctx, obs, k, nil, pause); t.state[k].pending != nil {
					return k
				}
			}
		} else {
			sem := make(chan struct{}, t.a.maxParallel)
			var wg sync.WaitGroup
			for k := i; k < j; k++ {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					t.call(ctx, obs, k, nil, pause)
				})
			}
			wg.Wait()
			for k := i; k < j; k++ {
				if t.state[k].pending != nil {
					return k
				}
			}
		}
		i = j
	}
	return -1
}

func (a *Adapter) localeOf(ctx context.Context) string {
	if l := localeFrom(ctx); l != "" {
		return l
	}
	return a.locale
}

func isRead(s *llmtool.Spec) bool { return s == nil || s.ReadOnly }

// call runs call k through Registry.Invoke, with the person's answer to
// its approval (nil for none) and, with pause, an Asker holding its
// answers; it records the outcome, or what the call waits for.
func (t *turn) call(ctx context.Context, obs *observer, k int, answer *approval.Answer, pause bool) {
	c, spec, st := t.calls[k], t.specs[k], &t.state[k]
	resumed := answer != nil || len(st.answers) > 0
	ev := Event{Index: k, CallID: c.ID, Tool: c.Name, Write: !isRead(spec), Args: c.Args}
	if obs != nil { // the friendly name is for the person: events, or a pause
		ev.FriendlyName = t.a.friendlyName(c.Name, spec, t.a.localeOf(ctx))
		if !resumed { // one card per call: a call that ran before its pause started then
			ev.Kind = CallStarted
			obs.emit(ev)
		}
		ctx = callinfo.WithReporter(ctx, &reporter{obs: obs, ev: ev})
	}
	var q *asker
	if pause {
		q = newAsker(st.answers)
		ctx = ask.With(ctx, q)
	}
	start := time.Now()
	res := t.a.reg.Invoke(ctx, llmtool.Call{Tool: c.Name, Args: c.Args, Approval: answer, OutputBudget: t.a.budget,
		Conversation: conversationOf(ctx), Locale: t.a.localeOf(ctx)})
	d := time.Since(start)
	t.out[k] = Outcome{Call: c, Result: res, Duration: d}
	ev.Kind, ev.Duration, ev.IsError, ev.Err, ev.Result = CallFinished, d, res.IsError, res.Err, &res
	var question *ask.ElicitRequest
	var digest string
	if pause {
		question, digest = q.asked()
	}
	asked := question != nil && errors.Is(res.Err, ask.ErrInputRequired)
	if (asked || pause && res.Approval != nil) && ev.FriendlyName == "" {
		ev.FriendlyName = t.a.friendlyName(c.Name, spec, t.a.localeOf(ctx))
	}
	switch {
	case pause && res.Approval != nil:
		st.pending, st.token = t.a.approvalPending(k, c, ev.FriendlyName, t.a.localeOf(ctx), res.Approval), res.Approval.Token
		ev.Kind = CallPaused
	case asked:
		st.pending, st.digest = t.a.questionPending(k, c, ev.FriendlyName, t.a.localeOf(ctx), question), digest
		ev.Kind = CallPaused
	default:
		st.done = true
	}
	if st.pending != nil {
		p := *st.pending
		ev.Pending = &p
	}
	obs.emit(ev)
}

func (a *Adapter) friendlyName(tool string, spec *llmtool.Spec, locale string) string {
	defined := ""
	if spec != nil {
		defined = spec.FriendlyName
	}
	return a.msgs.FriendlyName(tool, defined, locale)
}

// reply is the turn's reply after a run of execute: complete (at < 0),
// or paused at call at.
func (t *turn) reply(at int) *Reply {
	if at < 0 {
		return &Reply{Outcomes: t.out, Messages: render(t.shape, t.out)}
	}
	p := *t.state[at].pending
	p.hold = &paused{turn: t, at: at}
	return &Reply{Outcomes: t.out[:at:at], Pending: &p}
}
