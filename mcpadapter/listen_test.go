package mcpadapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// openListen opens a subscriptions/listen stream (revision 2026-07-28) in
// workspace tenant with the filter notifications, and returns its reader
// after checking its acknowledgement grants want.
func openListen(t *testing.T, url, tenant, notifications, want string) *bufio.Reader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	body := `{"jsonrpc":"2.0","id":"` + tenant + `","method":"subscriptions/listen","params":{"notifications":` + notifications + `,` + modernMeta(`{}`) + `}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer ada-token", "X-Workspace": tenant, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := rawHTTP.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := bufio.NewReader(resp.Body)
	var ack struct {
		Method string `json:"method"`
		Params struct {
			Notifications json.RawMessage `json:"notifications"`
			Meta          map[string]any  `json:"_meta"`
		} `json:"params"`
	}
	require.NoError(t, json.Unmarshal([]byte(nextEvent(t, r).Data), &ack))
	require.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
	require.JSONEq(t, want, string(ack.Params.Notifications))
	require.Equal(t, tenant, ack.Params.Meta["io.modelcontextprotocol/subscriptionId"])
	return r
}

// nextMethod reads the next notification of a listen stream, checks its
// subscription tag and returns its method.
func nextMethod(t *testing.T, r *bufio.Reader, tenant string) string {
	t.Helper()
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	require.NoError(t, json.Unmarshal([]byte(nextEvent(t, r).Data), &msg))
	require.Equal(t, tenant, msg.Params.Meta["io.modelcontextprotocol/subscriptionId"])
	return msg.Method
}

// TestListenNotifications checks what listen streams of 2026-07-28 get:
// tools/list_changed for their own tenant only, and tools, prompts and
// resources list_changed, as their filters ask, when the registry's
// modules change.
func TestListenNotifications(t *testing.T) {
	t.Parallel()
	f := newFixture(t, authOptions())
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)

	red := openListen(t, ts.URL, "red", `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}`,
		`{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}`)
	blue := openListen(t, ts.URL, "blue", `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
	green := openListen(t, ts.URL, "green", `{"promptsListChanged":true}`, `{"promptsListChanged":true}`)

	ctx := context.Background()
	require.NoError(t, f.reg.Tenants().SetWrites(ctx, "blue", true))
	require.Equal(t, "notifications/tools/list_changed", nextMethod(t, blue, "blue"))
	require.NoError(t, f.reg.Tenants().SetWrites(ctx, "red", true))
	require.NoError(t, f.reg.SetEnabled("get_note", false))
	for _, tc := range []struct {
		name   string
		r      *bufio.Reader
		tenant string
		want   []string
	}{
		// red got nothing for blue's change: its first is its own.
		{"red", red, "red", []string{"notifications/tools/list_changed", "notifications/tools/list_changed",
			"notifications/prompts/list_changed", "notifications/resources/list_changed"}},
		{"blue", blue, "blue", []string{"notifications/tools/list_changed"}},
		{"green", green, "green", []string{"notifications/prompts/list_changed"}},
	} {
		var got []string
		for range tc.want {
			got = append(got, nextMethod(t, tc.r, tc.tenant))
		}
		require.Equal(t, tc.want, got, tc.name)
	}
}

// TestListenResourceUpdated: a listen stream that subscribed to a resource
// gets notifications/resources/updated when a write tool that declared
// llmtool.Updates commits a change to it, and nothing for other resources.
func TestListenResourceUpdated(t *testing.T) {
	t.Parallel()
	f := newDocFixture(t, nil)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	r := openListen(t, ts.URL, "docs", `{"resourceSubscriptions":["doc://1"]}`, `{"resourceSubscriptions":["doc://1"]}`)
	ctx := context.Background()
	for _, args := range []string{`{"docId":"10","body":"x"}`, `{"docId":"1","body":"y"}`} {
		res := f.reg.Invoke(ctx, llmtool.Call{Tool: "edit_doc", Args: []byte(args)})
		require.False(t, res.IsError, res.Text())
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	require.NoError(t, json.Unmarshal([]byte(nextEvent(t, r).Data), &msg))
	require.Equal(t, "notifications/resources/updated", msg.Method)
	require.Equal(t, "doc://1", msg.Params.URI, "the first update is doc://1's: doc://10's was not sent")
}
