package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxDocument bounds the documents read from the authorization server:
// metadata and introspection answers.
const maxDocument = 1 << 20

// serverMetadata is what New reads of an authorization server's metadata
// (RFC 8414 §2, OpenID Connect Discovery §3).
type serverMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// metadataURLs returns where the metadata of issuer may be, in the order
// MCP clients look (MCP authorization, "Authorization Server Metadata
// Discovery"): for an issuer without a path, /.well-known/oauth-authorization-server
// and /.well-known/openid-configuration; for one with a path, such as
// /tenant, the well-known path inserted before it for both (RFC 8414
// §3.1), then /tenant/.well-known/openid-configuration, appended as
// OpenID Connect Discovery §4 has it.
func metadataURLs(issuer string) []string {
	u, _ := url.Parse(issuer) // checked by New
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	at := func(p string) string {
		v := *u
		v.Path, v.RawPath, v.RawQuery = "", "", ""
		return v.String() + p
	}
	if path == "" {
		return []string{
			at("/.well-known/oauth-authorization-server"),
			at("/.well-known/openid-configuration"),
		}
	}
	return []string{
		at("/.well-known/oauth-authorization-server" + path),
		at("/.well-known/openid-configuration" + path),
		at(path + "/.well-known/openid-configuration"),
	}
}

// discover fetches the metadata of issuer from the first of its
// metadataURLs that has it. A document that names another issuer is an
// error, not a reason to look further: the issuer is misconfigured, or the
// answer is not to be trusted (RFC 8414 §3.3).
func discover(ctx context.Context, client *http.Client, issuer string) (*serverMetadata, error) {
	var missing []string
	for _, u := range metadataURLs(issuer) {
		md, status, err := fetchMetadata(ctx, client, u)
		switch {
		case err != nil:
			return nil, fmt.Errorf("oauth: discovering the metadata of issuer %s: %w", issuer, err)
		case md == nil:
			missing = append(missing, fmt.Sprintf("%s (%s)", u, status))
		case md.Issuer != issuer:
			return nil, fmt.Errorf("oauth: the metadata at %s names the issuer %q, not %q; set Config.Issuer to the issuer exactly as its metadata names it", u, md.Issuer, issuer)
		default:
			return md, nil
		}
	}
	return nil, fmt.Errorf("oauth: no metadata of issuer %s at %s; check Config.Issuer, or set Config.JWKSURL", issuer, strings.Join(missing, ", "))
}

// fetchMetadata GETs one metadata document. A response other than 200 is
// no document (nil, with the status); a 200 that is not a JSON object is
// an error.
func fetchMetadata(ctx context.Context, client *http.Client, u string) (*serverMetadata, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocument))
		return nil, resp.Status, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", u, err)
	}
	if len(body) > maxDocument {
		return nil, "", fmt.Errorf("the metadata at %s is larger than %d bytes", u, maxDocument)
	}
	var md serverMetadata
	if err := json.Unmarshal(body, &md); err != nil {
		return nil, "", fmt.Errorf("the metadata at %s is not a JSON object of metadata: %w", u, err)
	}
	if md.Issuer == "" {
		return nil, "", errors.New("the metadata at " + u + ` has no "issuer"`)
	}
	return &md, resp.Status, nil
}
