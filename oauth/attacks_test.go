package oauth_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/oauth"
	"github.com/llmtool/llmtool/oauth/oauthtest"
	"github.com/llmtool/llmtool/sqlite"
)

// noSubject describes the refusal of a token without "sub".
const noSubject = `The access token names no subject ("sub"); this server runs each call as the token's subject, so it accepts only tokens that name one (RFC 9068).`

// payload returns the JSON of a token's claims, with the issuer's "iss"
// and an expiry an hour away unless claims name their own.
func payload(t *testing.T, iss *oauthtest.Issuer, claims map[string]any) []byte {
	t.Helper()
	c := map[string]any{"iss": iss.URL, "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return b
}

// Claims are matched by their exact names, as the issuer and every other
// library reads them: encoding/json would take "SCOPE" for "scope", so a
// token could grant itself scopes, name a subject or an audience under a
// name the issuer never checked. A claim named twice is refused.
func TestClaimNamesExact(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	v := newVerifier(t, iss, nil)
	exp := time.Now().Add(time.Hour).Unix()
	claimsDesc := "The access token's claims are malformed; get a new token from the authorization server."
	tests := []struct {
		name  string
		token string
		want  *llmtool.Principal
		// for a refusal
		sentinel  error
		msg, desc string
	}{
		{name: "SCOPE grants nothing", token: iss.Token(claims(map[string]any{"scope": nil, "SCOPE": "admin notes:write"})),
			want: &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Scopes: []string{}}},
		{name: "Scope beside scope", token: iss.Token(claims(map[string]any{"Scope": "admin"})),
			want: &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Scopes: []string{"notes:read"}}},
		{name: "Sub beside sub", token: iss.Token(claims(map[string]any{"Sub": "owner"})),
			want: &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Scopes: []string{"notes:read"}}},
		{name: "Client_ID is no client ID", token: iss.Token(claims(map[string]any{"Client_ID": "claude"})),
			want: &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Scopes: []string{"notes:read"}}},
		{name: "SUB is no subject", token: iss.Token(claims(map[string]any{"sub": nil, "SUB": "owner"})),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: no "sub" claim`, desc: noSubject},
		{name: "AUD is no audience", token: iss.Token(claims(map[string]any{"aud": nil, "AUD": resource})),
			sentinel: oauth.ErrAudience, msg: `oauth: token for another audience: [], want "https://mcp.example.com/mcp"`,
			desc: "The access token is not for this server: its audience is empty, not https://mcp.example.com/mcp; get a token with the resource parameter https://mcp.example.com/mcp (RFC 8707)."},
		{name: "EXP is no expiry", token: iss.Token(claims(map[string]any{"exp": nil, "EXP": exp})),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: no "exp" claim`,
			desc: "The access token has no expiry time; this server accepts only tokens that expire."},
		{name: "ISS is no issuer", token: iss.Token(claims(map[string]any{"iss": nil, "ISS": iss.URL})),
			sentinel: oauth.ErrIssuer, msg: `oauth: token of another issuer: no "iss" claim`,
			desc: "The access token names no issuer; get a token from " + iss.URL + "."},
		{name: "sub twice", token: iss.Sign(map[string]any{"typ": "at+jwt"}, []byte(`{"iss":"`+iss.URL+`","aud":"`+resource+`","exp":2000000000,"sub":"ada","sub":"owner"}`)),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: claims: json: duplicate key 'sub' in object`, desc: claimsDesc},
		{name: "scope twice", token: iss.Sign(map[string]any{"typ": "at+jwt"}, []byte(`{"iss":"`+iss.URL+`","aud":"`+resource+`","exp":2000000000,"sub":"ada","scope":"notes:read","scope":"admin"}`)),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: claims: json: duplicate key 'scope' in object`, desc: claimsDesc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := v.Verify(context.Background(), tt.token)
			if tt.want != nil {
				require.NoError(t, err)
				require.Equal(t, tt.want, p)
				return
			}
			require.Nil(t, p)
			refusal(t, err, tt.sentinel, tt.msg, tt.desc)
		})
	}
}

// The introspection endpoint's answer is read by exact names too: only
// "active": true makes a token active, and an answer that names a member
// twice is refused. Any other answer than 200 refuses the token.
func TestIntrospectionNamesExact(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	inactive := "The access token is not active: it expired, was revoked or was never issued; get a new one from the authorization server."
	tests := []struct {
		name   string
		status int
		answer string
		want   *llmtool.Principal
		// for a refusal
		sentinel  error
		msg, desc string
	}{
		{name: "active", status: 200, answer: `{"active":true,"sub":"ada","aud":"` + resource + `","scope":"notes:read"}`,
			want: &llmtool.Principal{ID: "oauth:ada", Scopes: []string{"notes:read"}}},
		{name: "SCOPE grants nothing", status: 200, answer: `{"active":true,"sub":"ada","aud":"` + resource + `","SCOPE":"admin"}`,
			want: &llmtool.Principal{ID: "oauth:ada", Scopes: []string{}}},
		{name: "ACTIVE is not active", status: 200, answer: `{"ACTIVE":true,"sub":"ada","aud":"` + resource + `"}`,
			sentinel: oauth.ErrInactive, msg: "oauth: token not active: the introspection endpoint answered active=false", desc: inactive},
		{name: "Active beside active false", status: 200, answer: `{"active":false,"Active":true,"sub":"ada","aud":"` + resource + `"}`,
			sentinel: oauth.ErrInactive, msg: "oauth: token not active: the introspection endpoint answered active=false", desc: inactive},
		{name: "active twice", status: 200, answer: `{"active":false,"active":true,"sub":"ada","aud":"` + resource + `"}`,
			sentinel: oauth.ErrMalformed, msg: "oauth: malformed token: claims: json: duplicate key 'active' in object",
			desc: "The access token's claims are malformed; get a new token from the authorization server."},
		{name: "a client without a subject", status: 200, answer: `{"active":true,"client_id":"alice","aud":"` + resource + `"}`,
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: no "sub" claim`, desc: noSubject},
		{name: "SUB is no subject", status: 200, answer: `{"active":true,"SUB":"owner","aud":"` + resource + `"}`,
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: no "sub" claim`, desc: noSubject},
		{name: "not JSON", status: 200, answer: `<html>`,
			sentinel: oauth.ErrMalformed, msg: "oauth: malformed token: claims: invalid character '<' looking for beginning of value",
			desc: "The access token's claims are malformed; get a new token from the authorization server."},
		{name: "failing", status: 503, answer: `{"active":true,"sub":"ada","aud":"` + resource + `"}`,
			sentinel: oauth.ErrUnavailable, msg: "oauth: authorization server unavailable: introspection endpoint {URL} answered 503 Service Unavailable",
			desc: "The authorization server could not be asked whether the access token is valid; try again later."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.answer))
			}))
			t.Cleanup(srv.Close)
			v := newVerifier(t, iss, func(c *oauth.Config) {
				c.Introspection = &oauth.Introspection{URL: srv.URL, ClientID: oauthtest.ClientID, ClientSecret: oauthtest.ClientSecret}
			})
			p, err := v.Verify(context.Background(), "opaque-token")
			if tt.want != nil {
				require.NoError(t, err)
				require.Equal(t, tt.want, p)
				return
			}
			require.Nil(t, p)
			refusal(t, err, tt.sentinel, strings.ReplaceAll(tt.msg, "{URL}", srv.URL), tt.desc)
		})
	}
}

// A JWT's header "typ" says what kind of token it is (RFC 8725 §3.11):
// "at+jwt" (RFC 9068), in any case and with or without "application/",
// is accepted; "JWT" and no "typ", as many issuers send access tokens,
// only without Config.RequireAccessTokenType, which keeps an ID token of
// the same issuer (typed "JWT") from passing for an access token; any
// other type never.
func TestTokenType(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	lenient := newVerifier(t, iss, nil)
	strict := newVerifier(t, iss, func(c *oauth.Config) { c.RequireAccessTokenType = true })
	body := payload(t, iss, map[string]any{"sub": "ada", "aud": resource})
	notTyped := `The token does not say it is an access token (its header has no typ at+jwt), and this server accepts only access tokens that do (RFC 9068); send the access token the authorization server issued.`
	typed := func(typ string) string {
		return "The token's type (typ) is " + typ + ", not at+jwt: it is not an access token (RFC 9068) but another kind of token, such as an ID token; send the access token the authorization server issued."
	}
	// ok is an accepted token; a refusal is its log message and description.
	const ok = ""
	tests := []struct {
		name                    string
		header                  map[string]any
		lenientMsg, lenientDesc string
		strictMsg, strictDesc   string
	}{
		{name: "at+jwt", header: map[string]any{"typ": "at+jwt"}},
		{name: "application/at+jwt", header: map[string]any{"typ": "application/at+jwt"}},
		{name: "AT+JWT", header: map[string]any{"typ": "AT+JWT"}},
		{name: "Application/At+Jwt", header: map[string]any{"typ": "Application/At+Jwt"}},
		{name: "no typ", header: nil,
			strictMsg: `oauth: not an access token: no header "typ", want "at+jwt"`, strictDesc: notTyped},
		{name: "TYP is no typ", header: map[string]any{"TYP": "at+jwt"},
			strictMsg: `oauth: not an access token: no header "typ", want "at+jwt"`, strictDesc: notTyped},
		{name: "JWT, as ID tokens", header: map[string]any{"typ": "JWT"},
			strictMsg: `oauth: not an access token: header "typ" is "JWT", want "at+jwt"`, strictDesc: typed("JWT")},
		{name: "application/jwt", header: map[string]any{"typ": "application/jwt"},
			strictMsg: `oauth: not an access token: header "typ" is "application/jwt", want "at+jwt"`, strictDesc: typed("application/jwt")},
		{name: "logout token", header: map[string]any{"typ": "logout+jwt"},
			lenientMsg: `oauth: not an access token: header "typ" is "logout+jwt", want "at+jwt"`, lenientDesc: typed("logout+jwt"),
			strictMsg: `oauth: not an access token: header "typ" is "logout+jwt", want "at+jwt"`, strictDesc: typed("logout+jwt")},
		{name: "DPoP proof", header: map[string]any{"typ": "dpop+jwt"},
			lenientMsg: `oauth: not an access token: header "typ" is "dpop+jwt", want "at+jwt"`, lenientDesc: typed("dpop+jwt"),
			strictMsg: `oauth: not an access token: header "typ" is "dpop+jwt", want "at+jwt"`, strictDesc: typed("dpop+jwt")},
		{name: "typ not a string", header: map[string]any{"typ": 42},
			lenientMsg: `oauth: not an access token: header "typ" is 42, not a string`, lenientDesc: "The token's type (typ) is not a string; send the access token the authorization server issued.",
			strictMsg: `oauth: not an access token: header "typ" is 42, not a string`, strictDesc: "The token's type (typ) is not a string; send the access token the authorization server issued."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			token := iss.Sign(tt.header, body)
			for _, c := range []struct {
				v         *oauth.Verifier
				msg, desc string
			}{{lenient, tt.lenientMsg, tt.lenientDesc}, {strict, tt.strictMsg, tt.strictDesc}} {
				p, err := c.v.Verify(context.Background(), token)
				if c.msg == ok {
					require.NoError(t, err)
					require.Equal(t, "oauth:ada", p.ID)
					continue
				}
				require.Nil(t, p)
				refusal(t, err, oauth.ErrTokenType, c.msg, c.desc)
			}
		})
	}
}

// The principals of tokens have IDs of their own (oauth.PrincipalPrefix
// and the subject), never a client ID, so that no token's subject can
// pass for a principal the host authenticates itself: a token with
// "sub": "owner" cannot complete the approval the host's "owner" (of a
// static bearer token) was asked for, and a client's token without a
// subject is refused rather than run as its client ID.
func TestSubjectIsNotAHostPrincipal(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	v := newVerifier(t, iss, nil)
	ctx := context.Background()

	db, err := sqlite.Open(filepath.Join(t.TempDir(), "notes.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL); INSERT INTO notes (id, title) VALUES (1, 'Plans')`)
	require.NoError(t, err)
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)}, llmtool.DefineTools("notes", deleteNote))
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))

	owner := llmtool.WithPrincipal(ctx, &llmtool.Principal{ID: "owner"}) // as a host's static token gives
	call := llmtool.Call{Tool: "delete_note", Args: []byte(`{"id":1}`)}
	req := reg.Invoke(owner, call)
	require.ErrorIs(t, req.Err, approval.ErrRequired)
	call.Approval = &approval.Answer{Token: req.Approval.Token, Approved: true}

	p, err := v.Verify(ctx, iss.Token(claims(map[string]any{"sub": "owner", "name": nil})))
	require.NoError(t, err)
	require.Equal(t, &llmtool.Principal{ID: "oauth:owner", Scopes: []string{"notes:read"}}, p)
	res := reg.Invoke(llmtool.WithPrincipal(ctx, p), call)
	require.ErrorIs(t, res.Err, approval.ErrRefused)
	require.Equal(t, "The approval was given to another user. Nothing was saved. Call the tool again to get a new preview for the user to approve.", res.Text())

	for _, c := range []map[string]any{{"sub": nil, "client_id": "owner"}, {"sub": nil, "azp": "owner"}} {
		_, err := v.Verify(ctx, iss.Token(claims(c)))
		refusal(t, err, oauth.ErrMalformed, `oauth: malformed token: no "sub" claim`, noSubject)
	}

	require.False(t, reg.Invoke(owner, call).IsError, "the owner's approval stays the owner's")

	p, err = oauth.DefaultPrincipal(oauth.Claims{ClientID: "owner", Scopes: []string{}})
	require.Nil(t, p)
	require.EqualError(t, err, `oauth: DefaultPrincipal: the claims name no subject ("sub")`)
}

type deleteIn struct {
	ID int `json:"id" desc:"ID of the note to delete."`
}

var deleteNote = llmtool.Write("delete_note", "Delete a note.",
	func(c *llmtool.WriteCtx, in deleteIn) (struct{}, error) {
		_, err := c.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return struct{}{}, err
	}, llmtool.NeedsApproval())
