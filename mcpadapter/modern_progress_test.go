package mcpadapter_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModernProgress: under 2026-07-28 a call's progress notifications
// carry the request's progress token and go on its own response stream,
// in order, before the result; without a token there are none.
func TestModernProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"Handler", f.srv.Handler()}, {"StatelessHandler", f.srv.StatelessHandler()}} {
		ts := httptest.NewServer(h.h)
		t.Cleanup(ts.Close)
		for _, tc := range []struct {
			name, token string
			want        []string
		}{
			{"with token", `"p-1"`, []string{`"p-1" 1/3 counted`, `"p-1" 2/3 counted`, `"p-1" 3/3 counted`, "result"}},
			{"numeric token", `7`, []string{`7 1/3 counted`, `7 2/3 counted`, `7 3/3 counted`, "result"}},
			{"no token", ``, []string{"result"}},
		} {
			t.Run(h.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				meta := modernMeta(`{}`)
				if tc.token != "" {
					meta = strings.TrimSuffix(meta, "}") + `,"progressToken":` + tc.token + `}`
				}
				rc := &rpc{url: ts.URL, headers: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "slow_count"}}
				resp, body := rc.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow_count",`+meta+`}}`)
				require.Equal(t, http.StatusOK, resp.StatusCode, body)
				var got []string
				for _, line := range strings.Split(body, "\n") {
					data, ok := strings.CutPrefix(line, "data: ")
					if !ok {
						continue
					}
					var msg struct {
						Method string          `json:"method"`
						Result json.RawMessage `json:"result"`
						Params struct {
							Token    json.RawMessage `json:"progressToken"`
							Progress float64         `json:"progress"`
							Total    float64         `json:"total"`
							Message  string          `json:"message"`
						} `json:"params"`
					}
					require.NoError(t, json.Unmarshal([]byte(data), &msg))
					switch {
					case msg.Method == "notifications/progress":
						got = append(got, string(msg.Params.Token)+" "+ftoa(msg.Params.Progress)+"/"+ftoa(msg.Params.Total)+" "+msg.Params.Message)
					case msg.Result != nil:
						got = append(got, "result")
					}
				}
				if len(got) == 0 && strings.Contains(body, `"result"`) {
					got = []string{"result"} // a plain JSON answer: no stream, no progress
				}
				require.Equal(t, tc.want, got, body)
			})
		}
	}
}

func ftoa(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}
