package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The demo's session: its cookie, its end when it expires, when the
// person signs out, and when they sign in again.

// A sign-in's cookie is HttpOnly, SameSite=Lax, lasts sessionTTL, and is
// Secure when the request came over TLS.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	tlsSrv := httptest.NewTLSServer(s.app.handler())
	t.Cleanup(tlsSrv.Close)
	tests := []struct {
		name   string
		url    string
		c      *http.Client
		secure bool
	}{
		{"over HTTP", s.srv.URL, &http.Client{}, false},
		{"over TLS", tlsSrv.URL, tlsSrv.Client(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *tt.c
			c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			res, err := c.PostForm(tt.url+"/login", url.Values{"user": {"ana"}})
			require.NoError(t, err)
			res.Body.Close()
			require.Equal(t, http.StatusSeeOther, res.StatusCode)
			require.Len(t, res.Cookies(), 1)
			got := res.Cookies()[0]
			require.Equal(t, cookieName, got.Name)
			require.Equal(t, "/", got.Path)
			require.True(t, got.HttpOnly)
			require.Equal(t, http.SameSiteLaxMode, got.SameSite)
			require.Equal(t, tt.secure, got.Secure)
			require.InDelta(t, sessionTTL.Seconds(), got.MaxAge, 5)
			require.WithinDuration(t, time.Now().Add(sessionTTL), got.Expires, 5*time.Second)
			require.NotContains(t, got.Value, "ana", "a random token, not the user")
		})
	}
}

// A session ends when it expires, when the person signs out, and when
// they sign in again: its cookie, copied before, no longer signs anyone
// in.
func TestSessionEnds(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	cookieOf := func(c *http.Client) *http.Cookie {
		u, err := url.Parse(s.srv.URL)
		require.NoError(t, err)
		cookies := c.Jar.Cookies(u)
		require.Len(t, cookies, 1)
		return cookies[0]
	}
	// replay sends the copied cookie, from another client.
	replay := func(c *http.Cookie) int {
		req, err := http.NewRequest(http.MethodGet, s.srv.URL+"/api/tree", nil)
		require.NoError(t, err)
		req.AddCookie(c)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	tests := []struct {
		name     string
		end      func(c *http.Client)
		signedIn bool // the client is signed in after, as another user
	}{
		{"expired", func(*http.Client) {
			_, err := s.app.store.db.Exec(`UPDATE sessions SET expires = ?`, time.Now().Unix())
			require.NoError(t, err)
		}, false},
		{"signed out", func(c *http.Client) {
			status, _ := s.call(c, http.MethodPost, "/logout", "")
			require.Equal(t, http.StatusSeeOther, status)
			u, err := url.Parse(s.srv.URL)
			require.NoError(t, err)
			require.Empty(t, c.Jar.Cookies(u), "the browser forgets it too")
		}, false},
		{"signed in again", func(c *http.Client) {
			res, err := c.PostForm(s.srv.URL+"/login", url.Values{"user": {"ben"}})
			require.NoError(t, err)
			res.Body.Close()
			require.Equal(t, http.StatusSeeOther, res.StatusCode)
			status, body := s.call(c, http.MethodGet, "/", "")
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, body, `data-user="ben"`)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.client("ana")
			copied := cookieOf(c)
			require.Equal(t, http.StatusOK, replay(copied))
			tt.end(c)
			require.Equal(t, http.StatusUnauthorized, replay(copied))
			status, body := s.call(c, http.MethodGet, "/api/tree", "")
			if tt.signedIn {
				require.Equal(t, http.StatusOK, status, "ben's session")
				return
			}
			require.Equal(t, http.StatusUnauthorized, status)
			require.JSONEq(t, `{"error":"Sign in first."}`, body)
			status, body = s.call(c, http.MethodGet, "/", "")
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, body, `id="login"`, "the sign-in page")
		})
	}
	require.Equal(t, 1, s.sessions(), "ben's; the ended ones are gone")
}
