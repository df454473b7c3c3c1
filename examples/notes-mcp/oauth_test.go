package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/oauth/oauthtest"
)

// TestOAuth runs notes-mcp with -oauth-issuer against a real issuer (keys,
// discovery and tokens served by oauthtest): its tokens work beside the
// bearer token, each limited to its scopes; a token for another audience
// and a call beyond the token's scopes are refused with the answers OAuth
// clients act on.
func TestOAuth(t *testing.T) {
	bin := buildBinary(t)
	issuer := oauthtest.NewIssuer()
	t.Cleanup(issuer.Close)
	db := filepath.Join(t.TempDir(), "notes.db")
	_, stderr, code := runBinary(t, bin, "writes", "on", "-db", db)
	require.Equal(t, 0, code, stderr)
	s := pgServeHTTP(t, bin, pgEnv(), "-db", db, "-addr", "127.0.0.1:0", "-oauth-issuer", issuer.URL)
	metadata := "http://" + s.url[len("http://"):len(s.url)-len("/mcp")] + "/.well-known/oauth-protected-resource/mcp"
	require.Contains(t, s.banner, "  OAuth issuer:  "+issuer.URL+"  (its access tokens too; metadata at "+metadata+")\n")

	// The protected-resource metadata names this server and the issuer.
	for _, u := range []string{metadata, metadata[:len(metadata)-len("/mcp")]} {
		res, err := http.Get(u)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, u)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(body, &doc))
		require.Equal(t, s.url, doc["resource"])
		require.Equal(t, []any{issuer.URL}, doc["authorization_servers"])
		require.Equal(t, []any{"notes:read", "notes:write"}, doc["scopes_supported"])
	}

	token := func(scope, aud string) string {
		return issuer.Token(map[string]any{"sub": "ada", "aud": aud, "scope": scope})
	}
	connect := func(tok string) *client.Client {
		c, err := client.NewStreamableHttpClient(s.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}))
		require.NoError(t, err)
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() { _ = c.Close() })
		initialize(t, c)
		return c
	}
	post := func(tok, session, body string) (int, http.Header) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode, res.Header
	}
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	// No token: 401 pointing at the metadata. A token for another
	// audience: 401 invalid_token.
	status, h := post("", "", initBody)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, `Bearer realm="mcp", resource_metadata="`+metadata+`"`, h.Get("WWW-Authenticate"))
	status, h = post(token("notes:read", "https://elsewhere.example.com/mcp"), "", initBody)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, `Bearer realm="mcp", error="invalid_token", error_description="The access token is not for this server: its audience is https://elsewhere.example.com/mcp, not `+
		s.url+`; get a token with the resource parameter `+s.url+` (RFC 8707).", resource_metadata="`+metadata+`"`, h.Get("WWW-Authenticate"))

	// A token runs as "oauth:" and its subject, never as the bearer
	// token's owner nor as its client: one without a subject is refused.
	status, h = post(issuer.Token(map[string]any{"sub": nil, "client_id": "owner", "aud": s.url, "scope": "notes:read"}), "", initBody)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, `Bearer realm="mcp", error="invalid_token", error_description="The access token names no subject ('sub'); this server runs each call as the token's subject, so it accepts only tokens that name one (RFC 9068).", resource_metadata="`+metadata+`"`, h.Get("WWW-Authenticate"))

	// A notes:read token lists the read tools only, and a write call gets
	// 403 with the scopes to ask for.
	reader := connect(token("notes:read", s.url))
	got := listTools(t, reader)
	want := slices.Clone(readTools)
	slices.Sort(want)
	require.Equal(t, want, got)
	require.Equal(t, "Roadmap", callOK(t, reader, "get_note", map[string]any{"noteId": "roadmap"})["title"])
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "create_note", map[string]any{"parentNoteId": "root", "title": "x"}
	_, err := reader.CallTool(t.Context(), req)
	require.EqualError(t, err, `invalid request: Tool "create_note" needs the scope notes:write, which this sign-in does not grant; authorize again with the scopes in the WWW-Authenticate header, then send the request again.`)
	readToken := token("notes:read", s.url)
	status, h = post(readToken, "", initBody)
	require.Equal(t, http.StatusOK, status)
	status, h = post(readToken, h.Get("Mcp-Session-Id"), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_note","arguments":{"noteId":"roadmap"}}}`)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, `Bearer realm="mcp", error="insufficient_scope", error_description="Tool delete_note needs the scope notes:write, which the access token does not grant", scope="notes:read notes:write", resource_metadata="`+metadata+`"`, h.Get("WWW-Authenticate"))

	// A notes:read notes:write token creates a note.
	writer := connect(token("notes:read notes:write", s.url))
	require.Contains(t, listTools(t, writer), "create_note")
	require.Equal(t, "From OAuth", callOK(t, writer, "create_note", map[string]any{"parentNoteId": "root", "title": "From OAuth"})["title"])

	// The bearer token still works, with every tool.
	owner := connect(s.token)
	require.Contains(t, listTools(t, owner), "delete_note")

	// An issuer that cannot be reached stops the start, saying where it
	// looked.
	_, stderr, code = runBinary(t, bin, "-db", db, "-addr", "127.0.0.1:0", "-token", "t0ken", "-oauth-issuer", "http://127.0.0.1:1")
	require.Equal(t, 1, code)
	require.Equal(t, `notes-mcp: -oauth-issuer http://127.0.0.1:1: oauth: discovering the metadata of issuer http://127.0.0.1:1: Get "http://127.0.0.1:1/.well-known/oauth-authorization-server": dial tcp 127.0.0.1:1: connect: connection refused`+"\n", stderr)
}
