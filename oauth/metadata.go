package oauth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// wellKnownResource is the well-known path of protected resource metadata
// (RFC 9728 §3).
const wellKnownResource = "/.well-known/oauth-protected-resource"

// resourceMetadata is the protected resource metadata document (RFC 9728
// §2).
type resourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

func (v *Verifier) initMetadata() error {
	b, err := json.Marshal(resourceMetadata{
		Resource:               v.cfg.Resource,
		AuthorizationServers:   []string{v.cfg.Issuer},
		ScopesSupported:        v.cfg.ScopesSupported,
		BearerMethodsSupported: []string{"header"},
	})
	v.metadata = b
	u, _ := url.Parse(v.cfg.Resource) // checked by New
	v.metadataPath = wellKnownResource + strings.TrimSuffix(u.EscapedPath(), "/")
	return err
}

// MetadataPath returns the path at which to serve Metadata: the well-known
// path /.well-known/oauth-protected-resource with the path of
// Config.Resource appended (RFC 9728 §3.1), such as
// "/.well-known/oauth-protected-resource/mcp" for the resource
// "https://mcp.example.com/mcp". Mount it on the mux that serves the
// resource's host.
func (v *Verifier) MetadataPath() string { return v.metadataPath }

// MetadataURL returns the URL of the protected resource metadata: the
// scheme and host of Config.Resource and MetadataPath. Announce it to
// clients in the WWW-Authenticate header: set it as
// mcpadapter.Options.ResourceMetadata.
func (v *Verifier) MetadataURL() string {
	u, _ := url.Parse(v.cfg.Resource) // checked by New
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() + v.metadataPath
}

// Metadata returns the handler of the protected resource metadata (RFC
// 9728): a JSON document naming Config.Resource, Config.Issuer as its
// authorization server, Config.ScopesSupported and the header as the one
// way to send a token. Clients, browser-based ones too (it allows any
// origin: the document is public), read it to learn where to get a token.
// Mount it at MetadataPath.
func (v *Verifier) Metadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				_, _ = w.Write(v.metadata)
			}
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "*")
			w.WriteHeader(http.StatusNoContent)
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "Only GET reads the protected resource metadata.", http.StatusMethodNotAllowed)
		}
	})
}
