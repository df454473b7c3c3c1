package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Signing in, the demo's way: a person picks a name, with no password,
// and gets a session: a random token in a cookie, and its digest with the
// user and an expiry in the app's database. The server forgets the
// session when it expires (sessionTTL) or when the person signs out, so a
// copied cookie stops working then. The cookie is HttpOnly, SameSite=Lax,
// and Secure when the request came over TLS; guard refuses sign-ins and
// sign-outs posted by pages of other origins (login CSRF).

const (
	cookieName = "notes_web_session"
	// sessionTTL is how long a sign-in lasts.
	sessionTTL = 12 * time.Hour
)

// users are the demo's two people, who sign in by picking their name.
var users = []string{"ana", "ben"}

// workspaceOf is the workspace of the request's signed-in user; nil when
// no session of the app's is in the request, or it expired or ended.
func (a *app) workspaceOf(r *http.Request) *workspace {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	user, err := a.store.sessionUser(r.Context(), c.Value, time.Now())
	if err != nil {
		a.cfg.logger.Warn("notes-web: session", "err", err)
		return nil
	}
	return a.ws[user]
}

func (a *app) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		if isTooLarge(err) {
			httpError(w, http.StatusRequestEntityTooLarge, tooLarge)
			return
		}
		httpError(w, http.StatusBadRequest, "Send the form of the sign-in page.")
		return
	}
	user := r.PostFormValue("user")
	if a.ws[user] == nil {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("Sign in as one of %s.", strings.Join(users, ", ")))
		return
	}
	if c, err := r.Cookie(cookieName); err == nil { // the session this one replaces ends
		if err := a.store.endSession(r.Context(), c.Value); err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	expires := time.Now().Add(sessionTTL)
	token, err := a.store.openSession(r.Context(), user, expires)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	http.SetCookie(w, sessionCookie(r, token, expires))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the request's session, on the server as in the browser.
func (a *app) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		if err := a.store.endSession(r.Context(), c.Value); err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	c := sessionCookie(r, "", time.Unix(0, 0))
	c.MaxAge = -1
	http.SetCookie(w, c)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// sessionCookie is the cookie of a session that ends at expires.
func sessionCookie(r *http.Request, token string, expires time.Time) *http.Cookie {
	return &http.Cookie{
		Name: cookieName, Value: token, Path: "/", Expires: expires, MaxAge: int(time.Until(expires).Seconds()),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode,
	}
}

// openSession starts a session of user until expires and returns its
// token; sessions that expired go.
func (s *store) openSession(ctx context.Context, user string, expires time.Time) (string, error) {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE expires <= ?`, time.Now().Unix()); err != nil {
		return "", fmt.Errorf("sessions: %w", err)
	}
	token := rand.Text()
	if _, err := s.db.ExecContext(ctx, `INSERT INTO sessions (digest, user, expires) VALUES (?, ?, ?)`, digest(token), user, expires.Unix()); err != nil {
		return "", fmt.Errorf("new session: %w", err)
	}
	return token, nil
}

// sessionUser returns the user of the session of token, "" when there is
// none, or it expired before now.
func (s *store) sessionUser(ctx context.Context, token string, now time.Time) (string, error) {
	var user string
	err := s.db.QueryRowContext(ctx, `SELECT user FROM sessions WHERE digest = ? AND expires > ?`, digest(token), now.Unix()).Scan(&user)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("session: %w", err)
	}
	return user, nil
}

// endSession ends the session of token, if there is one.
func (s *store) endSession(ctx context.Context, token string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE digest = ?`, digest(token)); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// digest is what the database keeps of a token: app.db alone signs no
// one in.
func digest(token string) []byte {
	d := sha256.Sum256([]byte(token))
	return d[:]
}
