package run

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// The four APIs Run speaks, one file each (openai_chat.go,
// openai_responses.go, anthropic.go, gemini.go), behind api: each one's
// URL and headers, its request, its response, its usage, its sign of a
// response cut short, and its stream. Only the members Run needs are
// read; the assistant's turn goes back into the conversation as the
// provider sent it, so what Run does not know (reasoning items, thought
// signatures) reaches the next request unchanged. Adding an API is one
// file with one api, and its case in apiOf.

// api is what one provider's API means to Run.
type api interface {
	// url is where requests go, before Endpoint.Query: BaseURL and the
	// API's path (stream: the URL of a streamed answer, if it has its
	// own).
	url(ep Endpoint, stream bool) string
	// header sets the endpoint's key as the API takes it, and the API's
	// own headers, on h; set is the request's tool set, nil for none.
	header(h http.Header, ep Endpoint, set *chatadapter.ToolSet)
	// body is the request's members before its tools: the model, the
	// system prompt ("" for none) and the conversation.
	body(model, system string, messages []json.RawMessage) object
	// streamFields are the members that ask for a stream; none when the
	// API streams from its own URL.
	streamFields() []member
	// retryHint is when an error response's body asks to be tried
	// again, beyond the headers every API sends (retryAfter); false if it
	// does not say.
	retryHint(body []byte) (time.Duration, bool)
	// failure reads an error response's body (status not 2xx), or an
	// error event of the API's stream (status 0), into an *HTTPError:
	// the provider's type, code, message and class (see fault.go).
	failure(status int, body []byte) *HTTPError
	// read reads a 2xx response.
	read(b []byte) (step, error)
	// stream returns a reader of one streamed answer.
	stream() streamReader
	// limit names the request's output limit, for ErrTruncated's advice.
	limit() string
}

// apiOf returns the api of shape (its strict variant's, the same), nil
// for an unknown shape.
func apiOf(shape chatadapter.Shape) api {
	switch shape {
	case chatadapter.OpenAIChat, chatadapter.OpenAIChatStrict:
		return openAIChat{}
	case chatadapter.OpenAIResponses, chatadapter.OpenAIResponsesStrict:
		return openAIResponses{}
	case chatadapter.Anthropic:
		return anthropic{}
	case chatadapter.Gemini:
		return gemini{}
	}
	return nil
}

// endpointURL is where requests go: the API's URL and Endpoint.Query.
func endpointURL(ep Endpoint, p api, stream bool) string {
	u := p.url(ep, stream)
	if len(ep.Query) > 0 {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + ep.Query.Encode()
	}
	return u
}

// headers are a request's headers: JSON, the key as the API takes it,
// then the endpoint's own.
func headers(ep Endpoint, p api, set *chatadapter.ToolSet) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	p.header(h, ep, set)
	for k, vs := range ep.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	return h
}

// body is a request's body: the conversation in the API's member, the
// system prompt in its own, the tools, then RequestFields, which replace
// a member of the same name.
func (r *Runner) body(messages []json.RawMessage, set *chatadapter.ToolSet) []byte {
	body := r.api.body(r.ep.Model, r.system, messages)
	if set != nil && len(set.Tools) > 0 {
		body = append(body, member{"tools", set.JSON})
	}
	for _, f := range r.fields {
		body = body.Set(f.Key, f.Val)
	}
	return ordered.Append(nil, body)
}

// step is what one response brought.
type step struct {
	messages []json.RawMessage // to append to the conversation
	text     string            // what the model said
	calls    bool              // it asks for tool calls, which Dispatch reads from messages
	usage    chatadapter.Usage
	cut      string // the provider's sign that the response was cut at its output limit, "" if not
	finish   string // why the model stopped, in the words of Transcript.Finish
	raw      string // the provider's own word for it
}

// The values of Transcript.Finish: why the model stopped, the same words
// for every provider.
const (
	finishStop      = "stop"           // it answered
	finishLength    = "length"         // cut at the output limit (ErrTruncated)
	finishToolCalls = "tool_calls"     // it asked for tool calls
	finishFilter    = "content_filter" // the provider's safety or content filter stopped it, or blocked the prompt
	finishRefusal   = "refusal"        // the model declined to answer
	finishMalformed = "malformed_call" // it wrote a tool call the provider could not read
	finishPause     = "pause"          // it paused a long turn (Anthropic's pause_turn): a new message lets it go on
	finishOther     = "other"          // another reason
)

// finishOf is the finish of a response whose provider said raw, which
// words maps (stop when raw is ""): tool_calls whenever it asks for
// calls, which Run then runs.
func finishOf(words map[string]string, raw string, calls bool) string {
	switch f, ok := words[raw]; {
	case calls && f != finishLength:
		return finishToolCalls
	case ok:
		return f
	case raw == "":
		return finishStop
	}
	return finishOther
}

// ErrTruncated is wrapped by Run's error when the provider cut the
// model's response at its output limit (finish_reason "length",
// stop_reason "max_tokens", finishReason "MAX_TOKENS", status
// "incomplete"): its tool calls may be cut too, so Run neither runs them
// nor keeps the response. The transcript ends before it; raise the limit
// in Options.RequestFields, or ask for less, and send it again.
var ErrTruncated = errors.New("chatadapter: the model's response was cut at its output limit")

// addUsage sums two requests' usage.
func addUsage(u, v chatadapter.Usage) chatadapter.Usage {
	return chatadapter.Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedTokens: u.CachedTokens + v.CachedTokens, CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens: u.ReasoningTokens + v.ReasoningTokens}
}
