package mcpadapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
)

// gates are the channels poll_count waits at, by name: a test closes one
// to let its call go on.
var gates sync.Map

type pollIn struct {
	Gate string `json:"gate"`
}

// pollCount closes its call's connection mid-call (mcpadapter.CloseStream)
// and counts on: one progress before, a log line and a progress while the
// client is away, and, once its gate opens, one more progress.
var pollCount = llmtool.Read("poll_count", "Count to three, closing the call's connection after one.",
	func(c *llmtool.ReadCtx, in pollIn) (statusOut, error) {
		c.Progress(1, 3, "before")
		c.Log(slog.LevelInfo, fmt.Sprintf("closed: %t", mcpadapter.CloseStream(c)))
		c.Progress(2, 3, "away")
		if g, ok := gates.Load(in.Gate); ok {
			select {
			case <-g.(chan struct{}):
			case <-c.Done():
				return statusOut{}, c.Err()
			}
		}
		c.Progress(3, 3, "after")
		return statusOut{Status: "done"}, nil
	})

// newPollFixture is a fixture with poll_count.
func newPollFixture(t *testing.T, opts *mcpadapter.Options) *fixture {
	t.Helper()
	f := newFixture(t, opts)
	require.NoError(t, f.reg.Add(llmtool.DefineTools("polls", pollCount)))
	return f
}

// sseEvent is one event block of an SSE body.
type sseEvent struct {
	ID, Retry, Data string
}

func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, block := range strings.Split(strings.TrimSpace(body), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.ID = value
			case "retry":
				ev.Retry = value
			case "data":
				ev.Data = value
			case "event":
				require.Equal(t, "message", value)
			default:
				t.Fatalf("unexpected SSE line %q", line)
			}
		}
		out = append(out, ev)
	}
	return out
}

// describe names an event's message: "priming", "retry", the method and
// the progress message or log line, or "result <JSON>".
func describe(t *testing.T, ev sseEvent) string {
	t.Helper()
	switch {
	case ev.Data == "" && ev.ID != "":
		return "priming retry=" + ev.Retry
	case ev.Data == "":
		return "retry=" + ev.Retry
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
			Data    string `json:"data"`
		} `json:"params"`
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(ev.Data), &msg), ev.Data)
	if msg.Method == "" {
		var res struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		require.NoError(t, json.Unmarshal(msg.Result, &res))
		return "result " + string(res.StructuredContent)
	}
	return msg.Method + " " + msg.Params.Message + msg.Params.Data
}

// openSession initializes a session of revision rev.
func openSession(t *testing.T, url, rev string) *rpc {
	t.Helper()
	c := &rpc{url: url}
	resp, body := c.post(t, strings.Replace(initialize, "2025-11-25", rev, 1))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	c.session = resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, c.session)
	resp, _ = c.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	return c
}

// resume sends a GET with Last-Event-ID and returns the response, whose
// headers have arrived.
func (c *rpc) resume(t *testing.T, lastEventID string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Last-Event-ID", lastEventID)
	resp, err := rawHTTP.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(b)
}

func newGate(t *testing.T) (string, func()) {
	name := t.Name()
	ch := make(chan struct{})
	gates.Store(name, ch)
	var once sync.Once
	open := func() { once.Do(func() { close(ch) }) }
	t.Cleanup(func() { open(); gates.Delete(name) })
	return name, open
}

func pollCall(gate string) string {
	return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"poll_count","arguments":{"gate":"` + gate + `"},"_meta":{"progressToken":"p"}}}`
}

// seq returns the event number of an ID "<stream>-<seq>".
func seq(t *testing.T, id string) int {
	t.Helper()
	_, n, ok := strings.Cut(id, "-")
	require.True(t, ok, id)
	i, err := strconv.Atoi(n)
	require.NoError(t, err, id)
	return i
}

// TestStreamResume checks that a call whose connection the server closed
// mid-call (revision 2025-11-25) is resumed with Last-Event-ID: the
// client gets the events it missed, then the rest, and the result, each
// once and in order; and that the ended call's stream replays the same
// again from the same ID.
func TestStreamResume(t *testing.T) {
	t.Parallel()
	f := newPollFixture(t, nil)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := openSession(t, ts.URL, "2025-11-25")
	gate, open := newGate(t)

	resp, body := c.post(t, pollCall(gate))
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	first := parseSSE(t, body)
	var got []string
	for _, ev := range first {
		got = append(got, describe(t, ev))
	}
	require.Equal(t, []string{"priming retry=1000", "notifications/progress before", "retry=1000"}, got)
	require.Equal(t, 1, seq(t, first[0].ID))
	require.Equal(t, 2, seq(t, first[1].ID))
	last := first[1].ID

	get := c.resume(t, last)
	require.Equal(t, http.StatusOK, get.StatusCode)
	require.Equal(t, "text/event-stream", get.Header.Get("Content-Type"))
	open()
	rest := parseSSE(t, readAll(t, get.Body))
	want := []string{
		"notifications/message closed: true",
		"notifications/progress away",
		"notifications/progress after",
		`result {"status":"done"}`,
	}
	got = nil
	for i, ev := range rest {
		got = append(got, describe(t, ev))
		require.Equal(t, 3+i, seq(t, ev.ID), "event IDs follow on from %s", last)
	}
	require.Equal(t, want, got)

	// The call ended: resuming from the same ID replays the same events.
	again := c.resume(t, last)
	require.Equal(t, http.StatusOK, again.StatusCode)
	got = nil
	for _, ev := range parseSSE(t, readAll(t, again.Body)) {
		got = append(got, describe(t, ev))
	}
	require.Equal(t, want, got)
}

// TestStreamResumeRefused checks the answer to a Last-Event-ID that
// cannot be resumed from: 400 with a JSON-RPC error saying why.
func TestStreamResumeRefused(t *testing.T) {
	t.Parallel()
	f := newPollFixture(t, &mcpadapter.Options{ReplayEvents: 2})
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := openSession(t, ts.URL, "2025-11-25")
	other := openSession(t, ts.URL, "2025-11-25")
	gate, open := newGate(t)
	open()
	_, body := c.post(t, pollCall(gate))
	events := parseSSE(t, body)
	require.Equal(t, "priming retry=1000", describe(t, events[0]))
	priming := events[0].ID

	unknown := func(id string) string {
		return fmt.Sprintf("Last-Event-ID %q names no event of this session's streams; resume with the ID of the last event you received on the stream, or open a new GET stream without Last-Event-ID.", id)
	}
	for _, tc := range []struct {
		name, session, id, message string
	}{
		{"not an ID", c.session, "banana", unknown("banana")},
		{"no such stream", c.session, "9-1", unknown("9-1")},
		{"an event not sent yet", c.session, "1-99", unknown("1-99")},
		{"another session's event", other.session, priming, unknown(priming)},
		{"events no longer kept", c.session, priming, fmt.Sprintf("Last-Event-ID %q can no longer be resumed: the events after it were not kept (a stream keeps its last events for a while only); what was sent since cannot be redelivered. Open a new GET stream without Last-Event-ID, and send again the requests whose answers you did not get.", priming)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &rpc{url: ts.URL, session: tc.session}
			resp := r.resume(t, tc.id)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var msg struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(readAll(t, resp.Body)), &msg))
			require.Equal(t, -32600, msg.Error.Code)
			require.Equal(t, tc.message, msg.Error.Message)
		})
	}
}

// TestStreamRevisions checks which streams carry event IDs and a priming
// event, and where CloseStream closes the connection: only at 2025-11-25;
// earlier revisions from 2025-03-26 get IDs, 2024-11-05 and a server
// without replay none.
func TestStreamRevisions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rev     string
		opts    *mcpadapter.Options
		ids     bool
		closed  bool
		summary []string
	}{
		{"2025-11-25", nil, true, true, []string{"priming retry=1000", "notifications/progress before", "retry=1000"}},
		{"2025-06-18", nil, true, false, nil},
		{"2025-03-26", nil, true, false, nil},
		{"2024-11-05", nil, false, false, nil},
		{"2025-11-25", &mcpadapter.Options{ReplayEvents: -1}, false, false, nil},
	} {
		t.Run(fmt.Sprintf("%s replay %v", tc.rev, tc.opts == nil), func(t *testing.T) {
			t.Parallel()
			f := newPollFixture(t, tc.opts)
			ts := httptest.NewServer(f.srv.Handler())
			t.Cleanup(ts.Close)
			c := openSession(t, ts.URL, tc.rev)
			gate, open := newGate(t)
			if !tc.closed {
				open()
			}
			_, body := c.post(t, pollCall(gate))
			open()
			var got []string
			for _, ev := range parseSSE(t, body) {
				got = append(got, describe(t, ev))
				require.Equal(t, tc.ids, ev.ID != "" || ev.Data == "", "event %+v", ev)
			}
			if tc.summary != nil {
				require.Equal(t, tc.summary, got)
				return
			}
			require.Equal(t, []string{
				"notifications/progress before",
				"notifications/message closed: false",
				"notifications/progress away",
				"notifications/progress after",
				`result {"status":"done"}`,
			}, got)
		})
	}
}

// nextEvent reads one event block from an SSE stream.
func nextEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var block []string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimRight(line, "\n")
		if line == "" && len(block) > 0 {
			return parseSSE(t, strings.Join(block, "\n"))[0]
		}
		if line != "" {
			block = append(block, line)
		}
	}
}

// TestStreamResumeGET checks that the session's GET stream, which mcp-go
// writes, is resumable from the same store: a notification sent while no
// GET stream is open arrives when the client resumes with Last-Event-ID.
func TestStreamResumeGET(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := openSession(t, ts.URL, "2025-11-25")

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	resp, err := rawHTTP.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", true))
	ev := nextEvent(t, bufio.NewReader(resp.Body))
	require.Equal(t, "notifications/tools/list_changed ", describe(t, ev))
	require.NotEmpty(t, ev.ID)
	cancel()
	resp.Body.Close()

	require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", false))
	get := c.resume(t, ev.ID)
	require.Equal(t, http.StatusOK, get.StatusCode)
	again := nextEvent(t, bufio.NewReader(get.Body))
	require.Equal(t, "notifications/tools/list_changed ", describe(t, again))
	require.Equal(t, seq(t, ev.ID)+1, seq(t, again.ID))
}
