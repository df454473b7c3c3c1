package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// wireTap records the messages a handler puts on the wire, over all its
// responses, in the order they leave: an SSE event when it is flushed, the
// rest of a response when its handler returns.
type wireTap struct {
	h  http.Handler
	mu sync.Mutex
	on []string // each message's data, in order
}

func (tp *wireTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tw := &tapWriter{ResponseWriter: w, tap: tp}
	tp.h.ServeHTTP(tw, r)
	tw.record()
}

// since returns the messages recorded from the nth on.
func (tp *wireTap) since(n int) []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]string(nil), tp.on[min(n, len(tp.on)):]...)
}

type tapWriter struct {
	http.ResponseWriter
	tap *wireTap
	buf bytes.Buffer // written, not yet flushed
}

func (w *tapWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *tapWriter) Flush() {
	w.record() // before the bytes can reach the client
	w.ResponseWriter.(http.Flusher).Flush()
}

func (w *tapWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// record moves what was written since the last flush to the tap: the data
// of each SSE event, or the body of a JSON answer.
func (w *tapWriter) record() {
	w.tap.mu.Lock()
	defer w.tap.mu.Unlock()
	text := w.buf.String()
	w.buf.Reset()
	if strings.HasPrefix(strings.TrimSpace(text), "{") {
		w.tap.on = append(w.tap.on, strings.TrimSpace(text))
		return
	}
	for _, line := range strings.Split(text, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && data != "" {
			w.tap.on = append(w.tap.on, data)
		}
	}
}

// TestSessionNotificationsBeforeResult: over an HTTP session whose client
// keeps its GET stream open, every progress and log notification of a
// call is on the wire before the call's result, on whichever of the
// session's streams mcp-go put it (mcp-go's transport hands a session's
// notifications to whichever stream reads first), and reaches the client;
// at each revision with sessions.
func TestSessionNotificationsBeforeResult(t *testing.T) {
	t.Parallel()
	for _, rev := range []string{mcp.ProtocolVersion20250326, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20251125} {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			notificationsBeforeResult(t, rev)
		})
	}
}

func notificationsBeforeResult(t *testing.T, rev string) {
	f := newFixture(t, nil)
	tap := &wireTap{h: f.srv.Handler()}
	ts := httptest.NewServer(tap)
	t.Cleanup(ts.Close)
	//lint:ignore SA1019 the standalone GET stream is how streamable HTTP clients of the revisions served (2025-03-26 to 2025-11-25) get tools/list_changed; only 2026-07-28 removed it
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithContinuousListening(), transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	c := client.NewClient(tr, append(clientOptions(), client.WithProtocolVersion(rev))...)
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { c.Close() })
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: rev, ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}})
	require.NoError(t, err)
	require.Equal(t, rev, res.ProtocolVersion)
	var mu sync.Mutex
	got := make(map[string]int) // progress token or log line: how many the client got
	arrived := make(chan struct{}, 1)
	c.OnNotification(func(m mcp.JSONRPCNotification) {
		mu.Lock()
		defer mu.Unlock()
		switch m.Method {
		case string(mcp.MethodNotificationProgress):
			got[fmt.Sprint(m.Params.AdditionalFields["progressToken"])]++
		case string(mcp.MethodNotificationMessage):
			got[fmt.Sprint(m.Params.AdditionalFields["data"])]++
		}
		select {
		case arrived <- struct{}{}:
		default:
		}
	})

	const calls = 50
	for i := range calls {
		token := fmt.Sprintf("order-%d", i)
		from := len(tap.since(0))
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
			Name: "slow_count", Meta: &mcp.Meta{ProgressToken: token},
		}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		// The client has the result, so the server wrote it: everything
		// of the call written before it is recorded.
		var before []string
		for _, data := range tap.since(from) {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Params struct {
					Token any    `json:"progressToken"`
					Data  string `json:"data"`
				} `json:"params"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &msg), data)
			if msg.Result != nil && strings.Contains(string(msg.Result), `"done"`) {
				break
			}
			switch msg.Method {
			case string(mcp.MethodNotificationProgress):
				if msg.Params.Token == token {
					before = append(before, "progress")
				}
			case string(mcp.MethodNotificationMessage):
				before = append(before, msg.Params.Data)
			}
		}
		require.ElementsMatch(t, []string{"progress", "progress", "progress", "counted to three", "that was all"}, before,
			"call %d: what the server wrote before the result", i)
	}

	// And the client gets every one of them.
	want := map[string]int{"counted to three": calls, "that was all": calls}
	for i := range calls {
		want[fmt.Sprintf("order-%d", i)] = 3
	}
	for {
		mu.Lock()
		done := maps.Equal(want, got)
		mu.Unlock()
		if done {
			return
		}
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, want, got, "what the client got")
		}
	}
}

// TestStdioNotificationsBeforeResult: over stdio too, every progress and
// log notification of a call is written before the call's result (mcp-go
// writes them from a goroutine of their own).
func TestStdioNotificationsBeforeResult(t *testing.T) { // not parallel: stdio
	f := newFixture(t, nil)
	c, seen := tappedStdioClient(t, f, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	require.Empty(t, next(t, seen).Method, "the initialize response")
	for i := range 50 {
		token := fmt.Sprintf("order-%d", i)
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{
			Name: "slow_count", Meta: &mcp.Meta{ProgressToken: token},
		}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		var before []string
		for m := next(t, seen); m.Method != ""; m = next(t, seen) {
			if m.Method != string(mcp.MethodNotificationProgress) || m.Params.ProgressToken == token {
				before = append(before, m.Method)
			}
		}
		require.Equal(t, []string{"notifications/progress", "notifications/progress", "notifications/progress", "notifications/message", "notifications/message"},
			before, "call %d: what the server wrote before the result", i)
	}
}
