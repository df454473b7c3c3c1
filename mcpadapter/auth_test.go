package mcpadapter_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/oauth"
	"github.com/llmtool/llmtool/oauth/oauthtest"
	"github.com/llmtool/llmtool/sqlite"
)

// The tools of the OAuth tests: each declares the scopes a token needs.

type countOut struct {
	Notes int `json:"notes"`
}

var (
	ping = llmtool.Read("ping", "Answer pong.",
		func(c *llmtool.ReadCtx, _ struct{}) (statusOut, error) { return statusOut{Status: "pong"}, nil })

	countNotes = llmtool.Read("count_notes", "Count the notes.",
		func(c *llmtool.ReadCtx, _ struct{}) (countOut, error) {
			var out countOut
			err := c.QueryRow("SELECT count(*) FROM notes").Scan(&out.Notes)
			return out, err
		}, llmtool.Scopes("notes:read"))

	addNote = llmtool.Write("add_note", "Create a note.",
		func(c *llmtool.WriteCtx, in createIn) (noteOut, error) {
			out := noteOut{Title: in.Title, Body: in.Body}
			err := c.QueryRow("INSERT INTO notes (title, body) VALUES (?, ?) RETURNING id", in.Title, in.Body).Scan(&out.ID)
			return out, err
		}, llmtool.Scopes("notes:write"))

	auditLog = llmtool.Read("audit_log", "Read who did what.",
		func(c *llmtool.ReadCtx, _ struct{}) (statusOut, error) { return statusOut{Status: "quiet"}, nil },
		llmtool.Scopes("notes:read", "admin"))

	summarize = llmtool.Prompt("summarize", "Ask for a summary of the notes.",
		func(c *llmtool.ReadCtx, _ struct{}) ([]llmtool.Message, error) {
			return []llmtool.Message{{Role: "user", Content: llmtool.TextContent("Summarize my notes.")}}, nil
		}, llmtool.Scopes("notes:read"))

	scopedTools = llmtool.DefineTools("scoped", ping, countNotes, addNote, auditLog, summarize)
)

// mcpResource is the resource identifier of the MCP server under test: the
// audience its tokens must name. The server listens elsewhere (127.0.0.1);
// only the identifier matters.
const mcpResource = "https://mcp.example.com/mcp"

// metadataAt is the resource_metadata of every challenge.
const metadataAt = `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`

// oauthServer is an MCP server whose tokens come from an oauthtest.Issuer.
type oauthServer struct {
	iss *oauthtest.Issuer
	db  *sql.DB
	url string // of Handler; StatelessHandler is at url + "/stateless"
}

// newOAuthServer serves scopedTools over HTTP, with tokens verified by an
// oauth.Verifier for iss (cfg edits its Config, if not nil). Writes are on.
func newOAuthServer(t *testing.T, cfg func(*oauth.Config)) *oauthServer {
	t.Helper()
	iss := oauthtest.NewIssuer()
	t.Cleanup(iss.Close)
	c := oauth.Config{Issuer: iss.URL, Resource: mcpResource, ScopesSupported: []string{"notes:read", "notes:write", "admin"}}
	if cfg != nil {
		cfg(&c)
	}
	v, err := oauth.New(context.Background(), c)
	require.NoError(t, err)

	db, err := sqlite.Open(filepath.Join(t.TempDir(), "notes.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL DEFAULT '');
		INSERT INTO notes (id, title, body) VALUES (1, 'Hello', 'World')`)
	require.NoError(t, err)
	discard := slog.New(slog.DiscardHandler)
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: discard}, scopedTools)
	require.NoError(t, err)
	require.NoError(t, reg.Tenants().SetWrites(context.Background(), "", true))
	srv := mcpadapter.New(reg, &mcpadapter.Options{Authenticator: v, ResourceMetadata: v.MetadataURL(), Logger: discard})
	t.Cleanup(func() { srv.Close() })

	mux := http.NewServeMux()
	mux.Handle(v.MetadataPath(), v.Metadata())
	mux.Handle("/mcp", srv.Handler())
	mux.Handle("/mcp/stateless", srv.StatelessHandler())
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return &oauthServer{iss: iss, db: db, url: ts.URL + "/mcp"}
}

// token returns a token of the issuer for the server, with scope, and
// edits (a nil value leaves a claim out).
func (s *oauthServer) token(scope string, edits map[string]any) string {
	c := map[string]any{"sub": "ada", "aud": mcpResource, "scope": scope}
	for k, v := range edits {
		c[k] = v
	}
	return s.iss.Token(c)
}

func (s *oauthServer) notes(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, s.db.QueryRow("SELECT count(*) FROM notes").Scan(&n))
	return n
}

// oauthClient connects mcp-go's client to url with the bearer token, at
// revision rev.
func oauthClient(t *testing.T, url, token, rev string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(rawHTTP),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	var opts []client.ClientOption
	params := mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}
	if rev != mcp.ProtocolVersion20260728 {
		opts = append(opts, client.WithProtocolVersion(rev))
		params.ProtocolVersion = rev
	}
	c := client.NewClient(tr, opts...)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { c.Close() })
	_, err = c.Initialize(context.Background(), mcp.InitializeRequest{Params: params})
	require.NoError(t, err)
	require.Equal(t, rev, c.ProtocolVersion())
	return c
}

// invalidToken is the challenge of a refused token.
func invalidToken(description string) string {
	return `Bearer realm="mcp", error="invalid_token", error_description="` + description + `", ` + metadataAt
}

const unauthorizedBody = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Authentication required: send a valid bearer token in the Authorization header."}}`

// Each token is refused, or accepted, with the status and challenge an
// OAuth client acts on.
func TestOAuthTokens(t *testing.T) {
	t.Parallel()
	s := newOAuthServer(t, nil)
	now := time.Now().Unix()
	expiredAt := time.Unix(now-120, 0).UTC().Format(time.RFC3339)
	forger := oauthtest.NewIssuer() // its key ID is the server's issuer's too
	t.Cleanup(forger.Close)
	signature := "The access token is not signed with a key of the authorization server; get a new token from the authorization server."

	tests := []struct {
		name      string
		header    string // Authorization
		status    int
		challenge string
	}{
		{"valid", "Bearer " + s.token("notes:read", nil), http.StatusOK, ""},
		// A second past expiry when made, so still within the minute of skew
		// however long the machine takes to reach the request.
		{"expired within the clock skew", "Bearer " + s.token("notes:read", map[string]any{"exp": now - 1}), http.StatusOK, ""},
		{"no token", "", http.StatusUnauthorized, `Bearer realm="mcp", ` + metadataAt},
		{"another scheme", "Basic YWRhOng=", http.StatusUnauthorized,
			invalidToken("The access token is missing, malformed, expired or revoked")},
		{"expired", "Bearer " + s.token("notes:read", map[string]any{"exp": now - 120}), http.StatusUnauthorized,
			invalidToken("The access token expired at " + expiredAt + "; get a new one from the authorization server.")},
		{"wrong audience", "Bearer " + s.token("notes:read", map[string]any{"aud": "https://other.example.com/mcp"}), http.StatusUnauthorized,
			invalidToken("The access token is not for this server: its audience is https://other.example.com/mcp, not https://mcp.example.com/mcp; get a token with the resource parameter https://mcp.example.com/mcp (RFC 8707).")},
		{"wrong issuer", "Bearer " + s.token("notes:read", map[string]any{"iss": "https://evil.example.com"}), http.StatusUnauthorized,
			invalidToken("The access token was issued by https://evil.example.com, not by " + s.iss.URL + "; get a token from " + s.iss.URL + ".")},
		{"forged signature", "Bearer " + forger.Token(map[string]any{"sub": "ada", "aud": mcpResource, "iss": s.iss.URL, "scope": "notes:read"}), http.StatusUnauthorized,
			invalidToken(signature)},
		{"alg none", "Bearer " + unsignedToken(map[string]any{"sub": "ada", "aud": mcpResource, "iss": s.iss.URL, "exp": now + 60}), http.StatusUnauthorized,
			invalidToken("The access token is signed with the algorithm none, which this server does not accept; get a new token from the authorization server.")},
		{"not a JWT", "Bearer opaque", http.StatusUnauthorized,
			invalidToken("The access token is not a JWT; send the access token the authorization server issued.")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &rpc{url: s.url, headers: map[string]string{}}
			if tt.header != "" {
				c.headers["Authorization"] = tt.header
			}
			resp, body := c.post(t, initialize)
			require.Equal(t, tt.status, resp.StatusCode, body)
			require.Equal(t, tt.challenge, resp.Header.Get("WWW-Authenticate"))
			if tt.status == http.StatusUnauthorized {
				require.JSONEq(t, unauthorizedBody, body)
			} else {
				require.NotContains(t, body, `"error"`)
			}
		})
	}

	t.Run("the challenge's resource_metadata is served", func(t *testing.T) {
		t.Parallel()
		resp, err := rawHTTP.Get(s.url[:len(s.url)-len("/mcp")] + "/.well-known/oauth-protected-resource/mcp")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var md map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&md))
		require.Equal(t, map[string]any{
			"resource":                 mcpResource,
			"authorization_servers":    []any{s.iss.URL},
			"scopes_supported":         []any{"notes:read", "notes:write", "admin"},
			"bearer_methods_supported": []any{"header"},
		}, md)
	})
}

// The issuer rotates its key: a token of the new key is accepted (the key
// set is fetched again), one of the withdrawn key is refused.
func TestOAuthKeyRotation(t *testing.T) {
	t.Parallel()
	s := newOAuthServer(t, nil)
	old := s.token("notes:read", nil)
	post := func(token string) (*http.Response, string) {
		return (&rpc{url: s.url, headers: map[string]string{"Authorization": "Bearer " + token}}).post(t, initialize)
	}
	resp, body := post(old)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)

	s.iss.RotateKey("RS256")
	resp, body = post(s.token("notes:read", nil))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, 2, s.iss.KeySetRequests())

	resp, body = post(old)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, invalidToken("The access token is not signed with a key of the authorization server; get a new token from the authorization server."), resp.Header.Get("WWW-Authenticate"))
	require.JSONEq(t, unauthorizedBody, body)
}

// With introspection, the issuer vouches for opaque tokens, and a revoked
// token is refused at once.
func TestOAuthIntrospection(t *testing.T) {
	t.Parallel()
	s := newOAuthServer(t, func(c *oauth.Config) {
		c.Introspection = &oauth.Introspection{ClientID: oauthtest.ClientID, ClientSecret: oauthtest.ClientSecret}
	})
	token := s.iss.OpaqueToken(map[string]any{"sub": "ada", "aud": mcpResource, "scope": "notes:read"})
	c := oauthClient(t, s.url, token, mcp.ProtocolVersion20251125)
	require.Equal(t, []string{"count_notes", "man", "ping"}, toolNames(t, c))

	s.iss.Revoke(token)
	resp, body := (&rpc{url: s.url, headers: map[string]string{"Authorization": "Bearer " + token}}).post(t, initialize)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, invalidToken("The access token is not active: it expired, was revoked or was never issued; get a new one from the authorization server."), resp.Header.Get("WWW-Authenticate"))
	require.JSONEq(t, unauthorizedBody, body)
}

// A token sees the tools its scopes allow, and a call of another gets 403
// with the scopes to authorize again with, before the tool runs.
func TestOAuthScopes(t *testing.T) {
	t.Parallel()
	s := newOAuthServer(t, nil)

	for _, rev := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
		t.Run("listing/"+rev, func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				scope string
				tools []string
			}{
				{"", []string{"man", "ping"}},
				{"notes:read", []string{"count_notes", "man", "ping"}},
				{"notes:read notes:write", []string{"add_note", "count_notes", "man", "ping"}},
				{"admin notes:read notes:write", []string{"add_note", "audit_log", "count_notes", "man", "ping"}},
			}
			for _, tt := range tests {
				c := oauthClient(t, s.url, s.token(tt.scope, nil), rev)
				require.Equal(t, tt.tools, toolNames(t, c), tt.scope)
			}
		})
	}

	t.Run("a call the scopes allow", func(t *testing.T) {
		t.Parallel()
		c := oauthClient(t, s.url, s.token("notes:read notes:write", nil), mcp.ProtocolVersion20251125)
		res := call(t, c, "count_notes", nil)
		require.False(t, res.IsError)
		require.NotContains(t, structured(t, res), `"error"`)
	})

	readOnly := s.token("notes:read", nil)
	writeRefused := `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Tool \"add_note\" needs the scope notes:write, which this sign-in does not grant; authorize again with the scopes in the WWW-Authenticate header, then send the request again."}}`
	tests := []struct {
		name      string
		url       string
		token     string
		headers   map[string]string // besides Authorization
		session   bool              // initialize first
		body      string
		challenge string
		response  string
	}{
		{name: "tools/call in a session", url: s.url, token: readOnly, session: true,
			body:      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_note","arguments":{"title":"x"}}}`,
			challenge: `Bearer realm="mcp", error="insufficient_scope", error_description="Tool add_note needs the scope notes:write, which the access token does not grant", scope="notes:read notes:write", ` + metadataAt,
			response:  writeRefused},
		{name: "tools/call, stateless", url: s.url + "/stateless", token: readOnly,
			body:      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_note","arguments":{"title":"x"}}}`,
			challenge: `Bearer realm="mcp", error="insufficient_scope", error_description="Tool add_note needs the scope notes:write, which the access token does not grant", scope="notes:read notes:write", ` + metadataAt,
			response:  writeRefused},
		{name: "tools/call at 2026-07-28", url: s.url, token: readOnly, headers: map[string]string{"Mcp-Protocol-Version": mcp.ProtocolVersion20260728},
			body:      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_note","arguments":{"title":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			challenge: `Bearer realm="mcp", error="insufficient_scope", error_description="Tool add_note needs the scope notes:write, which the access token does not grant", scope="notes:read notes:write", ` + metadataAt,
			response:  writeRefused},
		{name: "two scopes missing, one granted", url: s.url, token: s.token("notes:write", nil), session: true,
			body:      `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"audit_log"}}`,
			challenge: `Bearer realm="mcp", error="insufficient_scope", error_description="Tool audit_log needs the scope notes:read admin, which the access token does not grant", scope="notes:write notes:read admin", ` + metadataAt,
			response:  `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Tool \"audit_log\" needs the scope notes:read admin, which this sign-in does not grant; authorize again with the scopes in the WWW-Authenticate header, then send the request again."}}`},
		{name: "prompts/get", url: s.url, token: s.token("", nil), session: true,
			body:      `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"summarize"}}`,
			challenge: `Bearer realm="mcp", error="insufficient_scope", error_description="Prompt summarize needs the scope notes:read, which the access token does not grant", scope="notes:read", ` + metadataAt,
			response:  `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Prompt \"summarize\" needs the scope notes:read, which this sign-in does not grant; authorize again with the scopes in the WWW-Authenticate header, then send the request again."}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &rpc{url: tt.url, headers: map[string]string{"Authorization": "Bearer " + tt.token}}
			for k, v := range tt.headers {
				c.headers[k] = v
			}
			if tt.session {
				c.initialize(t)
			}
			before := s.notes(t)
			resp, body := c.post(t, tt.body)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
			require.Equal(t, tt.challenge, resp.Header.Get("WWW-Authenticate"))
			require.JSONEq(t, tt.response, body)
			require.Equal(t, before, s.notes(t), "the tool did not run")
		})
	}

	t.Run("a batch cannot slip a call past the scope check", func(t *testing.T) {
		t.Parallel()
		c := &rpc{url: s.url, headers: map[string]string{"Authorization": "Bearer " + readOnly}}
		c.open(t, "2025-03-26")
		before := s.notes(t)
		resp, body := c.post(t, `[
			{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count_notes"}},
			{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_note","arguments":{"title":"x"}}}
		]`)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Batch requests are not supported by this server; send one JSON-RPC message per request."}}`, body)
		require.Equal(t, before, s.notes(t))
	})

	t.Run("mcp-go's client shows the refusal's sentence", func(t *testing.T) {
		t.Parallel()
		c := oauthClient(t, s.url, readOnly, mcp.ProtocolVersion20251125)
		_, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "x"}}})
		require.EqualError(t, err, `invalid request: Tool "add_note" needs the scope notes:write, which this sign-in does not grant; authorize again with the scopes in the WWW-Authenticate header, then send the request again.`)
	})
}

// unsignedToken returns a JWT with "alg": "none" and no signature.
func unsignedToken(claims map[string]any) string {
	payload, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"at+jwt"}`)) + "." + enc(payload) + "."
}
