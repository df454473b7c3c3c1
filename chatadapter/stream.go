package chatadapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"io"
	"mime"
	"net/http"
	"strings"
)

// Streaming (RunOptions.Stream), here for OpenAI Chat Completions and in
// stream_apis.go for the other APIs. An OpenAI Chat Completions endpoint
// asked for "stream": true answers with server-sent events: each event's
// data is a chunk, {"choices":[{"delta":{...},"finish_reason":...}]}, and
// the last one is [DONE]. A delta carries a piece of the model's text
// (content), or pieces of its tool calls (tool_calls, each piece with the
// index of the call it belongs to: the call's id and name come first, its
// arguments in fragments after). With stream_options.include_usage, a
// last chunk without choices carries the usage.
//
// postStream reports each piece of text as a TextDelta event as it
// arrives, and reassembles the whole into the response the endpoint
// would have sent without streaming (for OpenAI Chat Completions, the
// chat completion), which Run reads as it reads
// any. So a streamed turn's transcript is the same as an unstreamed one's,
// a response cut at its output limit fails the same way, and the tool
// calls run only once their arguments are complete.
//
// A request that fails before the model's first words is tried again as
// any (RunOptions.MaxRetries); so is an error the endpoint sends in the
// stream before them, as the status the API gives that error without
// streaming would be (Anthropic's overloaded_error as a 529). Once a piece
// of text was reported, a stream that breaks or brings an error fails the
// turn instead: the person has read those words, and a second answer
// would not repeat them. The transcript ends before the request, as after
// any failed request.

// maxStreamCalls bounds the tool calls one streamed answer may hold, so
// that a wrong index cannot make Run allocate without end.
const maxStreamCalls = 1024

// streams sets r up to stream: every request asks for a stream, with its
// usage for OpenAI Chat Completions (a RequestFields member of the same
// name replaces either); Gemini streams at its own URL instead
// (endpointURL).
func (r *Runner) streams() {
	r.stream = true
	switch r.shape.wire() {
	case OpenAIChat:
		r.fields = append(r.fields,
			member{"stream", json.RawMessage("true")},
			member{"stream_options", json.RawMessage(`{"include_usage":true}`)})
	case OpenAIResponses, Anthropic:
		r.fields = append(r.fields, member{"stream", json.RawMessage("true")})
	}
}

// streamReader puts one API's streamed answer together.
type streamReader interface {
	// add takes one event's data, and returns the text it brings and
	// whether it was the stream's last event.
	add(data []byte) (text string, last bool, err error)
	// end returns the answer as the API's response without streaming, or
	// an error when the stream ended before the answer did.
	end() ([]byte, error)
}

// streamReader returns a reader for the endpoint's API.
func (r *Runner) streamReader() streamReader {
	switch r.shape.wire() {
	case OpenAIResponses:
		return new(responsesStream)
	case Anthropic:
		return new(anthropicStream)
	case Gemini:
		return new(geminiStream)
	}
	return new(assembly)
}

// postStream sends one request asking for a stream, reports its text as
// it comes, and returns the answer as the API's one response.
func (r *Runner) postStream(ctx context.Context, body []byte, header http.Header, step int, obs *observer) ([]byte, error) {
	h := header.Clone()
	h.Set("Accept", "text/event-stream")
	resp, err := r.do(ctx, body, h)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	in := io.LimitReader(resp.Body, maxResponse)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return r.readBody(ctx, in) // a server that answers in one response all the same
	}
	a, told := r.streamReader(), false
	var out []byte
	err = readEvents(in, func(data []byte) (bool, error) {
		text, last, err := a.add(data)
		if err != nil {
			var se *streamError
			if !errors.As(err, &se) || told {
				se = &streamError{err: err} // after text, no status: not retried
			}
			return false, se
		}
		if text != "" {
			told = true
			obs.emit(Event{Kind: TextDelta, Step: step, Text: text})
		}
		return last, nil
	})
	if err == nil {
		out, err = a.end()
	}
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("chatadapter: run: %w", ctx.Err())
	case told || errors.As(err, new(*streamError)):
		return nil, fmt.Errorf("chatadapter: POST %s: %w", r.url, err)
	}
	return nil, fmt.Errorf("chatadapter: POST %s: reading the stream: %w", r.url, &transportError{err})
}

// readBody reads a 2xx response's whole body.
func (r *Runner) readBody(ctx context.Context, in io.Reader) ([]byte, error) {
	b, err := io.ReadAll(in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("chatadapter: run: %w", ctx.Err())
		}
		return nil, fmt.Errorf("chatadapter: POST %s: reading the response: %w", r.url, &transportError{err})
	}
	return b, nil
}

// readEvents reads server-sent events from in and calls event with each
// event's data (its data lines joined by newlines) until event says it
// was the last or returns an error. Comments, other fields and events
// without data are skipped.
func readEvents(in io.Reader, event func(data []byte) (last bool, err error)) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxResponse)
	var data []byte
	has := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if has {
				if last, err := event(data); last || err != nil {
					return err
				}
			}
			data, has = data[:0], false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue // a comment (": keep-alive"), an event name, an id, a retry
		}
		if has {
			data = append(data, '\n')
		}
		data, has = append(data, bytes.TrimPrefix(value, []byte(" "))...), true
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if has { // the last event, without the blank line that ends it
		_, err := event(data)
		return err
	}
	return nil
}

// streamError is a stream the endpoint sent wrong, or an error it sent
// in the stream. status is the HTTP status the API answers the same
// error with when it does not stream, 0 if none: Run retries the error
// as it would that status (retryWait), while no text was shown.
type streamError struct {
	err    error
	status int
}

func (e *streamError) Error() string { return e.err.Error() }
func (e *streamError) Unwrap() error { return e.err }

// assembly is a streamed answer put together chunk by chunk.
type assembly struct {
	text   strings.Builder
	calls  []*streamCall
	finish string          // the last finish_reason
	usage  json.RawMessage // the usage chunk's, if any
	ended  bool            // [DONE] came
}

type streamCall struct {
	id, name string
	args     strings.Builder
}

// chunk is what Run reads of a chat.completion.chunk.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// add takes one chunk, or [DONE], into the answer.
func (a *assembly) add(data []byte) (string, bool, error) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		a.ended = true
		return "", true, nil
	}
	text, err := a.chunk(data)
	return text, false, err
}

// chunk takes one chunk into the answer and returns its text.
func (a *assembly) chunk(data []byte) (string, error) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return "", fmt.Errorf("a stream chunk is not a chat completion chunk (%v): %s", err, ordered.Excerpt(data, 512))
	}
	if e := bytes.TrimSpace(c.Error); len(e) > 0 && string(e) != "null" {
		var kind struct{ Type, Code string }
		_ = json.Unmarshal(e, &kind) // an error of another form has no status
		return "", &streamError{fmt.Errorf("the endpoint sent an error in the stream: %s", ordered.Excerpt(e, 512)), errorStatus(kind.Type, kind.Code)}
	}
	if u := bytes.TrimSpace(c.Usage); len(u) > 0 && u[0] == '{' {
		a.usage = append(json.RawMessage(nil), u...)
	}
	if len(c.Choices) == 0 {
		return "", nil
	}
	ch := c.Choices[0]
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		a.finish = *ch.FinishReason
	}
	for _, tc := range ch.Delta.ToolCalls {
		k := len(a.calls) - 1 // a piece without an index continues the last call...
		switch {
		case tc.Index != nil:
			k = *tc.Index
		case tc.ID != "" && (k < 0 || a.calls[k].id != tc.ID):
			k++ // ...unless it starts a call of its own
		}
		if k < 0 || k >= maxStreamCalls {
			return "", fmt.Errorf("a stream chunk's tool call has index %d; at most %d calls are read", k, maxStreamCalls)
		}
		for len(a.calls) <= k {
			a.calls = append(a.calls, new(streamCall))
		}
		sc := a.calls[k]
		if tc.ID != "" {
			sc.id = tc.ID
		}
		sc.name += tc.Function.Name
		if s, ok := ordered.String(tc.Function.Arguments); ok {
			sc.args.WriteString(s)
		} else if args := bytes.TrimSpace(tc.Function.Arguments); len(args) > 0 && string(args) != "null" {
			sc.args.Write(args) // a server that sends the arguments as an object
		}
	}
	if ch.Delta.Content == nil {
		return "", nil
	}
	a.text.WriteString(*ch.Delta.Content)
	return *ch.Delta.Content, nil
}

// end returns the answer as the chat completion a request without
// streaming gets, once the stream said it is complete: a finish_reason,
// or [DONE].
func (a *assembly) end() ([]byte, error) {
	if a.finish == "" && !a.ended {
		return nil, errors.New("the stream ended before the answer did (no finish_reason, no [DONE])")
	}
	msg := object{{"role", "assistant"}}
	switch {
	case a.text.Len() > 0:
		msg = append(msg, member{"content", a.text.String()})
	case len(a.calls) > 0:
		msg = append(msg, member{"content", nil})
	default:
		msg = append(msg, member{"content", ""})
	}
	if len(a.calls) > 0 {
		calls := make([]any, len(a.calls))
		for i, c := range a.calls {
			calls[i] = object{{"id", c.id}, {"type", "function"}, {"function", object{{"name", c.name}, {"arguments", c.args.String()}}}}
		}
		msg = append(msg, member{"tool_calls", calls})
	}
	out := object{{"object", "chat.completion"}, {"choices", []any{object{{"index", json.RawMessage("0")}, {"message", msg}, {"finish_reason", a.finish}}}}}
	if a.usage != nil {
		out = append(out, member{"usage", a.usage})
	}
	return ordered.Append(nil, out), nil
}

// ended emits TurnEnded for a turn that Run or a resumption ended, and
// passes its results on.
func (r *Runner) ended(ctx context.Context, t *Transcript, err error) (*Transcript, error) {
	if t.Pending == nil {
		e := Event{Kind: TurnEnded, Text: t.Answer, Step: t.Steps, Usage: t.Usage, Err: err}
		if err == nil {
			e.Err = t.Stopped
		}
		r.a.observer(ctx).emit(e)
	}
	return t, err
}
