package chatadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
	"github.com/stretchr/testify/require"
)

// The streaming fixture: the shop with its changes tracked, and
// hold_item, a write that inserts a row and then waits for its context
// to end, as a long write the person stops.

type holdKey struct{}

var holdItem = llmtool.Write("hold_item", "Add an item slowly.",
	func(c *llmtool.WriteCtx, in AddItemIn) (ItemOut, error) {
		if _, err := c.Exec(`INSERT INTO items (name, qty) VALUES (?, 1)`, in.Name); err != nil {
			return ItemOut{}, err
		}
		close(c.Value(holdKey{}).(chan struct{})) // the row is written, not committed
		<-c.Done()
		return ItemOut{}, c.Err()
	}, llmtool.FriendlyName("Add item slowly"))

var slowShop = llmtool.DefineTools("slow", holdItem)

func newStreamFixture(t *testing.T) *fixture {
	t.Helper()
	db := openDB(t)
	_, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0);
		INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(t, err)
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Changesets: changeset.Config{Tables: []string{"items"}, Tools: true}}, shop, slowShop)
	require.NoError(t, err)
	ctx := llmtool.WithPrincipal(llmtool.WithTenant(context.Background(), tenant), &llmtool.Principal{ID: "ada"})
	require.NoError(t, reg.Tenants().SetWrites(ctx, tenant, true))
	return &fixture{db: db, reg: reg, a: chatadapter.New(reg, nil), ctx: ctx}
}

// recorder keeps a turn's events.
type recorder struct {
	mu     sync.Mutex
	events []chatadapter.Event
}

func (r *recorder) add(e chatadapter.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// lines are the events as "kind: label" lines, text pieces joined.
func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Kind == chatadapter.ModelRequest || e.Kind == chatadapter.ReasoningDelta || e.Kind == chatadapter.CallInputDelta {
			continue // the answer's text only (see TestStreamPieces)
		}
		out = append(out, fmt.Sprintf("%s: %s", kindName[e.Kind], e.Label))
	}
	return out
}

func (r *recorder) of(kind chatadapter.EventKind) []chatadapter.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []chatadapter.Event
	for _, e := range r.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

var kindName = map[chatadapter.EventKind]string{
	chatadapter.CallStarted: "started", chatadapter.CallFinished: "finished", chatadapter.CallPaused: "paused",
	chatadapter.CallProgress: "progress", chatadapter.ModelRetry: "retry", chatadapter.ModelReply: "reply",
	chatadapter.TextDelta: "delta", chatadapter.TurnEnded: "ended",
}

func streamRunner(t *testing.T, f *fixture, ep run.Endpoint, opts *run.Options) *run.Runner {
	t.Helper()
	if opts == nil {
		opts = &run.Options{}
	}
	opts.Stream = true
	r, err := run.New(f.a, ep, opts)
	require.NoError(t, err)
	return r
}

// A streamed turn is the turn without streaming: the same transcript and
// the same requests but for "stream", its text reported piece by piece
// before the step's reply.
func TestStreamSameTurn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		replies []chattest.Reply
		events  []string
	}{
		{"text only", []chattest.Reply{{Text: "Hello there, shopper.", Usage: chatadapter.Usage{PromptTokens: 5, CompletionTokens: 4}}},
			[]string{"delta: Hello", "delta:  there,", "delta:  shopper.", "reply: Hello there, shopper.", "ended: Hello there, shopper."}},
		{"calls, then the answer", []chattest.Reply{
			{Text: "Let me look.", Calls: []chattest.Call{{Name: "get_item", Args: `{"id":1}`}, {Name: "add_item", Args: `{"name":"pear","qty":2}`}},
				Usage: chatadapter.Usage{PromptTokens: 20, CompletionTokens: 9, CachedTokens: 4}},
			{Text: "Apple read, pear added.", Usage: chatadapter.Usage{PromptTokens: 40, CompletionTokens: 6}}},
			[]string{"delta: Let", "delta:  me", "delta:  look.", "reply: Let me look.",
				"started: Read item…", "finished: Read item… done", "started: Add item…", "progress: Add item… 1/1 saved", "finished: Add item… done",
				"delta: Apple", "delta:  read,", "delta:  pear", "delta:  added.", "reply: Apple read, pear added.", "ended: Apple read, pear added."}},
		{"calls without text", []chattest.Reply{{Calls: []chattest.Call{{Name: "list_items"}}}, {Text: "One."}},
			[]string{"reply: ", "started: List items…", "finished: List items… done", "delta: One.", "reply: One.", "ended: One."}},
	}
	shapes := []chatadapter.Shape{chatadapter.OpenAIChat, chatadapter.OpenAIResponses, chatadapter.Anthropic, chatadapter.Gemini}
	for _, shape := range shapes {
		for _, tt := range tests {
			t.Run(shape.String()+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				testStreamSameTurn(t, shape, tt.replies, tt.events)
			})
		}
	}
}

func testStreamSameTurn(t *testing.T, shape chatadapter.Shape, replies []chattest.Reply, events []string) {
	var transcripts [2]*run.Transcript
	var requests [2][]chattest.Request
	for i, stream := range []bool{false, true} {
		f := newStreamFixture(t)
		srv := chattest.NewServer(shape, replies...)
		defer srv.Close()
		rec := &recorder{}
		r, err := run.New(f.a, srv.Endpoint(), &run.Options{Stream: stream})
		require.NoError(t, err)
		tr, err := r.Run(chatadapter.WithEvents(f.ctx, rec.add), []json.RawMessage{run.TextMessage(shape, "user", "Go.")})
		require.NoError(t, err)
		transcripts[i], requests[i] = tr, srv.Requests()
		if stream {
			require.Equal(t, events, rec.lines())
		} else {
			require.Empty(t, rec.of(chatadapter.TextDelta))
		}
	}
	// The same messages, the tool calls' members in another order:
	// Run keeps an unstreamed answer's calls as the server wrote them.
	require.Len(t, transcripts[1].Messages, len(transcripts[0].Messages))
	for i, m := range transcripts[0].Messages {
		require.JSONEq(t, string(m), string(transcripts[1].Messages[i]))
	}
	require.Equal(t, transcripts[0].Answer, transcripts[1].Answer)
	require.Equal(t, transcripts[0].Usage, transcripts[1].Usage)
	require.Equal(t, transcripts[0].StepUsage, transcripts[1].StepUsage)
	require.Equal(t, len(requests[0]), len(requests[1]))
	for i := range requests[0] {
		require.Len(t, requests[1][i].Messages, len(requests[0][i].Messages))
		for j, m := range requests[0][i].Messages {
			require.JSONEq(t, string(m), string(requests[1][i].Messages[j]))
		}
		switch shape {
		case chatadapter.Gemini: // a URL of its own, the body the same
			require.Equal(t, "/v1beta/models/scripted-model:streamGenerateContent", requests[1][i].Path)
			require.Equal(t, "sse", requests[1][i].Query.Get("alt"))
			require.Equal(t, slices.Sorted(maps.Keys(requests[0][i].Body)), slices.Sorted(maps.Keys(requests[1][i].Body)))
		case chatadapter.OpenAIChat:
			require.Equal(t, `{"include_usage":true}`, string(requests[1][i].Body["stream_options"]))
			fallthrough
		default:
			require.Equal(t, "true", string(requests[1][i].Body["stream"]))
			require.Equal(t, requests[0][i].Path, requests[1][i].Path)
		}
	}
}

// sse answers with the given data lines as server-sent events.
func sse(data ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range data {
			fmt.Fprintf(w, "data: %s\n\n", d)
		}
	}
}

func delta(d string) string {
	return `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":` + d + `,"finish_reason":null}]}`
}

func finish(reason string) string {
	return `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

// Tool calls come in fragments: by index, interleaved, their arguments
// as a string in pieces or as an object, or, from servers that send no
// index, a call per new id.
func TestStreamToolCallFragments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		chunks []string
		want   string // the assistant message kept
	}{
		{"interleaved by index", []string{
			delta(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get_item","arguments":""}}]}`),
			delta(`{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"add_item","arguments":"{\"na"}}]}`),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"id\""}}]}`),
			delta(`{"tool_calls":[{"index":1,"function":{"arguments":"me\":\"fig\"}"}}]}`),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`),
			finish("tool_calls"), "[DONE]"},
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}},` +
				`{"id":"c2","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"fig\"}"}}]}`},
		{"no index, whole calls, arguments as objects", []string{
			delta(`{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"get_item","arguments":{"id":1}}}]}`),
			delta(`{"tool_calls":[{"id":"c2","function":{"name":"add_item","arguments":{"name":"fig"}}}]}`),
			finish("tool_calls"), "[DONE]"},
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}},` +
				`{"id":"c2","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"fig\"}"}}]}`},
		{"text and a call, no [DONE]", []string{
			delta(`{"role":"assistant","content":"Sure."}`),
			delta(`{"tool_calls":[{"index":0,"id":"c1","function":{"name":"get_item","arguments":"{\"id\":1}"}}]}`),
			delta(`{"tool_calls":[{"index":1,"id":"c2","function":{"name":"add_item","arguments":"{\"name\":\"fig\"}"}}]}`),
			finish("tool_calls")},
			`{"role":"assistant","content":"Sure.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}},` +
				`{"id":"c2","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"fig\"}"}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newStreamFixture(t)
			m := newModel(t, sse(tt.chunks...), sse(delta(`{"content":"Done."}`), finish("stop"), "[DONE]"))
			tr, err := streamRunner(t, f, m.endpoint(), nil).Run(f.ctx, []json.RawMessage{run.UserMessage("Go.")})
			require.NoError(t, err)
			require.Equal(t, "Done.", tr.Answer)
			require.Equal(t, tt.want, string(tr.Messages[1]))
			require.Equal(t, []string{`c1 {"id":1,"name":"apple","qty":3}`, `c2 {"id":2,"name":"fig","qty":1}`}, texts(tr.Outcomes))
			require.Equal(t, [][3]any{{1, "apple", 3}, {2, "fig", 1}}, f.rows(t))
		})
	}
}

// A stream that fails: the error says how, and a stream that broke before
// the model's first words is tried again, one that broke after is not.
func TestStreamErrors(t *testing.T) {
	t.Parallel()
	ok := sse(delta(`{"content":"Fine."}`), finish("stop"), "[DONE]")
	tests := []struct {
		name     string
		replies  []func(http.ResponseWriter, *http.Request)
		err      string // "" for none
		requests int
		deltas   []string
	}{
		{"an error in the stream", []func(http.ResponseWriter, *http.Request){
			sse(delta(`{"content":"Hm"}`), `{"error":{"message":"The server had an error.","type":"server_error"}}`)},
			`chatadapter: POST URL: the endpoint sent an error in the stream: {"message":"The server had an error.","type":"server_error"}`, 1, []string{"Hm"}},
		{"a bad request before any text is not retried either", []func(http.ResponseWriter, *http.Request){
			sse(`{"error":{"message":"Bad tools.","type":"invalid_request_error"}}`), ok},
			`chatadapter: POST URL: the endpoint sent an error in the stream: {"message":"Bad tools.","type":"invalid_request_error"}`, 1, nil},
		{"a server error before any text: retried as a 500", []func(http.ResponseWriter, *http.Request){
			sse(`{"error":{"message":"The server had an error.","type":"server_error"}}`), ok},
			"", 2, []string{"Fine."}},
		{"the stream ends early", []func(http.ResponseWriter, *http.Request){
			sse(delta(`{"content":"Half"}`))},
			"chatadapter: POST URL: the stream ended before the answer did (no finish_reason, no [DONE])", 1, []string{"Half"}},
		{"broken after text: not retried", []func(http.ResponseWriter, *http.Request){broken(delta(`{"content":"Half"}`)), ok},
			"chatadapter: POST URL: unexpected EOF", 1, []string{"Half"}},
		{"broken before text: retried", []func(http.ResponseWriter, *http.Request){broken(delta(`{"role":"assistant"}`)), ok},
			"", 2, []string{"Fine."}},
		{"a chunk that is not JSON", []func(http.ResponseWriter, *http.Request){sse(`{"choices":`)},
			"chatadapter: POST URL: a stream chunk is not a chat completion chunk (unexpected end of JSON input): {\"choices\":", 1, nil},
		{"a call index out of reach", []func(http.ResponseWriter, *http.Request){
			sse(delta(`{"tool_calls":[{"index":5000,"id":"c1","function":{"name":"get_item"}}]}`))},
			"chatadapter: POST URL: a stream chunk's tool call has index 5000; at most 1024 calls are read", 1, nil},
		{"cut at the output limit", []func(http.ResponseWriter, *http.Request){sse(delta(`{"content":"Lo"}`), finish("length"), "[DONE]")},
			`chatadapter: POST URL: chatadapter: the model's response was cut at its output limit (finish_reason "length"): raise max_completion_tokens in run.Options.RequestFields, or ask for less; the transcript ends before this response, so Run can send it again`,
			1, []string{"Lo"}},
		{"a server that does not stream", []func(http.ResponseWriter, *http.Request){reply(answer("Whole."))}, "", 1, nil},
		{"a status error before the stream: retried", []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }, ok},
			"", 2, []string{"Fine."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newModel(t, tt.replies...)
			want := strings.ReplaceAll(tt.err, "URL", m.srv.URL+"/v1/chat/completions")
			streamCase(t, m, m.endpoint(), []json.RawMessage{run.UserMessage("Go.")}, tt.deltas, tt.requests, want)
		})
	}
}

// streamCase runs a streamed turn against m and checks the text pieces
// it reported, the requests it sent, and how it ended: without an error
// when err is "", else with err, the transcript ending before the failed
// request.
func streamCase(t *testing.T, m *model, ep run.Endpoint, in []json.RawMessage, deltas []string, requests int, err string) {
	t.Helper()
	f := newStreamFixture(t)
	rec := &recorder{}
	tr, got := streamRunner(t, f, ep, &run.Options{RetryDelay: 1}).Run(chatadapter.WithEvents(f.ctx, rec.add), in)
	var pieces []string
	for _, e := range rec.of(chatadapter.TextDelta) {
		pieces = append(pieces, e.Text)
	}
	require.Equal(t, deltas, pieces)
	require.Len(t, m.requests(), requests)
	ended := rec.of(chatadapter.TurnEnded)
	require.Len(t, ended, 1)
	if err == "" {
		require.NoError(t, got)
		require.NoError(t, ended[0].Err)
		return
	}
	require.EqualError(t, got, err)
	require.Equal(t, got, ended[0].Err)
	require.Equal(t, in, tr.Messages, "the transcript ends before the failed request")
}

// Stop while the model writes: the request ends, nothing ran, the
// transcript keeps the text the person saw, cut, without the call that
// had begun.
func TestStreamCancelWhileWriting(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t)
	m := newModel(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", delta(`{"content":"Adding"}`))
		fmt.Fprintf(w, "data: %s\n\n", delta(`{"tool_calls":[{"index":0,"id":"c1","function":{"name":"add_item","arguments":"{\"name\":"}}]}`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	rec := &recorder{}
	ctx = chatadapter.WithEvents(ctx, func(e chatadapter.Event) {
		rec.add(e)
		if e.Kind == chatadapter.TextDelta {
			cancel() // the person presses Stop
		}
	})
	in := []json.RawMessage{run.UserMessage("Add a pear.")}
	tr, err := streamRunner(t, f, m.endpoint(), nil).Run(ctx, in)
	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "chatadapter: run: context canceled")
	require.Equal(t, append(in, json.RawMessage(`{"role":"assistant","content":"Adding"}`)), tr.Messages)
	require.True(t, tr.Cut)
	require.Equal(t, "Adding", tr.Answer)
	require.Zero(t, tr.Steps)
	require.Empty(t, rec.of(chatadapter.CallStarted))
	require.Equal(t, []string{"delta: Adding", "ended: Adding"}, rec.lines())
	require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))
	require.Len(t, m.requests(), 1)
}

// Stop while a write runs: its row is rolled back, the calls after it
// report that they were cancelled, the one before it stays committed, and
// every call has its result, so the conversation goes on.
func TestStreamCancelDuringWrite(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t)
	srv := chattest.NewServer(chatadapter.OpenAIChat,
		chattest.Reply{Calls: []chattest.Call{{Name: "add_item", Args: `{"name":"pear"}`}, {Name: "hold_item", Args: `{"name":"fig"}`},
			{Name: "add_item", Args: `{"name":"kiwi"}`}}},
		chattest.Reply{Text: "Nothing more then."})
	defer srv.Close()
	held := make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithValue(f.ctx, holdKey{}, held))
	defer cancel()
	go func() {
		<-held // the fig is written, not committed
		cancel()
	}()
	rec := &recorder{}
	r := streamRunner(t, f, srv.Endpoint(), nil)
	tr, err := r.Run(chatadapter.WithEvents(chatadapter.WithConversation(ctx, "conv-1"), rec.add), []json.RawMessage{run.UserMessage("Add three.")})
	require.EqualError(t, err, "chatadapter: run: context canceled")
	require.Equal(t, [][3]any{{1, "apple", 3}, {2, "pear", 1}}, f.rows(t), "the fig rolled back, the kiwi never ran")
	require.Len(t, tr.Messages, 5, "the user, the calls, a result for each")
	require.Equal(t, []string{
		`call_1_1 {"id":2,"name":"pear","qty":1}`,
		"call_1_2 The call to hold_item was cancelled before it finished; nothing was saved. Call it again if it is still needed.",
		"call_1_3 The call to add_item was cancelled before it finished; nothing was saved. Call it again if it is still needed.",
	}, texts(tr.Outcomes))
	ended := rec.of(chatadapter.TurnEnded)
	require.Len(t, ended, 1)
	require.ErrorIs(t, ended[0].Err, context.Canceled)

	// The conversation goes on from there: the endpoint accepts it.
	tr, err = r.Run(chatadapter.WithConversation(f.ctx, "conv-1"), append(tr.Messages, run.UserMessage("Well?")))
	require.NoError(t, err)
	require.Equal(t, "Nothing more then.", tr.Answer)
}

// Calls carry the conversation: a write's change is recorded with it, its
// CallFinished event has the changeset with the ID undo needs, and
// undo_changes without an id undoes the conversation's last change.
func TestStreamConversationChanges(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t)
	srv := chattest.NewServer(chatadapter.OpenAIChat,
		chattest.Reply{Calls: []chattest.Call{{Name: "add_item", Args: `{"name":"pear"}`}}}, chattest.Reply{Text: "Added."},
		chattest.Reply{Calls: []chattest.Call{{Name: "undo_changes", Args: `{}`}}}, chattest.Reply{Text: "Undone."})
	defer srv.Close()
	r := streamRunner(t, f, srv.Endpoint(), nil)
	rec := &recorder{}
	ctx := chatadapter.WithEvents(chatadapter.WithConversation(f.ctx, "conv-7"), rec.add)
	tr, err := r.Run(ctx, []json.RawMessage{run.UserMessage("Add a pear.")})
	require.NoError(t, err)
	done := rec.of(chatadapter.CallFinished)
	require.Len(t, done, 1)
	require.Equal(t, `{"name":"pear"}`, string(done[0].Args))
	cs := done[0].Result.Changeset
	require.NotNil(t, cs)
	require.Positive(t, cs.ID)
	require.Equal(t, `insert items (id=2): id=2, name="pear", qty=1`, cs.String())

	tr, err = r.Run(ctx, append(tr.Messages, run.UserMessage("Undo that.")))
	require.NoError(t, err)
	require.Equal(t, "Undone.", tr.Answer)
	require.Equal(t, fmt.Sprintf(`call_3_1 {"undone":[%d]}`, cs.ID), texts(tr.Outcomes)[0])
	require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))
	hist, err := changeset.List(f.ctx, f.db, changeset.Filter{Tenant: tenant, Conversation: "conv-7", Limit: 10})
	require.NoError(t, err)
	require.Len(t, hist, 2, "the write and its undo, both in the conversation")
}

// A streamed turn that pauses for approval: CallPaused carries the preview
// with its exact rows, the turn has not ended, and after it is saved and
// restored by another Runner the resumed run streams on and ends.
func TestStreamPauseAndResume(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t)
	srv := chattest.NewServer(chatadapter.OpenAIChat,
		chattest.Reply{Text: "Removing.", Calls: []chattest.Call{{Name: "remove_item", Args: `{"id":1}`}}},
		chattest.Reply{Text: "Gone."})
	defer srv.Close()
	rec := &recorder{}
	ctx := chatadapter.WithEvents(chatadapter.WithConversation(f.ctx, "conv-2"), rec.add)
	tr, err := streamRunner(t, f, srv.Endpoint(), nil).Run(ctx, []json.RawMessage{run.UserMessage("Remove the apple.")})
	require.NoError(t, err)
	require.NotNil(t, tr.Pending)
	paused := rec.of(chatadapter.CallPaused)
	require.Len(t, paused, 1)
	require.ErrorIs(t, paused[0].Err, approval.ErrRequired)
	p := paused[0].Pending
	require.NotNil(t, p)
	require.Equal(t, "Remove item 1 (apple). (items: 1 deleted)", p.Preview.String())
	require.Equal(t, "delete items (id=1): id=1, name=\"apple\", qty=3", p.Preview.Changeset.String(), "the rows, for the page")
	require.Empty(t, rec.of(chatadapter.TurnEnded), "a paused turn has not ended")

	saved, err := json.Marshal(tr)
	require.NoError(t, err)
	tr, err = streamRunner(t, f, srv.Endpoint(), nil).Restore(saved)
	require.NoError(t, err)
	tr, err = streamRunner(t, f, srv.Endpoint(), nil).Resume(ctx, tr, yes(true))
	require.NoError(t, err)
	require.Equal(t, "Gone.", tr.Answer)
	require.Empty(t, f.rows(t))
	require.Equal(t, []string{"delta: Removing.", "reply: Removing.", "started: Remove item…", "paused: Remove item… needs approval",
		"finished: Remove item… done", "delta: Gone.", "reply: Gone.", "ended: Gone."}, rec.lines())
	done := rec.of(chatadapter.CallFinished)
	require.NotNil(t, done[0].Result.Changeset)
	require.Positive(t, done[0].Result.Changeset.ID)
}

// An unfinished turn cancelled during an approved write's resumption saves
// nothing: the resumed call reports the cancellation.
func TestStreamResumeCancelled(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t)
	srv := chattest.NewServer(chatadapter.OpenAIChat, chattest.Reply{Calls: []chattest.Call{{Name: "remove_item", Args: `{"id":1}`}}})
	defer srv.Close()
	tr, err := streamRunner(t, f, srv.Endpoint(), nil).Run(f.ctx, []json.RawMessage{run.UserMessage("Remove the apple.")})
	require.NoError(t, err)
	require.NotNil(t, tr.Pending)
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	tr, err = streamRunner(t, f, srv.Endpoint(), nil).Resume(ctx, tr, yes(true))
	require.True(t, errors.Is(err, context.Canceled), err)
	require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))
	require.Nil(t, tr.Pending)
	require.Len(t, tr.Messages, 3, "the call has its result")
	require.Equal(t, []string{"call_1_1 The call to remove_item was cancelled before it finished; nothing was saved. Call it again if it is still needed."}, texts(tr.Outcomes))
}
