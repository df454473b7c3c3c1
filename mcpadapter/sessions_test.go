package mcpadapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/mcpadapter"
)

// send sends a bodiless request of the session, such as DELETE, and
// returns its status and body.
func (c *rpc) send(t *testing.T, method string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, c.url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req) // a stream that opened would never end
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the response is a stream")
	return resp.StatusCode, string(b)
}

const listTools = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// TestHTTPSessionLimits checks that an initialize beyond the limits is
// refused with 503 and a message that says what to do, and that ending a
// session makes room again.
func TestHTTPSessionLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		limits  mcpadapter.Options // the session limits
		opened  []string           // tokens of the sessions opened first
		refused string             // token of the initialize refused next
		other   string             // token of an initialize that still succeeds, if any
		message string
		counts  map[string]int
	}{
		{"total", mcpadapter.Options{MaxSessions: 2},
			[]string{"ada-token", "bob-token"}, "ada-token", "",
			"This server has reached its limit of 2 open sessions; try again later, when idle sessions have ended (after 30 minutes without requests).",
			map[string]int{"ada": 1, "bob": 1}},
		{"per principal", mcpadapter.Options{MaxSessionsPerPrincipal: 2, SessionIdleTimeout: 90 * time.Second},
			[]string{"ada-token", "ada-token"}, "ada-token", "bob-token",
			"You have reached this server's limit of 2 open sessions per user; end sessions you no longer use (HTTP DELETE with their Mcp-Session-Id header) or wait until idle ones end (after 90 seconds without requests).",
			map[string]int{"ada": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := authOptions()
			opts.MaxSessions, opts.MaxSessionsPerPrincipal, opts.SessionIdleTimeout = tt.limits.MaxSessions, tt.limits.MaxSessionsPerPrincipal, tt.limits.SessionIdleTimeout
			f := newFixture(t, opts)
			ts := httptest.NewServer(f.srv.Handler())
			t.Cleanup(ts.Close)
			as := func(token string) *rpc {
				return &rpc{url: ts.URL, headers: map[string]string{"Authorization": "Bearer " + token}}
			}
			var opened []*rpc
			for _, token := range tt.opened {
				c := as(token)
				c.initialize(t)
				opened = append(opened, c)
			}
			total, per := mcpadapter.SessionCounts(f.srv)
			require.Equal(t, len(tt.opened), total)
			require.Equal(t, tt.counts, per)

			resp, body := as(tt.refused).post(t, initialize)
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			require.Empty(t, resp.Header.Get("Mcp-Session-Id"))
			require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"`+tt.message+`"}}`, body)
			require.Len(t, mcpadapter.SessionIDs(f.srv), len(tt.opened), "the refused initialize opened no session")

			// An MCP client shows the message.
			tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
				transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tt.refused}))
			require.NoError(t, err)
			c := client.NewClient(tr)
			require.NoError(t, c.Start(context.Background()))
			t.Cleanup(func() { c.Close() })
			_, err = c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION}})
			require.ErrorContains(t, err, tt.message)

			if tt.other != "" {
				as(tt.other).initialize(t)
			}

			// Ending a session of the refused principal makes room.
			status, _ := opened[0].send(t, http.MethodDelete)
			require.Equal(t, http.StatusOK, status)
			as(tt.refused).initialize(t)
		})
	}
}

// TestHTTPSessionEnd checks that a session idle for the timeout (ended by
// mcp-go's sweeper), ended with DELETE, or never opened gets 404 (so the
// client initializes again) and that an ended session's memory is
// released: gone from the adapter's table, from its counts and from
// mcp-go.
func TestHTTPSessionEnd(t *testing.T) {
	t.Parallel()
	notFound := func(idle string) string {
		return `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found: it ended (after ` + idle + ` without requests, or by DELETE) or never existed; initialize a new session, without the Mcp-Session-Id header."}}`
	}
	tests := []struct {
		name string
		idle time.Duration
		end  func(t *testing.T, f *fixture, c *rpc, ended <-chan string)
	}{
		{"swept while idle", time.Second, func(t *testing.T, f *fixture, c *rpc, ended <-chan string) {
			for {
				select {
				case id := <-ended:
					if id == c.session {
						return
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the idle session was not swept")
				}
			}
		}},
		{"ended by DELETE", time.Minute, func(t *testing.T, f *fixture, c *rpc, _ <-chan string) {
			status, _ := c.send(t, http.MethodDelete)
			require.Equal(t, http.StatusOK, status)
		}},
		{"never opened", time.Minute, func(t *testing.T, f *fixture, c *rpc, _ <-chan string) {
			status, _ := c.send(t, http.MethodDelete)
			require.Equal(t, http.StatusOK, status)
			c.session = "mcp-session-XLAB4DNOBGAAZDJ7YQYZ36NPDA"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := authOptions()
			opts.SessionIdleTimeout = tt.idle
			f := newFixture(t, opts)
			ended := make(chan string, 8)
			mcpadapter.MCPServer(f.srv).GetHooks().AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { ended <- cs.SessionID() })
			ts := httptest.NewServer(f.srv.Handler())
			t.Cleanup(ts.Close)
			var other *rpc
			if tt.idle >= time.Minute {
				other = &rpc{url: ts.URL, headers: map[string]string{"Authorization": "Bearer ada-token"}}
				other.initialize(t)
			}
			c := &rpc{url: ts.URL, headers: map[string]string{"Authorization": "Bearer ada-token"}}
			c.initialize(t)
			require.NoError(t, mcpadapter.MCPServer(f.srv).SendNotificationToSpecificClient(c.session, string(mcp.MethodNotificationToolsListChanged), nil))

			tt.end(t, f, c, ended)
			resp, body := c.post(t, listTools)
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
			require.JSONEq(t, notFound(humanDuration(tt.idle)), body)
			status, body := c.send(t, http.MethodGet)
			require.Equal(t, http.StatusNotFound, status)
			require.JSONEq(t, notFound(humanDuration(tt.idle)), body)
			require.ErrorIs(t, mcpadapter.MCPServer(f.srv).SendNotificationToSpecificClient(c.session, string(mcp.MethodNotificationToolsListChanged), nil), server.ErrSessionNotFound)
			if other == nil {
				require.Empty(t, mcpadapter.SessionIDs(f.srv))
				total, _ := mcpadapter.SessionCounts(f.srv)
				require.Zero(t, total)
				return
			}
			require.Equal(t, []string{other.session}, mcpadapter.SessionIDs(f.srv))
			total, per := mcpadapter.SessionCounts(f.srv)
			require.Equal(t, 1, total)
			require.Equal(t, map[string]int{"ada": 1}, per)
			resp, _ = other.post(t, listTools)
			require.Equal(t, http.StatusOK, resp.StatusCode, "the other session lives on")
		})
	}
}

// humanDuration is the adapter's wording of an idle timeout.
func humanDuration(d time.Duration) string {
	if d == time.Second {
		return "1 second"
	}
	return "1 minute"
}

// TestHTTPNoSessionOutsideLimits checks that the requests that could make
// mcp-go open a session without an initialize are refused, so every
// session counts toward the limits.
func TestHTTPNoSessionOutsideLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	tests := []struct {
		name    string
		session string
		status  int
		message string
	}{
		{"GET without a session", "", http.StatusBadRequest,
			`A GET stream belongs to a session: send the Mcp-Session-Id header that the initialize response carried.`},
		{"GET of an unknown session", "mcp-session-XLAB4DNOBGAAZDJ7YQYZ36NPDA", http.StatusNotFound,
			`Session not found: it ended (after 30 minutes without requests, or by DELETE) or never existed; initialize a new session, without the Mcp-Session-Id header.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := (&rpc{url: ts.URL, session: tt.session}).send(t, http.MethodGet)
			require.Equal(t, tt.status, status)
			var e struct{ Error struct{ Message string } }
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			require.Equal(t, tt.message, e.Error.Message)
			require.Empty(t, mcpadapter.SessionIDs(f.srv))
			total, _ := mcpadapter.SessionCounts(f.srv)
			require.Zero(t, total)
		})
	}
}

// TestHTTPHeartbeat checks that Options.HeartbeatInterval sends pings on a
// session's GET stream, so proxies do not close it as idle.
func TestHTTPHeartbeat(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &mcpadapter.Options{HeartbeatInterval: 10 * time.Millisecond})
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := &rpc{url: ts.URL}
	c.initialize(t)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel) // before ts.Close, which waits for the stream
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	resp, err := rawHTTP.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)

	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			var msg struct{ Method string }
			require.NoError(t, json.Unmarshal([]byte(data), &msg), data)
			require.Equal(t, "ping", msg.Method)
			return
		}
	}
	t.Fatalf("the GET stream ended without a heartbeat: %v", lines.Err())
}
