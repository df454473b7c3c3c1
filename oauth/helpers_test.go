package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/oauth"
	"github.com/llmtool/llmtool/oauth/oauthtest"
)

// resource is the resource identifier of the server under test.
const resource = "https://mcp.example.com/mcp"

// newIssuer starts an authorization server for one test.
func newIssuer(t *testing.T) *oauthtest.Issuer {
	t.Helper()
	iss := oauthtest.NewIssuer()
	t.Cleanup(iss.Close)
	return iss
}

// newVerifier discovers iss and verifies tokens for resource; edit, if
// not nil, changes the Config first.
func newVerifier(t *testing.T, iss *oauthtest.Issuer, edit func(*oauth.Config)) *oauth.Verifier {
	t.Helper()
	cfg := oauth.Config{Issuer: iss.URL, Resource: resource}
	if edit != nil {
		edit(&cfg)
	}
	v, err := oauth.New(context.Background(), cfg)
	require.NoError(t, err)
	if cfg.Introspection == nil {
		oauth.SetTimer(v, instant, nil)
	}
	return v
}

// instant is a timer that has fired already: a fetch of the key set put
// off by FetchGap happens at once. Tests of the waiting make their own.
func instant(time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	c <- time.Time{}
	return c
}

// authenticate sends token in an Authorization header ("" for none).
func authenticate(v *oauth.Verifier, header string) (*llmtool.Principal, error) {
	r := httptest.NewRequest(http.MethodPost, resource, nil)
	if header != "" {
		r.Header.Set("Authorization", header)
	}
	return v.Authenticate(r)
}

// refusal asserts that err is a *TokenError wrapping sentinel, with the
// log text msg and the client's description.
func refusal(t *testing.T, err error, sentinel error, msg, description string) {
	t.Helper()
	require.ErrorIs(t, err, sentinel)
	require.EqualError(t, err, msg)
	var te *oauth.TokenError
	require.True(t, errors.As(err, &te), "%T is not a *TokenError", err)
	code, desc := te.BearerError()
	require.Equal(t, "invalid_token", code)
	require.Equal(t, description, desc)
}

// at formats a NumericDate as the refusals do.
func at(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }

// sign signs claims with key under the header kid, as an attacker who
// knows the issuer's key ID but not its key would.
func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("at+jwt"))
	require.NoError(t, err)
	obj, err := signer.Sign(payload)
	require.NoError(t, err)
	token, err := obj.CompactSerialize()
	require.NoError(t, err)
	return token
}

// attackerKey is an EC key the issuer never published.
func attackerKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return k
}

// rsaKey is an RSA key the issuer never published.
func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}

// clock is a clock for SetClock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// unsigned returns a token with "alg": "none" and no signature.
func unsigned(t *testing.T, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"at+jwt"}`)) + "." + enc(payload) + "."
}

// get fetches a URL and returns its body.
func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}
