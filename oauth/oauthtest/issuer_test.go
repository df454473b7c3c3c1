package oauthtest_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/oauth/oauthtest"
)

func getJSON(t *testing.T, u string) map[string]any {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

func TestIssuer(t *testing.T) {
	t.Parallel()
	iss := oauthtest.NewIssuer()
	t.Cleanup(iss.Close)

	md := map[string]any{
		"issuer":                 iss.URL,
		"jwks_uri":               iss.JWKSURL,
		"introspection_endpoint": iss.IntrospectionURL,
		"introspection_endpoint_auth_methods_supported": []any{"client_secret_basic"},
		"response_types_supported":                      []any{"code"},
	}
	require.Equal(t, md, getJSON(t, iss.URL+"/.well-known/oauth-authorization-server"))
	require.Equal(t, md, getJSON(t, iss.URL+"/.well-known/openid-configuration"))

	keys := getJSON(t, iss.JWKSURL)["keys"].([]any)
	require.Len(t, keys, 1)
	key := keys[0].(map[string]any)
	require.Equal(t, []any{"key-1", "ES256", "sig", "EC"}, []any{key["kid"], key["alg"], key["use"], key["kty"]})
	require.NotContains(t, key, "d", "the key set holds the public key only")
	require.Equal(t, 1, iss.KeySetRequests())

	token := iss.Token(map[string]any{"sub": "ada", "jti": nil, "exp": 2000000000})
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	var header, claims map[string]any
	for i, v := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, v))
	}
	require.Equal(t, map[string]any{"alg": "ES256", "kid": "key-1", "typ": "at+jwt"}, header)
	require.Equal(t, iss.URL, claims["iss"])
	require.Equal(t, "ada", claims["sub"])
	require.Equal(t, float64(2000000000), claims["exp"])
	require.NotContains(t, claims, "jti", "a nil claim is left out")
	require.Contains(t, claims, "iat")

	signed := strings.Split(iss.Sign(map[string]any{"typ": "JWT"}, []byte(`{"sub":"ada","sub":"eve"}`)), ".")
	require.Len(t, signed, 3)
	b, err := base64.RawURLEncoding.DecodeString(signed[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"alg":"ES256","kid":"key-1","typ":"JWT"}`, string(b))
	b, err = base64.RawURLEncoding.DecodeString(signed[1])
	require.NoError(t, err)
	require.Equal(t, `{"sub":"ada","sub":"eve"}`, string(b), "the payload as given")
	signed = strings.Split(iss.Sign(nil, []byte(`{}`)), ".")
	b, err = base64.RawURLEncoding.DecodeString(signed[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"alg":"ES256","kid":"key-1"}`, string(b), "no typ")

	require.PanicsWithValue(t, `oauthtest: RotateKey: unsupported algorithm "HS256"; use RS256, PS256, ES256, ES384 or EdDSA`, func() { iss.RotateKey("HS256") })
	iss.RotateKey("EdDSA")
	require.Equal(t, "key-2", iss.KeyID())
}

func TestIssuerIntrospection(t *testing.T) {
	t.Parallel()
	iss := oauthtest.NewIssuer()
	t.Cleanup(iss.Close)
	introspect := func(id, secret, token string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, iss.IntrospectionURL, strings.NewReader(url.Values{"token": {token}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	token := iss.OpaqueToken(map[string]any{"sub": "ada", "scope": "notes:read", "iat": nil, "jti": nil, "exp": 2000000000})

	status, body := introspect(oauthtest.ClientID, "guess", token)
	require.Equal(t, http.StatusUnauthorized, status)
	require.JSONEq(t, `{"error":"invalid_client"}`, body)

	status, body = introspect(oauthtest.ClientID, oauthtest.ClientSecret, token)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"active":true,"token_type":"Bearer","iss":"`+iss.URL+`","sub":"ada","scope":"notes:read","exp":2000000000}`, body)

	iss.Revoke(token)
	_, body = introspect(oauthtest.ClientID, oauthtest.ClientSecret, token)
	require.JSONEq(t, `{"active":false}`, body)
	_, body = introspect(oauthtest.ClientID, oauthtest.ClientSecret, iss.OpaqueToken(map[string]any{"exp": 1}))
	require.JSONEq(t, `{"active":false}`, body, "expired")
	require.Zero(t, iss.KeySetRequests())
}
