package chatadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/internal/callinfo"
)

// ToolCall is one tool call a model asked for, whatever its format.
type ToolCall struct {
	// ID identifies the call in the conversation: OpenAI's tool_call id or
	// call_id, Anthropic's tool_use id, Gemini's functionCall id ("" when
	// the model sent none; Gemini then pairs results by name and order).
	ID string
	// Name is the tool's name.
	Name string
	// Args are the arguments as the model sent them: the text of OpenAI's
	// arguments string, Anthropic's input object, Gemini's args object.
	// They may be malformed; Invoke reports that to the model.
	Args json.RawMessage
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
	// waits for approval (Pending), they are the calls before it.
	Outcomes []Outcome
	// Messages are what to append to the conversation before the next
	// request, in the turn's format: one tool message per call for OpenAI
	// Chat Completions, one function_call_output item per call for OpenAI
	// Responses, one user message of tool_result blocks for Anthropic, one
	// user content of functionResponse parts for Gemini. Empty when the
	// turn asked for no calls, and while a call waits for approval: the
	// providers take the next request only with a result for every call.
	Messages []json.RawMessage
	// Pending is the call that waits for a person's approval, nil if none:
	// show it, then Resume with the person's answer. The calls after it
	// have not run yet (see the package documentation).
	Pending *Pending

	paused *paused // set with Pending
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
// results for the model; Dispatch returns an error only when turn cannot be
// parsed at all.
//
// A write call that needs a person's approval (llmtool.NeedsApproval,
// Registry.Tenants().SetApproval) pauses the turn there: the reply's Pending shows
// what it would change, and Reply.Resume goes on with the person's answer.
func (a *Adapter) Dispatch(ctx context.Context, shape Shape, turn []byte) (*Reply, error) {
	calls, err := ParseCalls(shape, turn)
	if err != nil {
		return nil, err
	}
	t := a.newTurn(ctx, shape, calls)
	return t.reply(ctx, a.execute(ctx, t.calls, t.specs, t.out, 0, nil, true)), nil
}

// Execute runs calls in the order described in the package documentation
// and returns their outcomes in the same order. It never fails: every
// problem is an error Result.
//
// Arguments go to Invoke as they are: the nulls a strict-mode model sends
// for optional parameters it leaves out mean "absent" to Invoke itself,
// for every adapter.
//
// Execute does not wait for approvals: a call that needs one fails, as any
// failed call, with its approval request in Outcome.Result.Approval, and
// the calls after it run. Dispatch and Reply.Resume, or Run, let a person
// approve it first.
func (a *Adapter) Execute(ctx context.Context, calls []ToolCall) []Outcome {
	out := make([]Outcome, len(calls))
	a.execute(ctx, calls, a.specs(ctx, calls), out, 0, nil, false)
	return out
}

func (a *Adapter) specs(ctx context.Context, calls []ToolCall) []*llmtool.Spec {
	specs := make([]*llmtool.Spec, len(calls))
	for i, c := range calls {
		specs[i], _ = a.reg.Tool(ctx, c.Name)
	}
	return specs
}

// execute runs calls[from:] into out, the call at from with answer (nil
// for none). With pause, it stops at a call that asks for approval and
// returns its index; it returns -1 when every call ran.
func (a *Adapter) execute(ctx context.Context, calls []ToolCall, specs []*llmtool.Spec, out []Outcome, from int, answer *approval.Answer, pause bool) int {
	obs := newObserver(ctx)
	locale := a.localeOf(ctx)
	// Runs of adjacent reads (unknown tools count as reads: they fail
	// without touching the database) run concurrently; a write runs alone.
	// Only a write can ask for approval, so a pause comes between runs.
	for i := from; i < len(calls); {
		j := i + 1
		if isRead(specs[i]) {
			for j < len(calls) && isRead(specs[j]) {
				j++
			}
		}
		if j-i == 1 || a.maxParallel == 1 {
			for k := i; k < j; k++ {
				var ans *approval.Answer
				if k == from {
					ans = answer
				}
				out[k] = a.call(ctx, k, calls[k], specs[k], ans, locale, obs)
				if pause && out[k].Result.Approval != nil {
					return k
				}
			}
		} else {
			sem := make(chan struct{}, a.maxParallel)
			var wg sync.WaitGroup
			for k := i; k < j; k++ {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					out[k] = a.call(ctx, k, calls[k], specs[k], nil, locale, obs)
				})
			}
			wg.Wait()
		}
		i = j
	}
	return -1
}

func (a *Adapter) localeOf(ctx context.Context) string {
	if l := LocaleFrom(ctx); l != "" {
		return l
	}
	return a.locale
}

func isRead(s *llmtool.Spec) bool { return s == nil || s.ReadOnly }

func (a *Adapter) call(ctx context.Context, index int, c ToolCall, spec *llmtool.Spec, answer *approval.Answer, locale string, obs *observer) Outcome {
	ev := Event{Index: index, CallID: c.ID, Tool: c.Name, Write: !isRead(spec)}
	if obs != nil {
		ev.FriendlyName = a.friendlyName(c.Name, spec, locale)
		ev.Kind = CallStarted
		obs.emit(ev)
		ctx = callinfo.WithReporter(ctx, &reporter{obs: obs, ev: ev})
	}
	start := time.Now()
	res := a.reg.Invoke(ctx, llmtool.Call{Tool: c.Name, Args: c.Args, Approval: answer, OutputBudget: a.budget})
	d := time.Since(start)
	if obs != nil {
		ev.Kind, ev.Duration, ev.IsError, ev.Err = CallFinished, d, res.IsError, res.Err
		obs.emit(ev)
	}
	return Outcome{Call: c, Result: res, Duration: d}
}

func (a *Adapter) friendlyName(tool string, spec *llmtool.Spec, locale string) string {
	defined := ""
	if spec != nil {
		defined = spec.FriendlyName
	}
	return a.msgs.FriendlyName(tool, defined, locale)
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// CallStarted: the call is about to run.
	CallStarted EventKind = iota + 1
	// CallProgress: the tool reported progress (ReadCtx.Progress).
	CallProgress
	// CallFinished: the call returned; Duration, IsError and Err are set.
	CallFinished
)

// Event reports one step of one tool call, for a chat UI to show
// "Create note… done".
type Event struct {
	Kind         EventKind // what the event reports
	Index        int       // the call's position in its turn
	CallID       string    // the call's ID in the conversation
	Tool         string    // the tool's name
	FriendlyName string    // the tool's label in the chosen locale, such as "Create note"
	Write        bool      // a write tool

	// CallProgress only: progress as the tool reported it (Total 0 if
	// unknown) and its message.
	Progress, Total float64
	Message         string // the progress message, "" if none

	// CallFinished only.
	Duration time.Duration // how long the call took
	IsError  bool          // the call failed, or waits for approval (Err wraps approval.ErrRequired)
	Err      error         // the error behind a failed call (llmtool.Result.Err)
}

// String renders the event as a progress line: "Create note…",
// "Create note… 3/10 copying", "Create note… done", "Create note… failed";
// a call that waits for a person's approval is "Delete note… needs
// approval", and one whose approval was denied (or expired) is
// "Delete note… not approved".
func (e Event) String() string {
	name := e.FriendlyName
	if name == "" {
		name = e.Tool
	}
	switch e.Kind {
	case CallFinished:
		switch {
		case errors.Is(e.Err, approval.ErrRequired):
			return name + "… needs approval"
		case errors.Is(e.Err, approval.ErrRefused):
			return name + "… not approved"
		case e.IsError:
			return name + "… failed"
		}
		return name + "… done"
	case CallProgress:
		s := name + "… "
		if e.Total > 0 {
			s += fmt.Sprintf("%g/%g", e.Progress, e.Total)
		} else {
			s += fmt.Sprintf("%g", e.Progress)
		}
		if e.Message != "" {
			s += " " + e.Message
		}
		return s
	}
	return name + "…"
}

type eventsKey struct{}
type localeKey struct{}

// WithEvents returns a context whose tool calls (through Dispatch,
// Execute and Run) report their events to f. Calls to f are serialized,
// in the order the events happen; f should return quickly.
func WithEvents(ctx context.Context, f func(Event)) context.Context {
	return context.WithValue(ctx, eventsKey{}, f)
}

// WithLocale returns a context whose events carry friendly names in
// locale, such as "de".
func WithLocale(ctx context.Context, locale string) context.Context {
	return context.WithValue(ctx, localeKey{}, locale)
}

// LocaleFrom returns the locale set by WithLocale, or "".
func LocaleFrom(ctx context.Context) string {
	s, _ := ctx.Value(localeKey{}).(string)
	return s
}

type observer struct {
	mu sync.Mutex
	f  func(Event)
}

func newObserver(ctx context.Context) *observer {
	f, _ := ctx.Value(eventsKey{}).(func(Event))
	if f == nil {
		return nil
	}
	return &observer{f: f}
}

func (o *observer) emit(e Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.f(e)
}

// reporter turns a tool's progress reports into CallProgress events.
type reporter struct {
	obs *observer
	ev  Event
}

func (r *reporter) Progress(_ context.Context, done, total float64, message string) {
	e := r.ev
	e.Kind, e.Progress, e.Total, e.Message = CallProgress, done, total, message
	r.obs.emit(e)
}

func (r *reporter) Log(context.Context, slog.Level, string) {}
