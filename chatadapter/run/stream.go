package run

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// Streaming (Options.Stream): each API's endpoint asked for a stream
// answers with server-sent events, which its streamReader (in the API's
// file) puts together.
//
// postStream reports each piece of text as a TextDelta event as it
// arrives (and the model's reasoning, and each tool call as it forms, as
// TextDelta events of their own: see chatadapter.TextDelta), and reassembles the whole into the response the endpoint
// would have sent without streaming (for OpenAI Chat Completions, the
// chat completion), which Run reads as it reads any. So a streamed turn's transcript is the same as an unstreamed one's,
// a response cut at its output limit fails the same way, and the tool
// calls run only once their arguments are complete.
//
// A request that fails before the model's first words is tried again as
// any (Options.MaxRetries); so is an error the endpoint sends in the
// stream before them, as the status the API gives that error without
// streaming would be (Anthropic's overloaded_error as a 529). Once a piece
// of text was reported, a stream that breaks or brings an error fails the
// turn instead: the person has read those words, and a second answer
// would not repeat them. The transcript ends before the request, as after
// any failed request; but when ctx ends (the person pressed Stop) after
// text was shown, that text stays as the assistant's message, cut
// (Transcript.Cut), since the person read it.

// maxStreamCalls bounds the tool calls one streamed answer may hold, so
// that a wrong index cannot make Run allocate without end.
const maxStreamCalls = 1024

// streamReader puts one API's streamed answer together.
type streamReader interface {
	// add takes one event's data, and returns the text it brings and
	// whether it was the stream's last event.
	add(data []byte) (text string, last bool, err error)
	// take returns the pieces of the last event that are not its text
	// (the model's reasoning, a tool call forming), in order.
	take() []piece
	// end returns the answer as the API's response without streaming, or
	// an error when the stream ended before the answer did.
	end() ([]byte, error)
}

// piece is a part of a streamed answer other than its text: the model's
// reasoning (thinking, a reasoning summary), reported as a
// ReasoningDelta event, or a tool call forming, its name as soon as it is
// known, then its arguments' text, reported as a CallInputDelta event.
type piece struct {
	reasoning bool
	call      int    // the call's position among the answer's calls
	id, name  string // the call's; name "" for reasoning
	text      string // the reasoning's or the arguments' piece
}

// formingCall is a tool call of a streamed answer, as its pieces name it.
type formingCall struct {
	call     int // its position among the answer's calls
	id, name string
}

// pieces is where a streamReader keeps the pieces of one event until
// postStream takes them.
type pieces struct{ out []piece }

func (p *pieces) reason(text string) {
	if text != "" {
		p.out = append(p.out, piece{reasoning: true, text: text})
	}
}

func (p *pieces) callPiece(call int, id, name, text string) {
	p.out = append(p.out, piece{call: call, id: id, name: name, text: text})
}

func (p *pieces) take() []piece {
	out := p.out
	p.out = nil
	return out
}

// emit reports p as an event of step.
func (p piece) emit(ctx context.Context, a *chatadapter.Adapter, step int) {
	e := chatadapter.Event{Kind: chatadapter.ReasoningDelta, Step: step, Text: p.text}
	if !p.reasoning {
		e.Kind, e.Index, e.CallID, e.Tool = chatadapter.CallInputDelta, p.call, p.id, p.name
	}
	a.Emit(ctx, e)
}

// stoppedError is a streamed request that ctx ended (the person pressed
// Stop) after the model's text was shown: text is that text, which Run
// keeps as the assistant's message, cut (Transcript.Cut).
type stoppedError struct {
	err  error
	text string
}

func (e *stoppedError) Error() string { return e.err.Error() }
func (e *stoppedError) Unwrap() error { return e.err }

// postStream sends one request asking for a stream, reports its text as
// it comes, and returns the answer as the API's one response.
func (r *Runner) postStream(ctx context.Context, body []byte, header http.Header, step int) ([]byte, error) {
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
	a, told := r.api.stream(), false
	var shown strings.Builder // the text the person saw
	var out []byte
	err = readEvents(in, func(data []byte) (bool, error) {
		text, last, err := a.add(data)
		if err != nil {
			var he *HTTPError
			if errors.As(err, &he) {
				he.URL = r.url
				if !told {
					return false, he // retried as its status unstreamed would be
				}
			}
			return false, &streamError{err} // after text, or a stream sent wrong: not retried
		}
		for _, p := range a.take() {
			p.emit(ctx, r.a, step)
		}
		if text != "" {
			told = true
			shown.WriteString(text)
			r.a.Emit(ctx, chatadapter.Event{Kind: chatadapter.TextDelta, Step: step, Text: text})
		}
		return last, nil
	})
	if err == nil {
		out, err = a.end()
	}
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil && told:
		return nil, &stoppedError{fmt.Errorf("chatadapter: run: %w", ctx.Err()), shown.String()}
	case ctx.Err() != nil:
		return nil, fmt.Errorf("chatadapter: run: %w", ctx.Err())
	case errors.As(err, new(*HTTPError)): // its Error names the URL
		return nil, err
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

// streamError is a stream the endpoint sent wrong, or one that broke or
// brought an error after the model's first words: Run does not try it
// again.
type streamError struct{ err error }

func (e *streamError) Error() string { return e.err.Error() }
func (e *streamError) Unwrap() error { return e.err }

// streamFailed is the *HTTPError of an error the endpoint sent in its
// stream (failure's), which Error gives as what says.
func streamFailed(he *HTTPError, data []byte, what string) *HTTPError {
	he.Stream, he.Body, he.what = true, ordered.Excerpt(data, 512), what
	return he
}

// orderedObject decodes a JSON object, keeping its members' order.
func orderedObject(b []byte) (object, error) {
	v, err := ordered.Parse(b)
	if err != nil {
		return nil, err
	}
	o, ok := v.(object)
	if !ok {
		return nil, fmt.Errorf("not a JSON object: %s", ordered.Excerpt(b, 512))
	}
	return o, nil
}
