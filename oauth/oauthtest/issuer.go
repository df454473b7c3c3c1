// Package oauthtest provides an OAuth authorization server for the tests
// of resource servers, as net/http/httptest provides HTTP servers: it
// issues signed JWT access tokens and opaque tokens, and serves what a
// resource server reads (its metadata, its key set, token introspection)
// on a local httptest.Server.
package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Credentials of the introspection endpoint.
const (
	ClientID     = "resource-server"
	ClientSecret = "resource-server-secret"
)

// Issuer is an authorization server for tests. Its metadata is at
// URL + "/.well-known/oauth-authorization-server" and at
// URL + "/.well-known/openid-configuration", and names URL as the
// issuer, JWKSURL and IntrospectionURL. It is safe for concurrent use.
type Issuer struct {
	// URL is the issuer identifier: the server's base URL, such as
	// "http://127.0.0.1:50123".
	URL string
	// JWKSURL is where its JSON Web Key Set is: the public key of its
	// current signing key.
	JWKSURL string
	// IntrospectionURL is its token introspection endpoint (RFC 7662).
	// It accepts ClientID and ClientSecret with HTTP Basic
	// authentication, and answers about the tokens it issued.
	IntrospectionURL string

	srv *httptest.Server

	mu         sync.Mutex
	key        jose.JSONWebKey // the current signing key, private
	keys       int             // keys made so far, for key IDs
	issued     map[string]map[string]any
	revoked    map[string]bool
	keyFetches int
}

// NewIssuer starts an Issuer whose signing key is a new ES256 (P-256)
// key. Call Close when done.
func NewIssuer() *Issuer {
	i := &Issuer{issued: map[string]map[string]any{}, revoked: map[string]bool{}}
	i.RotateKey("ES256")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", i.serveMetadata)
	mux.HandleFunc("GET /.well-known/openid-configuration", i.serveMetadata)
	mux.HandleFunc("GET /jwks", i.serveKeys)
	mux.HandleFunc("POST /introspect", i.serveIntrospection)
	// The URLs are set before the server starts serving, which may be
	// asked for them by another process at once.
	i.srv = httptest.NewUnstartedServer(mux)
	i.URL = "http://" + i.srv.Listener.Addr().String()
	i.JWKSURL = i.URL + "/jwks"
	i.IntrospectionURL = i.URL + "/introspect"
	i.srv.Start()
	return i
}

// Close shuts the server down.
func (i *Issuer) Close() { i.srv.Close() }

// RotateKey replaces the signing key with a new key for alg: "RS256",
// "PS256", "ES256", "ES384" or "EdDSA". The key set then holds the new
// key only, as after the old one was compromised: tokens signed with the
// old key no longer verify. It panics on another alg.
func (i *Issuer) RotateKey(alg string) {
	var priv crypto.Signer
	var err error
	switch alg {
	case "RS256", "PS256":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ES384":
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "EdDSA":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		panic(fmt.Sprintf("oauthtest: RotateKey: unsupported algorithm %q; use RS256, PS256, ES256, ES384 or EdDSA", alg))
	}
	if err != nil {
		panic("oauthtest: generating a key: " + err.Error())
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keys++
	i.key = jose.JSONWebKey{Key: priv, KeyID: fmt.Sprintf("key-%d", i.keys), Algorithm: alg, Use: "sig"}
}

// KeyID returns the key ID ("kid") of the current signing key.
func (i *Issuer) KeyID() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.key.KeyID
}

// KeySetRequests returns how many times the key set was fetched: a
// resource server that caches it fetches it once until a key rotates.
func (i *Issuer) KeySetRequests() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.keyFetches
}

// Token returns a JWT access token (RFC 9068, "typ": "at+jwt") with
// claims, signed with the current key. "iss" defaults to URL, "iat" to
// now, "exp" to an hour from now and "jti" to a random ID; a claim given
// as nil is left out. Pass "aud" (the resource server's identifier),
// "sub" and "scope" ("notes:read notes:write"). The token is also known
// to the introspection endpoint.
func (i *Issuer) Token(claims map[string]any) string {
	c := i.claims(claims)
	payload, err := json.Marshal(c)
	if err != nil {
		panic("oauthtest: Token: " + err.Error())
	}
	token := i.Sign(map[string]any{"typ": "at+jwt"}, payload)
	i.remember(token, c)
	return token
}

// Sign returns a compact JWS of payload, the bytes given (no claim is
// defaulted), signed with the current key: for tokens Token cannot make,
// such as an ID token ("typ": "JWT"), one without "typ", or claims a JSON
// encoder would not write (a claim named twice). header holds the
// protected header's fields besides "alg" and "kid", such as "typ". The
// introspection endpoint does not know the token.
func (i *Issuer) Sign(header map[string]any, payload []byte) string {
	i.mu.Lock()
	key := i.key
	i.mu.Unlock()
	opts := &jose.SignerOptions{}
	for k, v := range header {
		opts.WithHeader(jose.HeaderKey(k), v)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(key.Algorithm), Key: key}, opts)
	if err != nil {
		panic("oauthtest: Sign: " + err.Error())
	}
	sig, err := signer.Sign(payload)
	if err != nil {
		panic("oauthtest: Sign: " + err.Error())
	}
	token, err := sig.CompactSerialize()
	if err != nil {
		panic("oauthtest: Sign: " + err.Error())
	}
	return token
}

// OpaqueToken returns a random token that only the introspection endpoint
// understands: it answers with claims, defaulted as Token does.
func (i *Issuer) OpaqueToken(claims map[string]any) string {
	token := "opaque-" + randomID()
	i.remember(token, i.claims(claims))
	return token
}

// Revoke revokes a token: the introspection endpoint then answers that it
// is not active. A JWT still verifies against the key set until it
// expires, as with any authorization server.
func (i *Issuer) Revoke(token string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.revoked[token] = true
}

func (i *Issuer) claims(claims map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": i.URL, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": randomID()}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	// As the claims go on the wire: numbers are float64s.
	b, err := json.Marshal(c)
	if err == nil {
		c = nil
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		panic("oauthtest: claims: " + err.Error())
	}
	return c
}

func (i *Issuer) remember(token string, claims map[string]any) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.issued[token] = claims
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

func (i *Issuer) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                 i.URL,
		"jwks_uri":               i.JWKSURL,
		"introspection_endpoint": i.IntrospectionURL,
		"introspection_endpoint_auth_methods_supported": []string{"client_secret_basic"},
		"response_types_supported":                      []string{"code"},
	})
}

func (i *Issuer) serveKeys(w http.ResponseWriter, _ *http.Request) {
	i.mu.Lock()
	i.keyFetches++
	key := i.key.Public()
	i.mu.Unlock()
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{key}})
}

// serveIntrospection answers RFC 7662 §2.2: the token's claims with
// "active": true, or only "active": false for a token it did not issue,
// revoked or expired.
func (i *Issuer) serveIntrospection(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	id, _ = url.QueryUnescape(id)
	secret, _ = url.QueryUnescape(secret)
	if !ok || id != ClientID || secret != ClientSecret {
		w.Header().Set("WWW-Authenticate", `Basic realm="introspection"`)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client"})
		return
	}
	token := r.PostFormValue("token")
	i.mu.Lock()
	claims, issued := i.issued[token]
	active := issued && !i.revoked[token]
	i.mu.Unlock()
	if exp, ok := claims["exp"].(float64); ok && float64(time.Now().Unix()) >= exp {
		active = false
	}
	if !active {
		writeJSON(w, http.StatusOK, map[string]any{"active": false})
		return
	}
	answer := map[string]any{"active": true, "token_type": "Bearer"}
	for k, v := range claims {
		answer[k] = v
	}
	writeJSON(w, http.StatusOK, answer)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
