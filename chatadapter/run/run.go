package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"github.com/llmtool/llmtool/i18n"
	"github.com/llmtool/llmtool/internal/jsonenc"
)

// defaultMaxSteps is how many requests Run sends at most in one turn
// unless Options.MaxSteps says otherwise.
const defaultMaxSteps = 15

// Options configures Run. A nil *Options, like the zero value, gives
// every field's default.
type Options struct {
	// MaxSteps is how many requests Run sends at most in one turn. Each
	// request is a step; the tool calls it answers with run before the
	// next. At the limit the turn stops (Transcript.Stopped). Default (0
	// or less): 15.
	MaxSteps int

	// System is the system prompt, sent in each API's place for it: a
	// first system message for OpenAI Chat Completions, "instructions"
	// for OpenAI Responses, "system" for Anthropic, "systemInstruction"
	// for Gemini. It is not part of Transcript.Messages. Default: none.
	System string

	// RequestFields are added to every request, such as "temperature",
	// "parallel_tool_calls", "max_tokens" or Gemini's "generationConfig",
	// in the order of their names; each value is encoded with
	// encoding/json (without HTML escaping), and replaces a member Run
	// sets itself (Anthropic's max_tokens, 4096 unless given here).
	// Default: none.
	RequestFields map[string]any

	// TokenBudget stops a turn once its requests used this many tokens
	// (Usage.Total, summed): Run sends no further request, and the turn
	// ends with the results of the calls it ran (Transcript.Stopped).
	// Default: 0, no budget.
	TokenBudget int

	// MaxRetries is how many times Run tries a request again after a
	// 408, 409, 429 or 5xx (Anthropic's 529 too), the same error sent in
	// a stream before the model's first words, or a broken connection,
	// as the official SDKs do: an x-should-retry header decides instead
	// of the status, and what waiting cannot cure is never sent again (a
	// quota or spend limit, a context too long, a key refused, a bad
	// request: HTTPError.Class). Run waits as the server asks
	// (Retry-After) or RetryDelay, doubled each time; ctx bounds the
	// whole. Default (0): 3; less than 0: none.
	MaxRetries int

	// RetryDelay is the first pause before a retry the server gave no
	// time for. Default (0 or less): 500 ms.
	RetryDelay time.Duration

	// Stream asks the endpoint to stream each answer ("stream": true),
	// so that the context's events (chatadapter.WithEvents) report the model's text
	// as it is written (TextDelta), for a chat that shows it word by
	// word. The transcript is the same as without it, but for a turn
	// the person stopped while the model wrote (Transcript.Cut). Every API streams:
	// OpenAI Chat Completions and compatible servers (llama.cpp, Ollama,
	// vLLM) with stream_options.include_usage, OpenAI Responses and
	// Anthropic with "stream": true, Gemini from streamGenerateContent
	// with alt=sse. A server that answers in one response all the same is
	// read as such.
	// Default: false, each answer in one response.
	Stream bool
}

// Transcript is what Run did in one turn, and the conversation after it.
type Transcript struct {
	// Messages is the conversation in the endpoint's format: the messages
	// Run was given, then each assistant turn and the tool results
	// answering it, in order. Pass it to Run again, with a new user
	// message appended, to go on. It is whole whatever happened: after an
	// error it ends before the request that failed, so Run can send it
	// again. While a call waits for the person (Pending), it ends with the
	// assistant turn whose calls are not all answered yet: resume, do not
	// send it.
	Messages []json.RawMessage
	// Answer is the text of the model's final turn, the one without tool
	// calls; "" if the run stopped before it. When Cut, it is the text
	// the model had written when the turn was stopped.
	Answer string
	// Cut says the person stopped the turn (ctx ended) while the model
	// was streaming its text (Options.Stream): the words the person had
	// seen are kept as Answer and as the last of Messages, an assistant
	// message of that text alone in the endpoint's format (as TextMessage
	// makes it), which the next request takes as it is; its tool calls,
	// if any had begun, are dropped. Run still returns the error wrapping
	// ctx.Err(). A request that fails otherwise keeps no partial text:
	// the transcript ends before it, so it can be sent, or was retried,
	// whole.
	Cut bool
	// Steps is how many requests were answered.
	Steps int
	// Outcomes are every tool call's outcome, in order.
	Outcomes []chatadapter.Outcome
	// Pending is the call the run paused at, waiting for the person's
	// approval or answer, nil if none: show it, then go on with
	// Runner.Resume and the person's answer.
	Pending *chatadapter.Pending
	// Usage is what the turn's requests used, summed.
	Usage chatadapter.Usage
	// StepUsage is each request's usage, in order.
	StepUsage []chatadapter.Usage
	// Finish is why the model ended the last response, in the same words
	// for every provider: "stop" (it answered), "tool_calls" (the turn
	// stopped or paused after its calls), "length" (cut at its output
	// limit: Run fails with ErrTruncated), "content_filter" (the
	// provider's filter stopped the answer, or blocked the prompt),
	// "refusal" (the model declined; Answer has its words, if any),
	// "malformed_call" (it wrote a tool call the provider could not
	// read, Gemini's MALFORMED_FUNCTION_CALL), "pause" (Anthropic's
	// pause_turn: send Messages again to let it go on) or "other"; ""
	// before the first response. Any but "stop" and "tool_calls" is a
	// turn without the answer the person asked for, which the TurnEnded
	// event's Label says in their words.
	Finish string
	// FinishRaw is the provider's own word for Finish: OpenAI's
	// finish_reason ("refusal" for a message's refusal), a Responses
	// response's status or incomplete_details.reason, Anthropic's
	// stop_reason, Gemini's finishReason or, for a prompt it blocked,
	// promptFeedback.blockReason.
	FinishRaw string
	// StepFinish is each response's Finish, in order.
	StepFinish []string
	// Stopped says why the run ended the turn without the model's answer,
	// nil when it answered or a call is pending: an error wrapping
	// ErrStepLimit or ErrBudget that says what to do. Messages ends with
	// the results of the last calls, which the model has not seen: a new
	// user message lets it go on. The TurnEnded event says it to the
	// person in their locale.
	Stopped error
}

// ErrStepLimit is wrapped by Transcript.Stopped when every request up to
// Options.MaxSteps was answered with tool calls.
var ErrStepLimit = errors.New("chatadapter: step limit reached")

// ErrBudget is wrapped by Transcript.Stopped when the turn's requests
// used Options.TokenBudget.
var ErrBudget = errors.New("chatadapter: token budget reached")

// stopError is a Transcript.Stopped: its English for the host's log, and
// the values of the person's line.
type stopError struct {
	reason error // ErrStepLimit or ErrBudget
	n      int   // the steps, or the tokens used
	budget int
}

func (e *stopError) Error() string {
	if e.reason == ErrBudget {
		return fmt.Sprintf("%v: the turn used %d tokens of its budget of %d; raise TokenBudget or go on in a new turn", ErrBudget, e.n, e.budget)
	}
	return fmt.Sprintf("%v: the model asked for tool calls in each of %d requests; raise MaxSteps or ask for less in one turn", ErrStepLimit, e.n)
}

func (e *stopError) Unwrap() error { return e.reason }

// The keys of the person's lines of a stop (see chatadapter's
// Options.Messages).
const (
	keyStopSteps  = "llm.chat.stop.steps"  // {steps}
	keyStopBudget = "llm.chat.stop.budget" // {tokens}, {budget}
)

// Line is the stop's line for the person in locale, which chatadapter
// gives the TurnEnded event as its Label.
func (e *stopError) Line(msgs *i18n.Catalog, locale string) string {
	if e.reason == ErrBudget {
		return msgs.Message(keyStopBudget, locale, "tokens", strconv.Itoa(e.n), "budget", strconv.Itoa(e.budget))
	}
	return msgs.Message(keyStopSteps, locale, "steps", strconv.Itoa(e.n))
}

// UserMessage returns {"role":"user","content":text}: a user message for
// OpenAI Chat Completions, OpenAI Responses and Anthropic alike (see
// TextMessage for Gemini).
func UserMessage(text string) json.RawMessage { return textMessage("user", text) }

// TextMessage returns a message of role ("user" or "assistant") with
// text in shape's format: {"role","content"} for OpenAI's and Anthropic's
// APIs, {"role","parts":[{"text"}]} for Gemini, whose assistant role is
// "model".
func TextMessage(shape chatadapter.Shape, role, text string) json.RawMessage {
	if shape != chatadapter.Gemini {
		return textMessage(role, text)
	}
	if role == "assistant" {
		role = "model"
	}
	return ordered.Append(nil, object{{"role", role}, {"parts", []any{object{{"text", text}}}}})
}

func textMessage(role, text string) json.RawMessage {
	return ordered.Append(nil, object{{"role", role}, {"content", text}})
}

// Runner holds a conversation with a model over one endpoint, with the
// tools of an Adapter: Run, Resume and Restore. Its settings are fixed when it is
// made; it is safe for concurrent use.
type Runner struct {
	a          *chatadapter.Adapter
	ep         Endpoint
	shape      chatadapter.Shape // Endpoint.Shape, OpenAIChat when 0
	api        api               // the shape's
	maxSteps   int
	system     string
	fields     object
	budget     int
	retries    int
	retryDelay time.Duration
	url        string
	client     *http.Client
	stream     bool // Options.Stream
}

// New returns a Runner for a's tools over ep, configured by opts
// (nil for the defaults). It fails for an unknown Endpoint.Shape and for
// a request field that cannot be encoded.
func New(a *chatadapter.Adapter, ep Endpoint, opts *Options) (*Runner, error) {
	if opts == nil {
		opts = &Options{}
	}
	r := &Runner{a: a, ep: ep, shape: ep.Shape, maxSteps: defaultMaxSteps, system: opts.System, budget: max(opts.TokenBudget, 0),
		retries: defaultMaxRetries, retryDelay: defaultRetryDelay, client: ep.HTTPClient}
	if r.shape == 0 {
		r.shape = chatadapter.OpenAIChat
	}
	if r.api = apiOf(r.shape); r.api == nil {
		return nil, fmt.Errorf("%w %d in the Endpoint", chatadapter.ErrShape, r.shape)
	}
	if opts.MaxSteps > 0 {
		r.maxSteps = opts.MaxSteps
	}
	if opts.MaxRetries != 0 {
		r.retries = max(opts.MaxRetries, 0)
	}
	if opts.RetryDelay > 0 {
		r.retryDelay = opts.RetryDelay
	}
	if opts.Stream { // every request asks for a stream (a RequestFields member of the same name replaces it)
		r.stream = true
		r.fields = append(r.fields, r.api.streamFields()...)
	}
	for _, name := range slices.Sorted(maps.Keys(opts.RequestFields)) {
		b, err := jsonenc.Marshal(opts.RequestFields[name])
		if err != nil {
			return nil, fmt.Errorf("chatadapter: run: request field %q: %w", name, err)
		}
		r.fields = append(r.fields, member{name, json.RawMessage(b)})
	}
	r.url = endpointURL(ep, r.api, r.stream)
	if r.client == nil {
		r.client = http.DefaultClient
	}
	return r, nil
}

// Run holds a conversation with a model until it answers without tool
// calls: it is New(a, ep, opts) and Runner.Run, for one turn. See
// Runner.Run.
func Run(ctx context.Context, a *chatadapter.Adapter, ep Endpoint, messages []json.RawMessage, opts *Options) (*Transcript, error) {
	r, err := New(a, ep, opts)
	if err != nil {
		return &Transcript{Messages: slices.Clone(messages)}, err
	}
	return r.Run(ctx, messages)
}

// Run holds one turn of a conversation: it sends messages (in the
// endpoint's format) with the tool set for the tenant and principal in
// ctx, runs the tool calls of the answer with chatadapter.Adapter.Dispatch, appends the
// results and sends again, until the model answers without tool calls.
// It uses net/http only.
//
// The turn ends with a nil error and the model's Answer; or stopped
// (Transcript.Stopped) at Options.MaxSteps or TokenBudget; or paused
// (Transcript.Pending) at a call that waits for the person's approval or
// answer, which Runner.Resume gives, from a later request of the host's
// if need be, or another process (see Restore):
//
//	tr, err := runner.Run(ctx, messages)
//	for err == nil && tr.Pending != nil {
//		tr, err = runner.Resume(ctx, tr, askThePerson(tr.Pending)) // an ask.ElicitResult; ask.Accept approves
//	}
//
// Tool problems (unknown tool, malformed arguments, a failed call) go back
// to the model as error results, as Dispatch gives them. Run fails,
// returning the transcript so far with the error, when the tool set is
// incomplete (see chatadapter.Adapter.Tools),
// when a request fails for good (a transport error, or a non-2xx status,
// *HTTPError, once its retries are spent), on a response it cannot read
// or one the provider cut short (ErrTruncated), and when ctx is done (the
// error wraps ctx.Err()). The transcript's Messages stay whole: fix the
// cause and send them again.
//
// Events of the turn (chatadapter.WithEvents) report each request (ModelRequest,
// ModelRetry, ModelReply), its text as it streams (TextDelta, with
// Options.Stream; ReasoningDelta for its reasoning, CallInputDelta for a
// call forming), each call as in Dispatch, and the turn's end
// (TurnEnded), so a chat page can draw itself from them alone:
//
//	ctx = chatadapter.WithConversation(ctx, conversationID) // undo_changes works on it
//	ctx = chatadapter.WithEvents(ctx, func(e chatadapter.Event) {
//		switch e.Kind {
//		case chatadapter.TextDelta: // append e.Text to the answer
//		case chatadapter.ReasoningDelta: // append e.Text to a folded "thinking" line
//		case chatadapter.CallInputDelta: // call e.Index's card, as soon as the model names e.Tool
//		case chatadapter.CallStarted: // a card: e.FriendlyName, e.Args
//		case chatadapter.CallPaused: // e.Pending.Preview, with Approve and Deny
//		case chatadapter.CallFinished: // e.Result.Text() if e.IsError, else e.Result.Changeset.ID for Undo
//		case chatadapter.TurnEnded: // e.Err says why, if the turn failed
//		}
//	})
//	tr, err := runner.Run(ctx, messages)
//
// Cancelling ctx ends the turn: the person pressed Stop, or closed the
// page and the host's request context ended. A request to the model is
// abandoned; a write call in progress rolls back, a committed one stays;
// the calls of the turn that had not run get results saying they were
// cancelled; and Run returns the transcript, whole, with an error
// wrapping ctx.Err(). Stopped while the model streamed its text, the
// transcript keeps that text, cut (Transcript.Cut).
func (r *Runner) Run(ctx context.Context, messages []json.RawMessage) (*Transcript, error) {
	t, err := r.loop(ctx, &Transcript{Messages: slices.Clone(messages)})
	return r.ended(ctx, t, err)
}

// Resume answers the call t paused at (t.Pending) with the person's
// answer, as Pending.Resume does (ask.Accept approves, or gives the
// filled form), and goes on with the run: it completes the turn's
// results and sends the next request, its steps and usage counted on
// from t's. ctx carries the same tenant and principal as Run's. It
// returns the run's transcript from the start, paused again at the next
// call that waits for the person, or ended as Run ends. On a transcript
// without a Pending call, or resumed already, it returns
// chatadapter.ErrNotPending, and t.
func (r *Runner) Resume(ctx context.Context, t *Transcript, answer ask.ElicitResult) (*Transcript, error) {
	if t.Pending == nil {
		return t, chatadapter.ErrNotPending
	}
	reply, err := t.Pending.Resume(ctx, answer)
	if reply == nil {
		return t, err
	}
	n := &Transcript{Messages: slices.Clip(t.Messages), Steps: t.Steps, Usage: t.Usage, StepUsage: slices.Clip(t.StepUsage),
		StepFinish: slices.Clip(t.StepFinish), Finish: t.Finish, FinishRaw: t.FinishRaw,
		Outcomes: append(slices.Clip(t.Outcomes), reply.Outcomes[t.Pending.Index:]...)}
	if done, err := answered(n, reply, err); done {
		return r.ended(ctx, n, err)
	}
	n, err = r.loop(ctx, n)
	return r.ended(ctx, n, err)
}

// loop sends requests and runs their calls until an answer, a pause, a
// stop or an error.
func (r *Runner) loop(ctx context.Context, t *Transcript) (*Transcript, error) {
	for {
		var stop *stopError
		switch {
		case t.Steps >= r.maxSteps:
			stop = &stopError{reason: ErrStepLimit, n: t.Steps}
		case r.budget > 0 && total(t.Usage) >= r.budget:
			stop = &stopError{reason: ErrBudget, n: total(t.Usage), budget: r.budget}
		}
		if stop != nil {
			t.Stopped = stop // TurnEnded says it to the person
			return t, nil
		}
		if err := ctx.Err(); err != nil {
			return t, fmt.Errorf("chatadapter: run: %w", err)
		}
		set, err := r.a.Tools(ctx, r.shape)
		if err != nil {
			return t, fmt.Errorf("chatadapter: run: tool set: %w", err)
		}
		n, start := t.Steps+1, time.Now()
		b, err := r.post(ctx, r.body(t.Messages, set), headers(r.ep, r.api, set), n)
		if stopped := (*stoppedError)(nil); errors.As(err, &stopped) {
			t.Messages = append(t.Messages, TextMessage(r.shape, "assistant", stopped.text))
			t.Answer, t.Cut = stopped.text, true
		}
		if err != nil {
			return t, err
		}
		t.Steps++
		st, err := r.api.read(b)
		t.Usage = addUsage(t.Usage, st.usage)
		t.StepUsage = append(t.StepUsage, st.usage)
		t.StepFinish = append(t.StepFinish, st.finish)
		var he *HTTPError
		if errors.As(err, &he) { // a response that failed (Responses' status "failed")
			he.URL = r.url
			return t, err
		}
		if err != nil {
			return t, fmt.Errorf("chatadapter: POST %s: %w", r.url, err)
		}
		t.Finish, t.FinishRaw = st.finish, st.raw
		r.a.Emit(ctx, chatadapter.Event{Kind: chatadapter.ModelReply, Step: n, Text: st.text, Usage: st.usage, Duration: time.Since(start),
			Finish: st.finish, FinishRaw: st.raw})
		if st.cut != "" {
			return t, fmt.Errorf("chatadapter: POST %s: %w (%s): raise %s in run.Options.RequestFields, or ask for less; the transcript ends before this response, so Run can send it again",
				r.url, ErrTruncated, st.cut, r.api.limit())
		}
		if !st.calls {
			t.Messages = append(t.Messages, st.messages...)
			t.Answer = st.text
			return t, nil
		}
		reply, err := r.a.Dispatch(ctx, r.shape, turnOf(st.messages))
		if reply == nil {
			return t, fmt.Errorf("chatadapter: POST %s: %w", r.url, err)
		}
		if err != nil { // ctx ended
			err = fmt.Errorf("chatadapter: run: %w", ctx.Err())
		}
		t.Messages = append(t.Messages, st.messages...)
		t.Outcomes = append(t.Outcomes, reply.Outcomes...)
		if done, err := answered(t, reply, err); done {
			return t, err
		}
	}
}

// answered takes the last turn's reply into t: it reports done when the
// run pauses there (Pending), or ends (err: ctx ended); otherwise the
// results join the conversation, and the run goes on.
func answered(t *Transcript, reply *chatadapter.Reply, err error) (done bool, _ error) {
	if reply.Pending != nil {
		t.Pending = reply.Pending
		return true, err
	}
	t.Messages = append(t.Messages, reply.Messages...)
	return err != nil, err
}

// ended emits TurnEnded for a turn that Run or a resumption ended, and
// passes its results on.
func (r *Runner) ended(ctx context.Context, t *Transcript, err error) (*Transcript, error) {
	if t.Pending == nil {
		e := chatadapter.Event{Kind: chatadapter.TurnEnded, Text: t.Answer, Step: t.Steps, Usage: t.Usage, Err: err, Finish: t.Finish, FinishRaw: t.FinishRaw}
		if err == nil {
			e.Err = t.Stopped
		}
		r.a.Emit(ctx, e)
	}
	return t, err
}

// turnOf is a response's assistant turn as Dispatch reads it: its one
// message, or OpenAI Responses' output items as an array.
func turnOf(messages []json.RawMessage) []byte {
	if len(messages) == 1 {
		return messages[0]
	}
	return ordered.Append(nil, ordered.Array(messages))
}

// total is what Options.TokenBudget counts of u.
func total(u chatadapter.Usage) int { return u.PromptTokens + u.CompletionTokens }
