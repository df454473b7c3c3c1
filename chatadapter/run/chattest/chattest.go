// Package chattest serves scripted models over HTTP, each speaking one
// provider's wire format, as net/http/httptest serves handlers: a host
// tests its chat, built on chatadapter, against OpenAI Chat Completions,
// OpenAI Responses, Anthropic Messages or Gemini without calling them.
//
// A Server answers the n-th request with its n-th Reply: the model's text,
// its tool calls, the usage it reports, a response cut at the output
// limit, or an error status with the provider's error body (a 429 with
// Retry-After, a 529, a 500). Before answering it checks the request as
// the provider would, with the provider's status and error body when the
// request is wrong: the path and method, the API key in the provider's
// header, the members the API requires, and that every tool call in the
// conversation is answered by exactly one result, right after it. It
// records every request for the test to look at.
//
// A request to OpenAI Chat Completions with "stream": true gets its
// answer as OpenAI streams it: server-sent chat.completion.chunk events,
// the text a word at a time, each tool call's name then its arguments in
// pieces, the usage in a last chunk when stream_options.include_usage is
// set, and data: [DONE]. The other APIs stream in their own events:
// OpenAI Responses ("stream": true) from response.created to
// response.completed (or response.incomplete) with the whole response;
// Anthropic ("stream": true) from message_start to message_stop, a
// tool_use block's input in input_json_delta pieces; Gemini
// (streamGenerateContent, in events with alt=sse, else a JSON array)
// as GenerateContentResponse chunks, the last with the finishReason and
// the whole usage.
//
//	srv := chattest.NewServer(chatadapter.Anthropic,
//		chattest.Reply{Calls: []chattest.Call{{Name: "get_note", Args: `{"noteId":"roadmap"}`}}},
//		chattest.Reply{Text: "The roadmap has three items."})
//	defer srv.Close()
//	tr, err := run.Run(ctx, adapter, srv.Endpoint(), messages, nil)
package chattest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
)

// Reply is one scripted answer of the model.
type Reply struct {
	// Text is what the model says: its answer, or what it says along with
	// Calls. With Status, the error's message.
	Text string
	// Calls are the tool calls the model asks for, in order.
	Calls []Call
	// Usage is what the response reports, in each provider's own members
	// (see chatadapter.Usage for the mapping).
	Usage chatadapter.Usage
	// Truncated answers with the provider's sign of a response cut at its
	// output limit: finish_reason "length", status "incomplete",
	// stop_reason "max_tokens", finishReason "MAX_TOKENS".
	Truncated bool
	// Status, if not 0, answers with this HTTP status and the provider's
	// error body, Text its message, instead of a response.
	Status int
	// RetryAfter is an error's Retry-After header, in seconds, such as
	// "0"; for Gemini, which says it in the body, google.rpc.RetryInfo's
	// retryDelay.
	RetryAfter string
}

// Call is a tool call the model asks for.
type Call struct {
	// ID is the call's ID; "" numbers it in the provider's way
	// ("call_1_1", "toolu_1_1"; Gemini sends none).
	ID string
	// Name is the tool's name.
	Name string
	// Args is the arguments' JSON object; "" means {}.
	Args string
}

// Request is a request the server received.
type Request struct {
	Path   string
	Header http.Header
	Query  url.Values
	// Body is the request's JSON object by member.
	Body map[string]json.RawMessage
	// Messages is the conversation: the messages, input or contents.
	Messages []json.RawMessage
}

// Key and Model are what Endpoint gives, and what the server expects.
const (
	Key   = "test-key"
	Model = "scripted-model"
)

// Server is a scripted model of one provider's API.
type Server struct {
	// URL is the server's root, such as http://127.0.0.1:41213.
	URL string

	shape chatadapter.Shape
	srv   *httptest.Server

	mu      sync.Mutex
	replies []Reply
	reqs    []Request
}

// NewServer starts a server speaking shape's API (a strict shape speaks
// its plain one) that answers with replies in order. Close it when done.
func NewServer(shape chatadapter.Shape, replies ...Reply) *Server {
	s := &Server{shape: wire(shape), replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Add scripts more replies, after those not used yet.
func (s *Server) Add(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Endpoint returns the endpoint to reach the server: its shape, the API
// root under URL ("/v1", or "/v1beta" for Gemini), Key and Model.
func (s *Server) Endpoint() run.Endpoint {
	root, _, _ := strings.Cut(apiOf(s.shape).path()[1:], "/") // "v1", or Gemini's "v1beta"
	return run.Endpoint{Shape: s.shape, BaseURL: s.URL + "/" + root, APIKey: Key, Model: Model}
}

// Requests returns the requests received so far, in order, those refused
// included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// wire is the API a shape's requests go to.
func wire(s chatadapter.Shape) chatadapter.Shape {
	switch s {
	case chatadapter.OpenAIChatStrict:
		return chatadapter.OpenAIChat
	case chatadapter.OpenAIResponsesStrict:
		return chatadapter.OpenAIResponses
	}
	return s
}

// api is one provider's API as the server speaks it, each in a file of
// its own (openai_chat.go, openai_responses.go, anthropic.go, gemini.go).
type api interface {
	// path is where the API takes a request; streamPath where it
	// streams, "" when it streams from path by the body's "stream".
	path() string
	streamPath() string
	required() []string // the body's required members
	history() string    // the member holding the conversation
	authorized(r *http.Request) bool
	// response is the answer to request n, as JSON's values; stream
	// sends it as the API streams it.
	response(n int, rep Reply) map[string]any
	stream(e *events, n int, rep Reply, req Request)
	// failure is the error body for rep.Status with rep.Text; it sets
	// the headers the API sends with one (Retry-After).
	failure(h http.Header, rep Reply) any
	// turnOf reads one message of a conversation: the IDs of the tool
	// calls it makes and of the calls its results answer, and whether it
	// starts a new turn, before which every call must have its result.
	turnOf(raw json.RawMessage) (calls, results []string, opens bool)
}

// apiOf is the API of a shape (wire's).
func apiOf(shape chatadapter.Shape) api {
	switch shape {
	case chatadapter.OpenAIResponses:
		return openAIResponses{}
	case chatadapter.Anthropic:
		return anthropic{}
	case chatadapter.Gemini:
		return gemini{}
	}
	return openAIChat{}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	req := Request{Path: r.URL.Path, Header: r.Header.Clone(), Query: r.URL.Query()}
	bodyErr := json.NewDecoder(r.Body).Decode(&req.Body)
	a := apiOf(s.shape)
	_ = json.Unmarshal(req.Body[a.history()], &req.Messages) // checkHistory refuses what does not read
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	switch {
	case r.Method != http.MethodPost:
		s.fail(w, Reply{Status: http.StatusMethodNotAllowed, Text: r.Method + " is not allowed; POST the request"})
		return
	case r.URL.Path != a.path() && r.URL.Path != a.streamPath():
		s.fail(w, Reply{Status: http.StatusNotFound, Text: fmt.Sprintf("no such endpoint %s; this API answers POST %s", r.URL.Path, a.path())})
		return
	case !a.authorized(r):
		s.fail(w, Reply{Status: http.StatusUnauthorized, Text: "invalid API key"})
		return
	case bodyErr != nil:
		s.fail(w, Reply{Status: http.StatusBadRequest, Text: "the body is not a JSON object: " + bodyErr.Error()})
		return
	}
	for _, m := range a.required() {
		if _, ok := req.Body[m]; !ok {
			s.fail(w, Reply{Status: http.StatusBadRequest, Text: m + ": field required"})
			return
		}
	}
	if err := checkHistory(a, req.Messages); err != nil {
		s.fail(w, Reply{Status: http.StatusBadRequest, Text: err.Error()})
		return
	}
	s.mu.Lock()
	var rep Reply
	ok := n < len(s.replies)
	if ok {
		rep = s.replies[n]
	}
	s.mu.Unlock()
	switch {
	case !ok:
		s.fail(w, Reply{Status: http.StatusBadRequest, Text: fmt.Sprintf("chattest: request %d has no scripted reply", n+1)})
	case rep.Status != 0:
		s.fail(w, rep)
	case a.streamPath() == "" && string(req.Body["stream"]) == "true", r.URL.Path == a.streamPath():
		stream(w, a, n+1, rep, req) // events.go
	default:
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(a.response(n+1, rep))
		_, _ = w.Write(b) // an error: the client went away
	}
}

// fail answers with rep's status and the provider's error body.
func (s *Server) fail(w http.ResponseWriter, rep Reply) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(apiOf(s.shape).failure(w.Header(), rep))
	w.WriteHeader(rep.Status)
	_, _ = w.Write(b) // an error: the client went away
}

// checkHistory refuses a conversation in which a tool call is not
// answered by exactly one result right after it, as the providers do.
func checkHistory(a api, msgs []json.RawMessage) error {
	var open []string // the calls of the last assistant turn without a result
	answer := func(id string) error {
		for i, o := range open {
			if o == id {
				open = append(open[:i], open[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("a tool result for %q answers no call of the assistant turn before it", id)
	}
	for i, raw := range msgs {
		calls, results, opens := a.turnOf(raw)
		if len(open) > 0 && opens {
			return fmt.Errorf("messages[%d]: the tool calls %s have no result; every call needs one right after its turn", i, strings.Join(open, ", "))
		}
		for _, id := range results {
			if err := answer(id); err != nil {
				return fmt.Errorf("messages[%d]: %w", i, err)
			}
		}
		open = append(open, calls...)
	}
	if len(open) > 0 {
		return fmt.Errorf("the tool calls %s have no result; every call needs one right after its turn", strings.Join(open, ", "))
	}
	return nil
}

// The wire's helpers.

func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

func callID(c Call, prefix string, n, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("%s_%d_%d", prefix, n, i+1)
}

func args(c Call) json.RawMessage {
	if strings.TrimSpace(c.Args) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(c.Args)
}
