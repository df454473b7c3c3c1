package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The attacks of a page in the person's browser, over HTTP: a page of
// another site rebound to 127.0.0.1 (a foreign Host), another origin's
// requests and sign-in forms, and bodies too large to keep.

// request is what a test's request carries besides the method and path.
type request struct {
	method, path, body string
	host               string // the Host header; "" for the server's address
	header             map[string]string
	chunked            bool // sent without Content-Length
}

// request sends rq as c and returns the status, the body and the response.
func (s *site) request(c *http.Client, rq request) (int, string, *http.Response) {
	s.t.Helper()
	req, err := http.NewRequest(rq.method, s.srv.URL+rq.path, strings.NewReader(rq.body))
	require.NoError(s.t, err)
	if rq.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	if rq.host != "" {
		req.Host = rq.host
	}
	if rq.chunked {
		req.ContentLength = -1
	}
	res, err := c.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(s.t, err)
	return res.StatusCode, string(b), res
}

// port is the site's port.
func (s *site) port() string {
	u, err := url.Parse(s.srv.URL)
	require.NoError(s.t, err)
	return u.Port()
}

// sessions counts the sessions app.db keeps.
func (s *site) sessions() int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.app.store.db.QueryRow(`SELECT COUNT(*) FROM sessions`).Scan(&n))
	return n
}

// conversation starts a conversation and returns its id and path.
func (s *site) conversation(c *http.Client) (int64, string) {
	id := s.newConversation(c)
	return id, fmt.Sprintf("/api/conversations/%d", id)
}

// untouched asserts that conversation id holds nothing yet.
func (s *site) untouched(id int64) {
	s.t.Helper()
	c, err := s.app.store.get(s.t.Context(), "ana", id)
	require.NoError(s.t, err)
	require.Equal(s.t, newTitle, c.Title)
	require.Empty(s.t, c.Log)
	require.Empty(s.t, c.Messages)
}

const mcpHello = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// A request whose Host is not this server's, as a page of a site rebound
// to 127.0.0.1 sends, reaches nothing: not the page, not the API, not the
// sign-in, not /mcp. Loopback names and -host's are served.
func TestForeignHost(t *testing.T) {
	t.Parallel()
	s := newSite(t, "notes.example")
	ana := s.client("ana")
	id, conv := s.conversation(ana)
	port := s.port()
	refused := func(host, name string) string {
		return fmt.Sprintf(`{"error":"Host \"%s\" is not a name this server serves (DNS rebinding protection): open the page at http://127.0.0.1:%s/, or start notes-web with -host %s to serve that name."}`, host, port, name)
	}
	mcp := map[string]string{"Authorization": "Bearer " + s.app.mcpToken("ana"), "Accept": "application/json, text/event-stream"}
	evil := "evil.example:" + port
	tests := []struct {
		name   string
		c      *http.Client
		rq     request
		status int
		want   string // the body, for a refusal
	}{
		{"the page", http.DefaultClient, request{method: "GET", path: "/", host: evil}, 403, refused(evil, "evil.example")},
		{"the API, signed in", ana, request{method: "GET", path: "/api/tree", host: evil}, 403, refused(evil, "evil.example")},
		{"a message", ana, request{method: "POST", path: conv + "/send", body: `{"text":"create a note called Pwned under Projects"}`, host: evil}, 403, refused(evil, "evil.example")},
		{"a sign-in", http.DefaultClient, request{method: "POST", path: "/login", body: "user=ana", host: "evil.example",
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 403, refused("evil.example", "evil.example")},
		{"/mcp", http.DefaultClient, request{method: "POST", path: "/mcp", body: mcpHello, host: evil, header: mcp}, 403, refused(evil, "evil.example")},
		{"a loopback name", http.DefaultClient, request{method: "GET", path: "/", host: "localhost:" + port}, 200, ""},
		{"IPv6 loopback", http.DefaultClient, request{method: "GET", path: "/", host: "[::1]:" + port}, 200, ""},
		{"a -host name", http.DefaultClient, request{method: "GET", path: "/", host: "notes.example"}, 200, ""},
		{"a -host name, /mcp", http.DefaultClient, request{method: "POST", path: "/mcp", body: mcpHello, host: "notes.example:" + port, header: mcp}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _ := s.request(tt.c, tt.rq)
			require.Equal(t, tt.status, status, body)
			if tt.want != "" {
				require.JSONEq(t, tt.want, body)
			}
		})
	}
	s.untouched(id)
	require.Zero(t, s.noteCount("ana", "Pwned"))
	require.Equal(t, 1, s.sessions(), "ana's, and no other")
}

// A change asked for by a page of another origin is refused: by its
// Origin header, or without one by Sec-Fetch-Site or Referer; another port
// of 127.0.0.1 is another origin too, though the same site (SameSite
// cookies go there). The page's own requests, and requests of no page
// (curl), go through.
func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ana := s.client("ana")
	id, conv := s.conversation(ana)
	page := "http://127.0.0.1:" + s.port() + "/"
	refused := func(from string) string {
		return fmt.Sprintf(`{"error":%q}`, "This request comes from "+from+", not from this server's own page, so it was refused and nothing changed (cross-site request protection): open the page at "+page+" and do it there.")
	}
	send := `{"text":"create a note called Pwned under Projects"}`
	tests := []struct {
		name   string
		rq     request
		status int
		want   string
	}{
		{"another site", request{method: "POST", path: conv + "/send", body: send, header: map[string]string{"Origin": "http://evil.example"}}, 403, refused(`Origin "http://evil.example"`)},
		{"another port", request{method: "POST", path: conv + "/send", body: send, header: map[string]string{"Origin": "http://127.0.0.1:1"}}, 403, refused(`Origin "http://127.0.0.1:1"`)},
		{"an opaque origin", request{method: "POST", path: conv + "/send", body: send, header: map[string]string{"Origin": "null"}}, 403, refused(`Origin "null"`)},
		{"a new conversation", request{method: "POST", path: "/api/conversations", body: "{}", header: map[string]string{"Origin": "http://evil.example"}}, 403, refused(`Origin "http://evil.example"`)},
		{"an undo", request{method: "POST", path: conv + "/undo", body: `{"changeset":1}`, header: map[string]string{"Origin": "http://evil.example"}}, 403, refused(`Origin "http://evil.example"`)},
		{"a cross-site page without Origin", request{method: "POST", path: conv + "/send", body: send, header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403,
			refused("a cross-site page (Sec-Fetch-Site)")},
		{"a same-site page without Origin", request{method: "POST", path: conv + "/send", body: send, header: map[string]string{"Sec-Fetch-Site": "same-site"}}, 403,
			refused("a same-site page (Sec-Fetch-Site)")},
		{"another site's Referer", request{method: "POST", path: conv + "/send", body: send, header: map[string]string{"Referer": "http://evil.example/page"}}, 403,
			refused(`Referer "http://evil.example/page"`)},
		{"a sign-out", request{method: "POST", path: "/logout", header: map[string]string{"Origin": "http://evil.example"}}, 403, refused(`Origin "http://evil.example"`)},
		{"a read", request{method: "GET", path: "/api/tree", header: map[string]string{"Origin": "http://evil.example"}}, 200, ""}, // the browser keeps the answer from the page
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _ := s.request(ana, tt.rq)
			require.Equal(t, tt.status, status, body)
			if tt.want != "" {
				require.JSONEq(t, tt.want, body)
			}
		})
	}
	s.untouched(id)
	require.Zero(t, s.noteCount("ana", "Pwned"))
	status, body := s.call(ana, http.MethodGet, "/api/conversations", "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, fmt.Sprintf(`[{"id":%d,"title":"New conversation"}]`, id), body, "no conversation was added, and ana is still signed in")

	// The page's own requests go through.
	for _, h := range []map[string]string{{"Origin": strings.TrimSuffix(page, "/")}, {"Sec-Fetch-Site": "same-origin"}, {"Referer": page}} {
		status, body, _ := s.request(ana, request{method: "POST", path: conv + "/send", body: `{"text":"list notes"}`, header: h})
		require.Equal(t, http.StatusOK, status, body)
	}
}

// Another site's form cannot sign the browser in (login CSRF): no
// session, no cookie. The sign-in page's own form can.
func TestCrossSiteLogin(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	page := "http://127.0.0.1:" + s.port()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	with := func(k, v string) map[string]string {
		return map[string]string{"Content-Type": form["Content-Type"], k: v}
	}
	tests := []struct {
		name   string
		header map[string]string
		status int
	}{
		{"another site's form", with("Origin", "http://evil.example"), 403},
		{"another site's form, without Origin", with("Sec-Fetch-Site", "cross-site"), 403},
		{"another site's link", with("Referer", "http://evil.example/"), 403},
		{"the sign-in page's form", with("Origin", page), 303},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, res := s.request(noRedirect, request{method: "POST", path: "/login", body: "user=ana", header: tt.header})
			require.Equal(t, tt.status, status, body)
			if tt.status == 403 {
				require.Contains(t, body, "not from this server's own page, so it was refused and nothing changed")
				require.Empty(t, res.Cookies())
				require.Zero(t, s.sessions())
				return
			}
			require.Len(t, res.Cookies(), 1)
			require.Equal(t, 1, s.sessions())
		})
	}
}

// Bodies over 1 MiB, and messages over maxMessage characters, get 413 and
// the limit; nothing of them is stored.
func TestOversizedBodies(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ana := s.client("ana")
	id, conv := s.conversation(ana)
	big := strings.Repeat("x", 2<<20)
	tooLargeBody := `{"error":"The request is larger than this server's limit of 1 MiB (1048576 bytes); send a smaller one: a chat message has at most 8000 characters."}`
	tests := []struct {
		name   string
		c      *http.Client
		rq     request
		status int
		want   string
	}{
		{"a 2 MiB message", ana, request{method: "POST", path: conv + "/send", body: `{"text":"` + big + `"}`}, 413, tooLargeBody},
		{"a 2 MiB message, chunked", ana, request{method: "POST", path: conv + "/send", body: `{"text":"` + big + `"}`, chunked: true}, 413, tooLargeBody},
		{"an answer", ana, request{method: "POST", path: conv + "/answer", body: `{"property":"x","value":"` + big + `"}`, chunked: true}, 413, tooLargeBody},
		{"an undo", ana, request{method: "POST", path: conv + "/undo", body: `{"changeset":1,"x":"` + big + `"}`, chunked: true}, 413, tooLargeBody},
		{"a sign-in", http.DefaultClient, request{method: "POST", path: "/login", body: "user=ana&x=" + big,
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, chunked: true}, 413, tooLargeBody},
		{"a message over the limit", ana, request{method: "POST", path: conv + "/send", body: `{"text":"` + strings.Repeat("é", maxMessage+1) + `"}`}, 413,
			`{"error":"The message has 8001 characters; the limit is 8000. Send a shorter one, or split it into several."}`},
		{"/mcp", http.DefaultClient, request{method: "POST", path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + big + `"}}`,
			header: map[string]string{"Authorization": "Bearer " + s.app.mcpToken("ana"), "Accept": "application/json, text/event-stream"}, chunked: true}, 413,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"The request body is larger than this server's limit of 1048576 bytes; send smaller arguments."}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _ := s.request(tt.c, tt.rq)
			require.Equal(t, tt.status, status, body)
			require.JSONEq(t, tt.want, body)
		})
	}
	s.untouched(id)
	var longest int
	require.NoError(t, s.app.store.db.QueryRow(`SELECT MAX(LENGTH(title) + LENGTH(messages) + LENGTH(log)) FROM conversations`).Scan(&longest))
	require.Less(t, longest, 1000)
	require.Equal(t, 1, s.sessions(), "ana's only")

	// A message of maxMessage characters is a message.
	status, stream := s.call(ana, http.MethodPost, conv+"/send", `{"text":"`+strings.Repeat("é", maxMessage)+`"}`)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "user", items(t, stream)[0]["type"])
}

// lines is a writer whose every Write is a line on a channel: what run
// prints.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	l <- string(p)
	return len(p), nil
}

// The command serves the names of -host, repeated or separated by
// commas, over a real listener, and refuses others.
func TestRunHosts(t *testing.T) {
	t.Parallel()
	out := make(lines, 8)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-data", t.TempDir(), "-host", "notes.example, other.example", "-host", "third.example:8443"},
			func(string) string { return "" }, out)
	}()
	var first string
	select {
	case first = <-out:
	case err := <-done:
		t.Fatalf("run ended: %v", err)
	case <-time.After(30 * time.Second): // a hung test's end, not a synchronization
		t.Fatal("run printed nothing")
	}
	base, _, ok := strings.Cut(strings.TrimPrefix(first, "notes-web: "), " ")
	require.True(t, ok, first)
	u, err := url.Parse(base)
	require.NoError(t, err)
	tests := []struct {
		host   string
		status int
	}{
		{u.Host, 200},
		{"notes.example", 200},
		{"other.example:" + u.Port(), 200},
		{"third.example:8443", 200},
		{"third.example:9999", 403},
		{"evil.example", 403},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(http.MethodGet, base, nil)
		require.NoError(t, err)
		req.Host = tt.host
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, tt.status, res.StatusCode, tt.host)
	}
	cancel()
	require.NoError(t, <-done)
}
