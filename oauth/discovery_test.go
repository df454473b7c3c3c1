package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/oauth"
	"github.com/llmtool/llmtool/oauth/oauthtest"
)

// metadataServer serves metadata documents at some well-known paths and
// records the paths asked for. A document's "issuer" and "jwks_uri" are
// filled in with the server's URL + issuerPath and keys, unless it sets
// them; "{URL}" in a string it sets stands for the server's URL.
type metadataServer struct {
	*httptest.Server
	mu    sync.Mutex
	asked []string
}

func newMetadataServer(t *testing.T, issuerPath, keys string, docs map[string]map[string]any) *metadataServer {
	t.Helper()
	m := &metadataServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.asked = append(m.asked, r.URL.Path)
		m.mu.Unlock()
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if doc == nil {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>Welcome</html>"))
			return
		}
		out := map[string]any{"issuer": m.URL + issuerPath, "jwks_uri": keys}
		for k, v := range doc {
			switch v := v.(type) {
			case nil:
				delete(out, k)
			case string:
				out[k] = strings.ReplaceAll(v, "{URL}", m.URL)
			default:
				out[k] = v
			}
		}
		w.Header().Set("Content-Type", "application/json")
		require.NoError(t, json.NewEncoder(w).Encode(out))
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *metadataServer) paths() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.asked...)
}

func TestDiscovery(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t) // signs the tokens; the metadata servers point to its key set
	const (
		oauthRoot   = "/.well-known/oauth-authorization-server"
		openidRoot  = "/.well-known/openid-configuration"
		oauthPath   = "/.well-known/oauth-authorization-server/tenant"
		openidPath  = "/.well-known/openid-configuration/tenant"
		openidAfter = "/tenant/.well-known/openid-configuration"
	)
	tests := []struct {
		name       string
		issuerPath string
		docs       map[string]map[string]any
		asked      []string
		err        string // with {URL} for the server's URL
	}{
		{name: "RFC 8414", docs: map[string]map[string]any{oauthRoot: {}, openidRoot: {"jwks_uri": "https://wrong.example.com"}},
			asked: []string{oauthRoot}},
		{name: "OpenID Connect", docs: map[string]map[string]any{openidRoot: {}},
			asked: []string{oauthRoot, openidRoot}},
		{name: "path inserted, RFC 8414", issuerPath: "/tenant", docs: map[string]map[string]any{oauthPath: {}},
			asked: []string{oauthPath}},
		{name: "path inserted, OpenID Connect", issuerPath: "/tenant", docs: map[string]map[string]any{openidPath: {}, openidAfter: {"jwks_uri": "https://wrong.example.com"}},
			asked: []string{oauthPath, openidPath}},
		{name: "path appended, OpenID Connect", issuerPath: "/tenant", docs: map[string]map[string]any{openidAfter: {}, oauthRoot: {"issuer": "https://wrong.example.com"}},
			asked: []string{oauthPath, openidPath, openidAfter}},
		{name: "issuer mismatch", docs: map[string]map[string]any{oauthRoot: {"issuer": "https://evil.example.com"}, openidRoot: {}},
			asked: []string{oauthRoot},
			err:   `oauth: the metadata at {URL}/.well-known/oauth-authorization-server names the issuer "https://evil.example.com", not "{URL}"; set Config.Issuer to the issuer exactly as its metadata names it`},
		{name: "issuer mismatch by a trailing slash", issuerPath: "/tenant", docs: map[string]map[string]any{oauthPath: {"issuer": "{URL}/tenant/"}},
			asked: []string{oauthPath},
			err:   `oauth: the metadata at {URL}/.well-known/oauth-authorization-server/tenant names the issuer "{URL}/tenant/", not "{URL}/tenant"; set Config.Issuer to the issuer exactly as its metadata names it`},
		{name: "no metadata", issuerPath: "/tenant", docs: map[string]map[string]any{oauthRoot: {}},
			asked: []string{oauthPath, openidPath, openidAfter},
			err:   "oauth: no metadata of issuer {URL}/tenant at {URL}/.well-known/oauth-authorization-server/tenant (404 Not Found), {URL}/.well-known/openid-configuration/tenant (404 Not Found), {URL}/tenant/.well-known/openid-configuration (404 Not Found); check Config.Issuer, or set Config.JWKSURL"},
		{name: "not JSON", docs: map[string]map[string]any{oauthRoot: nil},
			asked: []string{oauthRoot},
			err:   "oauth: discovering the metadata of issuer {URL}: the metadata at {URL}/.well-known/oauth-authorization-server is not a JSON object of metadata: invalid character '<' looking for beginning of value"},
		{name: "no issuer", docs: map[string]map[string]any{oauthRoot: {"issuer": nil}},
			asked: []string{oauthRoot},
			err:   `oauth: discovering the metadata of issuer {URL}: the metadata at {URL}/.well-known/oauth-authorization-server has no "issuer"`},
		{name: "no key set", docs: map[string]map[string]any{oauthRoot: {"jwks_uri": nil}},
			asked: []string{oauthRoot},
			err:   "oauth: the metadata of issuer {URL} has no jwks_uri; set Config.JWKSURL, or Config.Introspection for opaque tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newMetadataServer(t, tt.issuerPath, iss.JWKSURL, tt.docs)
			issuer := m.URL + tt.issuerPath
			v, err := oauth.New(context.Background(), oauth.Config{Issuer: issuer, Resource: resource})
			require.Equal(t, tt.asked, m.paths())
			if tt.err != "" {
				require.EqualError(t, err, strings.ReplaceAll(tt.err, "{URL}", m.URL))
				require.Nil(t, v)
				return
			}
			require.NoError(t, err)
			p, err := v.Verify(context.Background(), iss.Token(claims(map[string]any{"iss": issuer})))
			require.NoError(t, err)
			require.Equal(t, "oauth:ada", p.ID)
		})
	}
}

func TestDiscoveryIntrospection(t *testing.T) {
	t.Parallel()
	creds := &oauth.Introspection{ClientID: oauthtest.ClientID, ClientSecret: oauthtest.ClientSecret}

	m := newMetadataServer(t, "", "", map[string]map[string]any{"/.well-known/oauth-authorization-server": {"jwks_uri": nil}})
	_, err := oauth.New(context.Background(), oauth.Config{Issuer: m.URL, Resource: resource, Introspection: creds})
	require.EqualError(t, err, "oauth: the metadata of issuer "+m.URL+" has no introspection_endpoint; set Config.Introspection.URL")

	// With every URL given, New asks nothing.
	iss := newIssuer(t)
	for _, cfg := range []oauth.Config{
		{Issuer: m.URL, Resource: resource, JWKSURL: iss.JWKSURL},
		{Issuer: m.URL, Resource: resource, Introspection: &oauth.Introspection{URL: iss.IntrospectionURL, ClientID: "a", ClientSecret: "b"}},
	} {
		_, err := oauth.New(context.Background(), cfg)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"/.well-known/oauth-authorization-server"}, m.paths())
	require.Zero(t, iss.KeySetRequests(), "the key set is fetched for the first token, not by New")
}

func TestNewRefusesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  oauth.Config
		err  string
	}{
		{"no issuer", oauth.Config{Resource: resource}, "oauth: Config.Issuer is required"},
		{"no resource", oauth.Config{Issuer: "https://auth.example.com"}, "oauth: Config.Resource is required"},
		{"issuer without scheme", oauth.Config{Issuer: "auth.example.com", Resource: resource},
			`oauth: Config.Issuer "auth.example.com" is not an absolute https URL`},
		{"issuer with query", oauth.Config{Issuer: "https://auth.example.com?tenant=1", Resource: resource},
			`oauth: Config.Issuer "https://auth.example.com?tenant=1" has a query; leave it out`},
		{"resource with query", oauth.Config{Issuer: "https://auth.example.com", Resource: resource + "?workspace=red"},
			`oauth: Config.Resource "https://mcp.example.com/mcp?workspace=red" has a query; leave it out`},
		{"resource with fragment", oauth.Config{Issuer: "https://auth.example.com", Resource: resource + "#tools"},
			`oauth: Config.Resource "https://mcp.example.com/mcp#tools" has a fragment; leave it out`},
		{"resource not a URL", oauth.Config{Issuer: "https://auth.example.com", Resource: "https://mcp.example.com:port/"},
			`oauth: Config.Resource: parse "https://mcp.example.com:port/": invalid port ":port" after host`},
		{"introspection without secret", oauth.Config{Issuer: "https://auth.example.com", Resource: resource, Introspection: &oauth.Introspection{ClientID: "mcp"}},
			"oauth: Config.Introspection needs a ClientID and a ClientSecret: the credentials this server authenticates with at the introspection endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := oauth.New(context.Background(), tt.cfg)
			require.EqualError(t, err, tt.err)
			require.Nil(t, v)
		})
	}
}
