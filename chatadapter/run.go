package chatadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"
)

// Endpoint is an OpenAI-compatible chat completions server: OpenAI itself,
// or a local llama.cpp, Ollama or vLLM server.
type Endpoint struct {
	// BaseURL is the API root including its version, such as
	// "https://api.openai.com/v1" or "http://localhost:11434/v1". Run
	// posts to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>"; leave it empty
	// for servers that need none.
	APIKey string
	// Model is the request's model field.
	Model string
	// HTTPClient sends the requests; nil means http.DefaultClient. Set its
	// Timeout, or give Run a context with a deadline, to bound a request.
	HTTPClient *http.Client
}

// DefaultMaxSteps is how many requests Run sends at most unless
// RunOptions.MaxSteps says otherwise.
const DefaultMaxSteps = 15

// RunOptions configures Run. A nil *RunOptions, like the zero value, gives
// every field's default.
type RunOptions struct {
	// MaxSteps is how many requests Run sends at most. Each request is a
	// step; the tool calls it answers with run before the next. Default
	// (0 or less): DefaultMaxSteps.
	MaxSteps int

	// Strict sends the strict-mode tool set (OpenAIChatStrict), for models
	// that support OpenAI's structured outputs. Default: false, the plain
	// OpenAIChat set.
	Strict bool

	// RequestFields are added to every request, such as "temperature" or
	// "parallel_tool_calls", in the order of their names; each value is
	// encoded with encoding/json (without HTML escaping). Default: none.
	RequestFields map[string]any
}

// Transcript is what Run did.
type Transcript struct {
	// Messages is the conversation: the messages Run was given, then each
	// assistant message and the tool messages answering it, in order. Pass
	// it to Run again, with a new user message appended, to go on. While a
	// call waits for approval (Pending), it ends with the assistant message
	// whose calls are not all answered yet: resume, do not send it.
	Messages []json.RawMessage
	// Answer is the content of the final assistant message, the one
	// without tool calls; "" if Run stopped before it.
	Answer string
	// Steps is how many requests were sent.
	Steps int
	// Outcomes are every tool call's outcome, in order.
	Outcomes []Outcome
	// Pending is the call the run paused at, waiting for a person's
	// approval, nil if none: show it, then call Resume with the answer.
	Pending *Pending

	run   *runner // set with Pending
	reply *Reply
}

// ErrStepLimit is wrapped by Run's error when every request up to the step
// limit was answered with tool calls.
var ErrStepLimit = errors.New("chatadapter: step limit reached")

// HTTPError is Run's error for a response whose status is not 2xx.
type HTTPError struct {
	URL        string // the URL posted to
	StatusCode int    // such as 500
	Status     string // such as "500 Internal Server Error"
	Body       string // the start of the response body, on one line
}

// Error gives the URL, the status and the start of the body, which is
// where servers say what was wrong with the request.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("chatadapter: POST %s: %s: %s", e.URL, e.Status, e.Body)
}

// UserMessage returns {"role":"user","content":text}.
func UserMessage(text string) json.RawMessage { return textMessage("user", text) }

// SystemMessage returns {"role":"system","content":text}.
func SystemMessage(text string) json.RawMessage { return textMessage("system", text) }

func textMessage(role, text string) json.RawMessage {
	return appendOrdered(nil, object{{"role", role}, {"content", text}})
}

// Run holds a conversation with a model behind an OpenAI-compatible
// /chat/completions endpoint until it answers without tool calls: it sends
// messages with the tool set for the tenant and principal in ctx, runs the
// tool calls of the answer as Dispatch does, appends the results and sends
// again, at most RunOptions.MaxSteps times (default 15). opts may be nil
// for the defaults. It uses net/http only.
//
// Tool problems (unknown tool, malformed arguments, a failed call) go back
// to the model as error results. Run itself fails, returning the transcript
// so far with the error, when the tool set is incomplete (see
// Adapter.Tools), on a transport error, on a non-2xx status (*HTTPError),
// on a response it cannot read, when ctx is done (the error wraps
// ctx.Err()), at the step limit (ErrStepLimit; the transcript then ends
// with the results of the last calls, which the model has not seen), and,
// before sending anything, for a request field that cannot be encoded.
//
// A call that needs a person's approval pauses the run: Run returns, with
// a nil error, a transcript whose Pending shows the call, and
// Transcript.Resume goes on with the person's answer, from a later request
// of the host's if need be:
//
//	tr, err := chatadapter.Run(ctx, a, ep, messages, nil)
//	for err == nil && tr.Pending != nil {
//		tr, err = tr.Resume(ctx, askThePerson(tr.Pending)) // true: approved
//	}
//
// Events of each call (WithEvents) are reported as in Execute.
func Run(ctx context.Context, a *Adapter, ep Endpoint, messages []json.RawMessage, opts *RunOptions) (*Transcript, error) {
	if opts == nil {
		opts = &RunOptions{}
	}
	r := &runner{a: a, ep: ep, maxSteps: DefaultMaxSteps, shape: OpenAIChat}
	if opts.MaxSteps > 0 {
		r.maxSteps = opts.MaxSteps
	}
	if opts.Strict {
		r.shape = OpenAIChatStrict
	}
	t := &Transcript{Messages: slices.Clone(messages)}
	for _, name := range slices.Sorted(maps.Keys(opts.RequestFields)) {
		b, err := marshal(opts.RequestFields[name])
		if err != nil {
			return t, fmt.Errorf("chatadapter: run: request field %q: %w", name, err)
		}
		r.fields = append(r.fields, member{name, json.RawMessage(b)})
	}
	r.url = strings.TrimRight(ep.BaseURL, "/") + "/chat/completions"
	r.client = ep.HTTPClient
	if r.client == nil {
		r.client = http.DefaultClient
	}
	return r.loop(ctx, t)
}

// Resume answers the call the run paused at (Pending) with the person's
// decision, as Reply.Resume does, and goes on with the run: it completes
// the turn's results and sends the next request, with the options Run was
// given, its steps counted on from this transcript's. ctx carries the same
// tenant and principal as Run's. It returns the run's transcript from the
// start, paused again at the next call that waits for approval, or ended
// as Run ends. On a transcript without a Pending call, or resumed already,
// it returns ErrNotPending.
func (t *Transcript) Resume(ctx context.Context, approved bool) (*Transcript, error) {
	if t.reply == nil {
		return t, ErrNotPending
	}
	reply, err := t.reply.Resume(ctx, approved)
	if err != nil {
		return t, err
	}
	n := &Transcript{Messages: slices.Clip(t.Messages), Steps: t.Steps,
		Outcomes: append(slices.Clip(t.Outcomes), reply.Outcomes[len(t.reply.Outcomes):]...)}
	return t.run.answered(ctx, n, reply)
}

// runner is one Run's settings, kept by a paused transcript.
type runner struct {
	a        *Adapter
	ep       Endpoint
	maxSteps int
	shape    Shape
	fields   object
	url      string
	client   *http.Client
}

// loop sends requests and runs their calls until an answer, a pause, an
// error or the step limit.
func (r *runner) loop(ctx context.Context, t *Transcript) (*Transcript, error) {
	for t.Steps < r.maxSteps {
		if err := ctx.Err(); err != nil {
			return t, fmt.Errorf("chatadapter: run: %w", err)
		}
		set, err := r.a.Tools(ctx, r.shape)
		if err != nil {
			return t, fmt.Errorf("chatadapter: run: tool set: %w", err)
		}
		body := object{{"model", r.ep.Model}, {"messages", rawList(t.Messages)}}
		if len(set.Tools) > 0 {
			body = append(body, member{"tools", set.JSON})
		}
		body = append(body, r.fields...)
		msg, err := complete(ctx, r.client, r.url, r.ep.APIKey, appendOrdered(nil, body))
		if err != nil {
			return t, err
		}
		t.Steps++
		msg, content, calls, err := readAssistant(msg)
		if err != nil {
			return t, fmt.Errorf("chatadapter: POST %s: %w", r.url, err)
		}
		t.Messages = append(t.Messages, msg)
		if len(calls) == 0 {
			t.Answer = content
			return t, nil
		}
		tn := r.a.newTurn(ctx, OpenAIChat, calls)
		reply := tn.reply(ctx, r.a.execute(ctx, tn.calls, tn.specs, tn.out, 0, nil, true))
		t.Outcomes = append(t.Outcomes, reply.Outcomes...)
		if reply.Pending != nil {
			return r.answered(ctx, t, reply)
		}
		t.Messages = append(t.Messages, reply.Messages...)
	}
	return t, fmt.Errorf("%w: the model asked for tool calls in each of %d requests; raise MaxSteps or ask for less in one turn", ErrStepLimit, r.maxSteps)
}

// answered goes on with t after its last turn's reply: paused again, or
// complete and sent on.
func (r *runner) answered(ctx context.Context, t *Transcript, reply *Reply) (*Transcript, error) {
	if reply.Pending != nil {
		t.Pending, t.run, t.reply = reply.Pending, r, reply
		return t, nil
	}
	t.Messages = append(t.Messages, reply.Messages...)
	return r.loop(ctx, t)
}

func rawList(ms []json.RawMessage) []any {
	a := make([]any, len(ms))
	for i, m := range ms {
		a[i] = m
	}
	return a
}

// complete sends one request and returns the assistant message of its
// first choice, rebuilt with role, content and tool_calls only.
func complete(ctx context.Context, client *http.Client, url, key string, body []byte) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("chatadapter: run: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("chatadapter: run: %w", ctx.Err())
		}
		return nil, fmt.Errorf("chatadapter: run: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &HTTPError{URL: url, StatusCode: resp.StatusCode, Status: resp.Status, Body: excerpt(b, 512)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("chatadapter: run: %w", ctx.Err())
		}
		return nil, fmt.Errorf("chatadapter: POST %s: reading the response: %w", url, err)
	}
	var r struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("chatadapter: POST %s: response is not a chat completion (%v): %s", url, err, excerpt(b, 512))
	}
	if len(r.Choices) == 0 || len(r.Choices[0].Message) == 0 || r.Choices[0].Message[0] != '{' {
		return nil, fmt.Errorf("chatadapter: POST %s: response has no message: %s", url, excerpt(b, 512))
	}
	return r.Choices[0].Message, nil
}

// readAssistant rebuilds an assistant message with the fields a request
// takes back, and returns its text and tool calls.
func readAssistant(raw json.RawMessage) (json.RawMessage, string, []ToolCall, error) {
	var m struct {
		Content   json.RawMessage `json:"content"`
		ToolCalls json.RawMessage `json:"tool_calls"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", nil, fmt.Errorf("assistant message: %w", err)
	}
	text := contentText(m.Content)
	msg := object{{"role", json.RawMessage(`"assistant"`)}}
	tc := bytes.TrimSpace(m.ToolCalls)
	hasCalls := len(tc) > 2 && tc[0] == '['
	switch {
	case len(bytes.TrimSpace(m.Content)) > 0:
		msg = append(msg, member{"content", m.Content})
	case hasCalls:
		msg = append(msg, member{"content", json.RawMessage("null")})
	default:
		msg = append(msg, member{"content", ""})
	}
	if !hasCalls {
		return appendOrdered(nil, msg), text, nil, nil
	}
	calls, err := parseOpenAIChat(tc)
	if err != nil {
		return nil, "", nil, fmt.Errorf("assistant message: tool_calls: %w", err)
	}
	msg = append(msg, member{"tool_calls", json.RawMessage(tc)})
	return appendOrdered(nil, msg), text, calls, nil
}

// contentText is a message content's text: the string, or the text parts
// of a parts array joined.
func contentText(c json.RawMessage) string {
	c = bytes.TrimSpace(c)
	if len(c) == 0 {
		return ""
	}
	if s, ok := stringValue(c); ok {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if c[0] == '[' && json.Unmarshal(c, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	return ""
}

// excerpt returns the start of b on one line, at most n bytes.
func excerpt(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > n {
		s = s[:n]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
