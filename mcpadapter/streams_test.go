package mcpadapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/mcpadapter"
)

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

// seq returns the event number of an ID "<stream>-<seq>".
func seq(t *testing.T, id string) int {
	t.Helper()
	_, n, ok := strings.Cut(id, "-")
	require.True(t, ok, id)
	i, err := strconv.Atoi(n)
	require.NoError(t, err, id)
	return i
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
	// A change of the default tenant ("", which the registry does not tell
	// apart from a change of every tenant) tells of all three lists.
	changed := []string{"notifications/tools/list_changed ", "notifications/prompts/list_changed ", "notifications/resources/list_changed "}
	require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", true))
	ev := nextEvent(t, bufio.NewReader(resp.Body))
	require.Equal(t, changed[0], describe(t, ev))
	require.NotEmpty(t, ev.ID)
	cancel()
	resp.Body.Close()

	require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", false))
	get := c.resume(t, ev.ID)
	require.Equal(t, http.StatusOK, get.StatusCode)
	events := bufio.NewReader(get.Body)
	for i, want := range append(changed[1:], changed...) {
		again := nextEvent(t, events)
		require.Equal(t, want, describe(t, again))
		require.Equal(t, seq(t, ev.ID)+1+i, seq(t, again.ID))
	}
}

// TestStreamReplayBounded checks that the event store keeps the last
// Options.ReplayEvents events of a stream: a Last-Event-ID whose following
// events are no longer kept, or that names no event of the session, gets
// 400 Bad Request, and one still kept replays what followed it.
func TestStreamReplayBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &mcpadapter.Options{ReplayEvents: 2})
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := openSession(t, ts.URL, "2025-11-25")
	other := openSession(t, ts.URL, "2025-11-25")

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	resp, err := rawHTTP.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	stream := bufio.NewReader(resp.Body)
	var ids []string
	for i := range 2 {
		require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", i%2 == 0))
		for range 3 { // tools, prompts and resources list_changed
			ev := nextEvent(t, stream)
			require.Contains(t, describe(t, ev), "/list_changed")
			ids = append(ids, ev.ID)
		}
	}
	cancel()
	resp.Body.Close()

	for _, tc := range []struct {
		name, session, id string
	}{
		{"not an ID", c.session, "banana"},
		{"no such stream", c.session, "9-1"},
		{"another session's event", other.session, ids[5]},
		{"events no longer kept", c.session, ids[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := (&rpc{url: ts.URL, session: tc.session}).resume(t, tc.id)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Equal(t, "Unknown Last-Event-ID\n", readAll(t, resp.Body))
		})
	}
	get := c.resume(t, ids[4])
	require.Equal(t, http.StatusOK, get.StatusCode)
	again := nextEvent(t, bufio.NewReader(get.Body))
	require.Equal(t, "notifications/resources/list_changed ", describe(t, again))
	require.Equal(t, ids[5], again.ID)
}
