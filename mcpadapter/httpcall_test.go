package mcpadapter_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
)

// TestHTTPCallPlainJSON is the differential test of the adapter's own
// tools/call path (httpcall.go), which encodes a response with nothing
// before it straight onto the connection: for a client that accepts SSE
// (the adapter's path) and one that accepts JSON only (mcp-go's
// transport, which encodes the same response itself), the same call gets
// the same status, Content-Type and bytes, at 2025-11-25 and 2025-06-18.
func TestHTTPCallPlainJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	for _, rev := range []string{"2025-11-25", "2025-06-18"} {
		c := openSession(t, ts.URL, rev)
		for _, tc := range []struct {
			name, params string
			want         string // the response's result or error member
		}{
			{"success", `{"name":"get_note","arguments":{"id":1}}`,
				`"result":{"content":[{"type":"text","text":"{\"id\":1,\"title\":\"Hello\",\"body\":\"World\"}"}],"structuredContent":{"id":1,"title":"Hello","body":"World"}}`},
			{"a rich result", `{"name":"picture"}`,
				`"result":{"content":[{"type":"text","text":"A red pixel:"},{"type":"image","data":"UE5H","mimeType":"image/png"},{"type":"audio","data":"V0FW","mimeType":"audio/wav"},{"type":"resource","resource":{"uri":"notes://1","mimeType":"text/plain","text":"Hello"}},{"type":"resource","resource":{"uri":"notes://1.bin","mimeType":"application/octet-stream","blob":"AQI="}}]}`},
			{"the tool's error", `{"name":"get_note","arguments":{"id":99}}`,
				`"result":{"content":[{"type":"text","text":"Note 99 not found. Call list_notes to find the ID."}],"isError":true}`},
			{"bad arguments", `{"name":"get_note","arguments":{"id":"one"}}`,
				`"result":{"content":[{"type":"text","text":"Error: /id: expected integer, got string. Send an integer."}],"isError":true}`},
			{"a panic", `{"name":"crash"}`,
				`"result":{"content":[{"type":"text","text":"Internal error in crash; the details were logged. Try again once; if it fails again, tell the user the tool is failing."}],"isError":true}`},
			{"a write tool while writes are off", `{"name":"create_note","arguments":{"title":"x"}}`,
				`"result":{"content":[{"type":"text","text":"Tool \"create_note\" changes data, and write tools are off in the default scope. Ask the user to enable write tools for this scope, then call create_note again."}],"isError":true}`},
			{"an unknown tool", `{"name":"get_nte"}`,
				`"error":{"code":-32602,"message":"Unknown tool \"get_nte\". Did you mean \"get_note\"?"}`},
		} {
			t.Run(rev+" "+tc.name, func(t *testing.T) {
				body := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":` + tc.params + `}`
				sse, sseBody := c.post(t, body)
				json := &rpc{url: c.url, session: c.session, headers: map[string]string{"Accept": "application/json"}}
				plain, plainBody := json.post(t, body)
				require.Equal(t, http.StatusOK, sse.StatusCode)
				require.Equal(t, plain.StatusCode, sse.StatusCode)
				require.Equal(t, "application/json", sse.Header.Get("Content-Type"))
				require.Equal(t, plain.Header.Get("Content-Type"), sse.Header.Get("Content-Type"))
				require.Equal(t, plainBody, sseBody)
				require.Equal(t, `{"jsonrpc":"2.0","id":"c1",`+tc.want+"}\n", sseBody)
			})
		}
	}
	require.Zero(t, mcpadapter.OpenCallStreams(f.srv), "a call with no event is never open for resumption")
}

// quietGate waits, sending nothing, until its gate opens.
var quietGate = llmtool.Read("quiet_gate", "Wait, quietly, until the gate opens.",
	func(c *llmtool.ReadCtx, in pollIn) (statusOut, error) {
		g, _ := gates.Load(in.Gate)
		select {
		case <-g.(chan struct{}):
			return statusOut{Status: "done"}, nil
		case <-c.Done():
			return statusOut{}, c.Err()
		}
	})

// TestHTTPCallPrimedWhenQuiet checks that a 2025-11-25 call that sends
// nothing is primed after a second (an event ID to resume from, and the
// reconnection delay), then answers on its stream; that the next call on
// the same server is primed as well (the primer's timer is reused) and a
// call answered at once is still plain JSON; and that an ended call's
// stream replays its result from the priming event's ID.
func TestHTTPCallPrimedWhenQuiet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	require.NoError(t, f.reg.Add(llmtool.DefineTools("quiet", quietGate)))
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := openSession(t, ts.URL, "2025-11-25")

	var priming []string
	for round := range 2 {
		gate := fmt.Sprintf("%s-%d", t.Name(), round)
		ch := make(chan struct{})
		gates.Store(gate, ch)
		t.Cleanup(func() { gates.Delete(gate) })

		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(
			`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"quiet_gate","arguments":{"gate":"`+gate+`"}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.session)
		resp, err := rawHTTP.Do(req)
		require.NoError(t, err)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		r := bufio.NewReader(resp.Body)
		first := nextEvent(t, r)
		require.Equal(t, "priming retry=1000", describe(t, first))
		require.Equal(t, 1, mcpadapter.OpenCallStreams(f.srv), "a primed call's stream can be resumed")
		close(ch)
		last := nextEvent(t, r)
		require.Equal(t, `result {"status":"done"}`, describe(t, last))
		require.Equal(t, seq(t, first.ID)+1, seq(t, last.ID))
		resp.Body.Close()
		priming = append(priming, first.ID)

		_, body := c.post(t, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_note","arguments":{"id":1}}}`)
		require.Equal(t, `{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"{\"id\":1,\"title\":\"Hello\",\"body\":\"World\"}"}],"structuredContent":{"id":1,"title":"Hello","body":"World"}}}`+"\n", body,
			"answered at once: plain JSON")
	}
	require.Zero(t, mcpadapter.OpenCallStreams(f.srv), "ended calls are no longer open")

	get := c.resume(t, priming[0])
	require.Equal(t, http.StatusOK, get.StatusCode)
	var got []string
	for _, ev := range parseSSE(t, readAll(t, get.Body)) {
		got = append(got, describe(t, ev))
	}
	require.Equal(t, []string{`result {"status":"done"}`}, got)
}

// TestHTTPCallSessionEnd checks that a call on a resumable stream, whose
// context does not end with its POST's connection, ends with its session:
// a DELETE cancels it.
func TestHTTPCallSessionEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ended := make(chan error, 1)
	started := make(chan struct{})
	waitEnd := llmtool.Read("wait_end", "Wait until the call's context ends.",
		func(c *llmtool.ReadCtx, in struct{}) (statusOut, error) {
			close(started)
			<-c.Done()
			ended <- context.Cause(c)
			return statusOut{}, c.Err()
		})
	require.NoError(t, f.reg.Add(llmtool.DefineTools("wait", waitEnd)))
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	c := openSession(t, ts.URL, "2025-11-25")

	done := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait_end"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.session)
		resp, err := rawHTTP.Do(req)
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		done <- b.String()
	}()
	<-started
	status, _ := c.send(t, http.MethodDelete)
	require.Equal(t, http.StatusOK, status)
	require.ErrorIs(t, <-ended, context.Canceled)
	body := <-done
	require.JSONEq(t, `{"content":[{"type":"text","text":"The call to wait_end was cancelled before it finished; nothing was saved. Call it again if it is still needed."}],"isError":true}`,
		string(result(t, body)))
}
