package chatadapter

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/i18n"
)

// EventKind says what an Event reports.
type EventKind uint8

const (
	// CallStarted: the call is about to run. A call reports it once, even
	// when it pauses and runs again after the person's answer.
	CallStarted EventKind = iota + 1
	// CallProgress: the tool reported progress (ReadCtx.Progress).
	CallProgress
	// CallFinished: the call has its result; Duration, IsError and Err are
	// set. A call reports it once, after any pause.
	CallFinished
	// CallPaused: the call waits for the person: its approval (Err wraps
	// approval.ErrRequired) or its answer to the tool's question (Err
	// wraps ask.ErrInputRequired). Pending has what to show; the call's
	// CallFinished follows the answer.
	CallPaused
	// ModelRequest: Run sends request Step to the model (attempt Attempt).
	ModelRequest
	// ModelRetry: the attempt failed with Err (a 408, 409, 429 or 5xx,
	// the error a stream sent for one before its first words, or a
	// broken connection; a *run.HTTPError says which) and Run tries
	// again after Wait.
	ModelRetry
	// ModelReply: the model answered request Step; Text is what it said
	// (its answer, or what it said along with tool calls), Usage what the
	// request cost, Duration how long it took.
	ModelReply
	// TextDelta: a piece of the model's answer in request Step, as the
	// endpoint streams it (run.Options.Stream); Text is the piece. The
	// pieces of a step, joined, are its ModelReply's Text.
	TextDelta
	// ReasoningDelta: a piece of the model's reasoning in request Step,
	// streamed: Anthropic's thinking, a Responses reasoning summary,
	// Gemini's thoughts, the reasoning_content of DeepSeek, vLLM or
	// llama.cpp. Text is the piece; it is never part of the answer.
	ReasoningDelta
	// CallInputDelta: tool call Index of request Step forming, streamed:
	// Tool, FriendlyName and Write set as in CallStarted, CallID as the
	// provider sent it ("" from Gemini without one), Text a piece of its
	// arguments' JSON. Its first piece comes as soon as its name is known
	// (Text may be ""); Gemini sends each call whole, in one piece. The
	// call's CallStarted follows once the answer is complete.
	//
	// ReasoningDelta and CallInputDelta may come before a ModelRetry of
	// their step (the stream failed before the answer's first words),
	// whose next attempt sends its own: a page drops the step's
	// reasoning and forming calls then.
	CallInputDelta
	// TurnEnded: Run (or Runner.Resume) ended the turn: with the model's
	// answer (Text), stopped (Err wraps run.ErrStepLimit or
	// run.ErrBudget), or failed (Err is the error Run returns). Usage is the
	// turn's, Step its requests, Finish why the model stopped. A turn
	// that ended without the answer the person asked for says so in
	// Label: a stop's line, a failed request's (by run.HTTPError.Class),
	// or a finish's (a content filter, a refusal, a malformed call, a
	// response cut short). A turn that pauses for the person has
	// not ended: its last event is CallPaused, and TurnEnded follows the
	// resumed run's end.
	TurnEnded
)

// Event reports one step of a turn, for a chat UI to show "Create note…
// done" on one card per call. Label is the line to show, in the
// context's locale.
type Event struct {
	Kind EventKind // what the event reports
	// Label is the event's line for the person, in the locale of the
	// context (WithLocale, else Options.Locale) from Options.Messages:
	// "Create note…", "Create note… done", "Asking the model…". For
	// ModelReply and TextDelta it is Text, the model's words; for
	// TurnEnded, Text too, unless the turn ended without its answer (see
	// TurnEnded).
	// In English: "Create note… 3/10 copying", "Create note… failed"; a
	// call that waits for a person's approval is "Delete note… needs
	// approval", one whose approval was denied (or expired) "Delete
	// note… not approved".
	Label string

	// Calls (CallStarted, CallProgress, CallPaused, CallFinished, and
	// TextDelta for a call forming).
	Index        int    // the call's position in its turn
	CallID       string // the call's ID in the conversation
	Tool         string // the tool's name
	FriendlyName string // the tool's label in the chosen locale, such as "Create note"
	Write        bool   // a write tool
	// Args are the call's arguments as the model sent them, JSON (they
	// may be malformed: Invoke tells the model so).
	Args json.RawMessage

	// CallProgress only: progress as the tool reported it (Total 0 if
	// unknown) and its message.
	Progress, Total float64
	Message         string // the progress message, "" if none

	// CallFinished, and ModelReply for Duration.
	Duration time.Duration // how long the call (or the request) took
	IsError  bool          // the call failed, or waits for approval (Err wraps approval.ErrRequired)
	Err      error         // the error behind a failed call (llmtool.Result.Err), a failed attempt, or a stop
	// Result is what Registry.Invoke returned (CallFinished, CallPaused;
	// nil otherwise): Result.Text() is what the model reads, the error
	// included; for a write that committed, Result.Changeset is what it
	// changed in the tables the host tracks, with the ID the tool
	// undo_changes takes ({"id": N}) to undo it.
	Result *llmtool.Result
	// Pending is what the call waits for (CallPaused; nil otherwise): the
	// approval's Preview, Summary and Prompt, or the tool's Question.
	Pending *Pending

	// Finish is why the model stopped (ModelReply: this response;
	// TurnEnded: the last), the same word for every provider: "stop",
	// "tool_calls", "length", "content_filter", "refusal",
	// "malformed_call", "pause" or "other" (see run.Transcript.Finish);
	// FinishRaw is the provider's own, such as "end_turn" or "SAFETY".
	Finish, FinishRaw string

	// Requests to the model (ModelRequest, ModelRetry, ModelReply), in Run.
	Step    int           // the request's number in the run, from 1
	Attempt int           // ModelRequest and ModelRetry: the attempt, from 1
	Wait    time.Duration // ModelRetry: the pause before the next attempt
	Text    string        // ModelReply: what the model said; a delta: its piece; TurnEnded: the answer
	Usage   Usage         // ModelReply: the request's tokens; TurnEnded: the turn's
}

// render is the event's line in locale from msgs (nil: the embedded
// English).
func (e Event) render(msgs *i18n.Catalog, locale string) string {
	name := e.FriendlyName
	if name == "" {
		name = e.Tool
	}
	call := func(key string, args ...string) string {
		return msgs.Message(key, locale, append([]string{"tool", name}, args...)...)
	}
	switch e.Kind {
	case CallFinished, CallPaused:
		switch {
		case errors.Is(e.Err, approval.ErrRequired):
			return call(keyNeedsApproval)
		case e.Kind == CallPaused:
			return call(keyAsks)
		case errors.Is(e.Err, approval.ErrRefused):
			return call(keyNotApproved)
		case e.IsError:
			return call(keyFailed)
		}
		return call(keyDone)
	case CallProgress:
		p := strconv.FormatFloat(e.Progress, 'g', -1, 64)
		if e.Total > 0 {
			p += "/" + strconv.FormatFloat(e.Total, 'g', -1, 64)
		}
		if e.Message != "" {
			p += " " + e.Message
		}
		return call(keyProgress, "progress", p)
	case ModelRequest:
		if e.Attempt > 1 {
			return msgs.Message(keyModelAgain, locale, "attempt", strconv.Itoa(e.Attempt))
		}
		return msgs.Message(keyModelRequest, locale)
	case ModelRetry:
		var s interface{ StatusCode() int } // the run package's failed attempt
		code := 0
		if errors.As(e.Err, &s) {
			code = s.StatusCode()
		}
		return msgs.Message(keyModelRetry, locale, "status", retryStatus(msgs, locale, code), "wait", e.Wait.Round(time.Millisecond).String())
	case ModelReply, TextDelta, ReasoningDelta, CallInputDelta:
		return e.Text
	case TurnEnded:
		var s interface { // the run package's stop, or failed request
			Line(msgs *i18n.Catalog, locale string) string
		}
		if errors.As(e.Err, &s) {
			return s.Line(msgs, locale)
		}
		if key, ok := finishKeys[e.Finish]; ok {
			return msgs.Message(key, locale)
		}
		return e.Text
	}
	return call(keyStarted)
}

type eventsKey struct{}
type localeKey struct{}

// WithEvents returns a context whose turns (Dispatch, Run and
// their resumptions) report their events to f. Calls to f are
// serialized, in the order the events happen; f should return quickly.
func WithEvents(ctx context.Context, f func(Event)) context.Context {
	return context.WithValue(ctx, eventsKey{}, f)
}

// WithLocale returns a context whose events, pending calls and stops
// speak locale, such as "de" (see Options.Messages).
func WithLocale(ctx context.Context, locale string) context.Context {
	return context.WithValue(ctx, localeKey{}, locale)
}

// localeFrom returns the locale set by WithLocale, or "".
func localeFrom(ctx context.Context) string {
	s, _ := ctx.Value(localeKey{}).(string)
	return s
}

// observer serializes a context's events and labels them.
type observer struct {
	mu     sync.Mutex
	f      func(Event)
	msgs   *i18n.Catalog
	locale string
}

// observer returns ctx's observer, nil when ctx has no WithEvents.
func (a *Adapter) observer(ctx context.Context) *observer {
	f, _ := ctx.Value(eventsKey{}).(func(Event))
	if f == nil {
		return nil
	}
	return &observer{f: f, msgs: a.msgs, locale: a.localeOf(ctx)}
}

// Emit reports e to the events of ctx (WithEvents) as a turn's own
// events are reported, its Label in the context's locale; it does
// nothing when ctx has none. It is how package run reports its requests
// (ModelRequest, TextDelta, ModelReply, TurnEnded...), and how a host
// that drives its provider itself can report them the same way.
func (a *Adapter) Emit(ctx context.Context, e Event) {
	o := a.observer(ctx)
	if o != nil && e.Kind == CallInputDelta && e.FriendlyName == "" { // a call forming: its card's name
		spec, _ := a.reg.Tool(ctx, e.Tool)
		e.FriendlyName, e.Write = a.friendlyName(e.Tool, spec, o.locale), !isRead(spec)
	}
	o.emit(e)
}

func (o *observer) emit(e Event) {
	if o == nil {
		return
	}
	e.Label = e.render(o.msgs, o.locale)
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
