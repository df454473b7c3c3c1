package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chatrun "github.com/llmtool/llmtool/chatadapter/run"
)

// gate is the scripted model's hold for the slow phrasing, in the test's
// hands: the model says when it reached the hold, and waits there until
// the test releases it or the request ends.
type gate struct {
	reached chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{reached: make(chan struct{}, 1), release: make(chan struct{})} }

func (g *gate) hold(ctx context.Context) error {
	select {
	case g.reached <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// site is the app over a fresh folder, with the scripted model, served on
// a loopback port.
type site struct {
	t     *testing.T
	dir   string
	hosts []string // -host
	gate  *gate
	app   *app
	srv   *httptest.Server
	saved chan int64 // a turn's conversation was saved
	ep    chatrun.Endpoint
}

// newSite starts a site that serves hosts besides the loopback names
// (-host).
func newSite(t *testing.T, hosts ...string) *site {
	t.Helper()
	s := &site{t: t, dir: t.TempDir(), hosts: hosts, gate: newGate(), saved: make(chan int64, 16)}
	ep, stop, err := startScripted(&scripted{hold: s.gate.hold})
	require.NoError(t, err)
	t.Cleanup(stop)
	s.ep = ep
	s.start(ep)
	return s
}

// start opens the app over the site's folder (again, for a restart).
func (s *site) start(ep chatrun.Endpoint) {
	s.t.Helper()
	cfg := &config{dir: s.dir, hosts: s.hosts, endpoint: ep, label: "the scripted model (no OPENAI_MODEL set)", scripted: true, logger: quietLogger()}
	a, err := newApp(context.Background(), cfg)
	require.NoError(s.t, err)
	a.turnSaved = func(id int64) { s.saved <- id }
	s.app = a
	s.srv = httptest.NewServer(a.handler())
	s.t.Cleanup(func() {
		s.srv.Close()
		a.close()
	})
}

// waitSaved waits until a turn of conversation id is saved.
func (s *site) waitSaved(id int64) {
	s.t.Helper()
	timeout := time.After(30 * time.Second) // a hung test's end, not a synchronization
	for {
		select {
		case got := <-s.saved:
			if got == id {
				return
			}
		case <-timeout:
			s.t.Fatalf("conversation %d was not saved", id)
		}
	}
}

// waitHold waits until the scripted model holds in the slow phrasing.
func (s *site) waitHold() {
	s.t.Helper()
	select {
	case <-s.gate.reached:
	case <-time.After(30 * time.Second): // a hung test's end, not a synchronization
		s.t.Fatal("the scripted model never reached its hold")
	}
}

// client is an HTTP client signed in as user.
func (s *site) client(user string) *http.Client {
	s.t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(s.t, err)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(s.srv.URL+"/login", url.Values{"user": {user}})
	require.NoError(s.t, err)
	res.Body.Close()
	require.Equal(s.t, http.StatusSeeOther, res.StatusCode)
	return c
}

// call sends a request and returns the status and the body.
func (s *site) call(c *http.Client, method, path, body string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
	require.NoError(s.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(s.t, err)
	return res.StatusCode, string(b)
}

// items reads a turn's stream: the items it sent.
func items(t *testing.T, stream string) []item {
	t.Helper()
	var out []item
	for _, ev := range strings.Split(stream, "\n\n") {
		for _, line := range strings.Split(ev, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var it item
				require.NoError(t, json.Unmarshal([]byte(data), &it), data)
				out = append(out, it)
			}
		}
	}
	return out
}

// newConversation starts a conversation and returns its id.
func (s *site) newConversation(c *http.Client) int64 {
	s.t.Helper()
	status, body := s.call(c, http.MethodPost, "/api/conversations", "{}")
	require.Equal(s.t, http.StatusOK, status, body)
	var sum summary
	require.NoError(s.t, json.Unmarshal([]byte(body), &sum))
	return sum.ID
}

// noteCount counts user's live notes titled title.
func (s *site) noteCount(user, title string) int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.app.ws[user].db.QueryRow(`SELECT COUNT(*) FROM notes WHERE title = ? AND isDeleted = 0`, title).Scan(&n))
	return n
}
