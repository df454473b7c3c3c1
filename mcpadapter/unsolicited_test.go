package mcpadapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// wireMessage is what the tests look at in a message the server wrote.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta          map[string]any `json:"_meta"`
		ProgressToken any            `json:"progressToken"`
	} `json:"params"`
}

// tappedStdioClient serves f with ServeStdio to mcp-go's client at
// revision rev ("" for its default, 2026-07-28), and returns the client
// and every message the server writes, in order, as the client gets it.
func tappedStdioClient(t *testing.T, f *fixture, rev string) (*client.Client, <-chan wireMessage) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	serverIn, clientOut := io.Pipe()
	tapIn, serverOut := io.Pipe()
	clientIn, tapOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeStdio(ctx, serverIn, serverOut) }()
	seen := make(chan wireMessage, 256)
	go func() {
		defer tapOut.Close()
		lines := bufio.NewScanner(tapIn)
		lines.Buffer(nil, 1<<20)
		initialized := false
		for lines.Scan() {
			var m wireMessage
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				m.Method = "unreadable: " + lines.Text()
			}
			if !initialized && m.ID == nil {
				// Before the initialize response: mcp-go keeps one stdio
				// session, with one queue of notifications, per process,
				// and an earlier test's ServeStdio may have left some
				// queued (ServeStdio's documentation).
				continue
			}
			initialized = true
			seen <- m
			if _, err := tapOut.Write(append(lines.Bytes(), '\n')); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		serverOut.Close()
		<-done
	})
	var opts []client.ClientOption
	params := mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}
	if rev != "" {
		opts = append(opts, client.WithProtocolVersion(rev))
		params.ProtocolVersion = rev
	}
	c := client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(nilReader{})), opts...)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { c.Close() })
	_, err := c.Initialize(context.Background(), mcp.InitializeRequest{Params: params})
	require.NoError(t, err)
	return c, seen
}

// TestStdioModernNoUnsolicited: a client of 2026-07-28 over stdio (the
// Vercel AI SDK's, say, which reports "Unsupported message type" for a
// notification it did not ask for) gets no notification it did not ask
// for, whatever changes: not tools/list_changed when its tenant's writes
// are switched on, nor prompts/ or resources/list_changed when a kill
// switch flips, nor log lines without a level in _meta. Progress it asked
// for with a token still comes, and a subscriptions/listen stream gets
// what its filter asked for, tagged with its subscription ID. The client
// reads every message the server writes; a notification written before
// the stream's acknowledgement came before it, since mcp-go writes the
// stdio session's notifications in order.
func TestStdioModernNoUnsolicited(t *testing.T) { // not parallel: stdio
	f := newFixture(t, nil)
	c, seen := tappedStdioClient(t, f, "")
	require.Equal(t, mcp.ProtocolVersion20260728, c.ProtocolVersion())
	ctx := context.Background()

	_, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	require.False(t, call(t, c, "get_note", map[string]any{"id": 1}).IsError)
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "slow_count",
		Meta: &mcp.Meta{ProgressToken: "count"}}})
	require.NoError(t, err)
	require.False(t, res.IsError)

	// Changes a session of an earlier revision is told of.
	require.NoError(t, f.reg.Tenants().SetWrites(ctx, "", true))
	require.NoError(t, f.reg.SetEnabled("web_lookup", false))
	require.NoError(t, f.reg.SetEnabled("web_lookup", true))
	require.False(t, call(t, c, "create_note", map[string]any{"title": "Written"}).IsError)

	// A stream that asks for tools/list_changed gets it, and only it.
	stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
	require.NoError(t, err)
	var got []string
	var listen json.RawMessage
	progress := 0
	for listen == nil {
		m := next(t, seen)
		switch {
		case m.Method == "" && m.ID != nil: // a response
		case m.Method == string(mcp.MethodNotificationProgress) && m.Params.ProgressToken == "count":
			progress++
		case m.Method == mcp.MethodNotificationSubscriptionsAcknowledged:
			id, err := json.Marshal(m.Params.Meta[mcp.MetaKeySubscriptionID])
			require.NoError(t, err)
			listen = id
		default:
			got = append(got, m.Method)
		}
	}
	require.Empty(t, got, "notifications the client did not ask for")
	require.Equal(t, 3, progress, "the progress it asked for")

	require.NoError(t, f.reg.Tenants().SetWrites(ctx, "", false))
	m := next(t, seen)
	require.Equal(t, mcp.MethodNotificationToolsListChanged, m.Method)
	id, err := json.Marshal(m.Params.Meta[mcp.MetaKeySubscriptionID])
	require.NoError(t, err)
	require.JSONEq(t, string(listen), string(id), "tagged with the subscription's ID")
	stop()
	m = next(t, seen)
	require.JSONEq(t, string(listen), string(m.ID), "the stream's response, and nothing before it")
	_, err = c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	m = next(t, seen)
	require.Empty(t, m.Method, "after the stream closed, the next message is the listing: %+v", m)
}

// next returns the next message the server wrote.
func next(t *testing.T, seen <-chan wireMessage) wireMessage {
	t.Helper()
	select {
	case m := <-seen:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message from the server")
	}
	return wireMessage{}
}
