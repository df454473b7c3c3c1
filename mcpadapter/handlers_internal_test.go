package mcpadapter

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// goroutineID returns the ID of the calling goroutine, from the header of
// its stack ("goroutine 12 [running]:").
func goroutineID() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	return strings.Fields(string(buf[:n]))[1]
}

// waitGone waits until goroutine id has ended.
func waitGone(t *testing.T, id string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if !bytes.Contains(buf[:n], []byte("goroutine "+id+" [")) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// recordCall reports the goroutine that handles it, once wait is closed.
type recordCall struct {
	ran  chan<- string
	wait <-chan struct{}
}

func (c recordCall) handle() {
	if c.wait != nil {
		<-c.wait
	}
	c.ran <- goroutineID()
}

// TestHandlerPool checks that a goroutine that handled a call handles the
// next one, that a call finding none idle gets a goroutine of its own, and
// that idle goroutines end when the server is closed or after their idle
// period.
func TestHandlerPool(t *testing.T) {
	t.Parallel()
	t.Run("reused, and one more when busy, until closed", func(t *testing.T) {
		t.Parallel()
		closed := make(chan struct{})
		p := newHandlerPool(closed)
		ran := make(chan string)
		p.run(recordCall{ran: ran})
		first := <-ran
		require.NotEqual(t, goroutineID(), first, "the call ran on a goroutine of its own")

		wait := make(chan struct{})
		p.calls <- recordCall{ran: ran, wait: wait} // taken by the idle goroutine
		p.run(recordCall{ran: ran})                 // none idle: a new one
		other := <-ran
		require.NotEqual(t, first, other)
		close(wait)
		require.Equal(t, first, <-ran, "the idle goroutine handled the next call")

		close(closed)
		waitGone(t, first)
		waitGone(t, other)
	})
	t.Run("ends when idle", func(t *testing.T) {
		t.Parallel()
		p := newHandlerPool(make(chan struct{}))
		p.idle = time.Millisecond
		ran := make(chan string)
		p.run(recordCall{ran: ran})
		waitGone(t, <-ran)
	})
}

// TestWriteJSONLine holds the response written straight onto the
// connection to json.Marshal's bytes and a newline, and an unencodable
// value to the internal error.
func TestWriteJSONLine(t *testing.T) {
	t.Parallel()
	result := &mcp.CallToolResult{
		Content:              []mcp.Content{mcp.TextContent{Type: "text", Text: `{"id":1,"title":"<Hello> & \"you\""}`}},
		RawStructuredContent: json.RawMessage(`{"id":1,"title":"<Hello> & \"you\""}`),
	}
	for _, tc := range []struct {
		name string
		msg  any
		want []byte
	}{
		{"a result", mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(7)), Result: result}, nil},
		{"an error result", mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("a"), Result: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.TextContent{Type: "text", Text: "Note 9 not found."}}}}, nil},
		{"encoded already", json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":{}}`), []byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")},
		{"unencodable", mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Result: make(chan int)}, append(internalError(), '\n')},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := tc.want
			if want == nil {
				b, err := json.Marshal(tc.msg)
				require.NoError(t, err)
				want = append(b, '\n')
			}
			var buf bytes.Buffer
			writeJSONLine(&buf, tc.msg)
			require.Equal(t, string(want), buf.String())
		})
	}
	require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Encoding the response failed."}}`, string(internalError()))
}
