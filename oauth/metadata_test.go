package oauth_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/oauth"
)

func TestMetadataLocation(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	tests := []struct {
		resource, path, url string
	}{
		{"https://mcp.example.com/mcp", "/.well-known/oauth-protected-resource/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"},
		{"https://mcp.example.com", "/.well-known/oauth-protected-resource", "https://mcp.example.com/.well-known/oauth-protected-resource"},
		{"https://mcp.example.com/", "/.well-known/oauth-protected-resource", "https://mcp.example.com/.well-known/oauth-protected-resource"},
		{"http://127.0.0.1:8080/tenants/a/mcp/", "/.well-known/oauth-protected-resource/tenants/a/mcp", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/tenants/a/mcp"},
	}
	for _, tt := range tests {
		v := newVerifier(t, iss, func(c *oauth.Config) { c.Resource = tt.resource })
		require.Equal(t, tt.path, v.MetadataPath(), tt.resource)
		require.Equal(t, tt.url, v.MetadataURL(), tt.resource)
	}
}

func TestMetadataHandler(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	tests := []struct {
		name    string
		scopes  []string
		method  string
		status  int
		headers map[string]string
		body    string
	}{
		{"GET", []string{"notes:read", "notes:write"}, http.MethodGet, http.StatusOK,
			map[string]string{"Content-Type": "application/json", "Access-Control-Allow-Origin": "*"},
			`{"resource":"https://mcp.example.com/mcp","authorization_servers":["` + iss.URL + `"],"scopes_supported":["notes:read","notes:write"],"bearer_methods_supported":["header"]}`},
		{"GET without scopes", nil, http.MethodGet, http.StatusOK,
			map[string]string{"Content-Type": "application/json"},
			`{"resource":"https://mcp.example.com/mcp","authorization_servers":["` + iss.URL + `"],"bearer_methods_supported":["header"]}`},
		{"HEAD", nil, http.MethodHead, http.StatusOK, map[string]string{"Content-Type": "application/json"}, ""},
		{"CORS preflight", nil, http.MethodOptions, http.StatusNoContent,
			map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS", "Access-Control-Allow-Headers": "*"}, ""},
		{"POST", nil, http.MethodPost, http.StatusMethodNotAllowed,
			map[string]string{"Allow": "GET, HEAD, OPTIONS"}, "Only GET reads the protected resource metadata.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newVerifier(t, iss, func(c *oauth.Config) { c.ScopesSupported = tt.scopes })
			rec := httptest.NewRecorder()
			v.Metadata().ServeHTTP(rec, httptest.NewRequest(tt.method, v.MetadataURL(), nil))
			require.Equal(t, tt.status, rec.Code)
			for k, want := range tt.headers {
				require.Equal(t, want, rec.Header().Get(k), k)
			}
			if tt.status == http.StatusOK && tt.method == http.MethodGet {
				require.JSONEq(t, tt.body, rec.Body.String())
				return
			}
			require.Equal(t, tt.body, rec.Body.String())
		})
	}
}
