package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/oauth"
	"github.com/llmtool/llmtool/oauth/oauthtest"
)

// claims are a valid token's claims for resource, with edits: a nil value
// leaves the claim out.
func claims(edits map[string]any) map[string]any {
	c := map[string]any{"sub": "ada", "aud": resource, "scope": "notes:read", "name": "Ada"}
	maps.Copy(c, edits)
	return c
}

func TestVerifyJWT(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	other := newIssuer(t) // another authorization server, whose key ID is the same
	v := newVerifier(t, iss, nil)
	now := time.Now().Unix()
	sigDesc := "The access token is not signed with a key of the authorization server; get a new token from the authorization server."
	notVerified := `oauth: token signature not verified: key "key-1" does not verify the signature: go-jose/go-jose: error in cryptographic primitive`

	valid := iss.Token(claims(nil))
	parts := strings.Split(valid, ".")
	tampered := iss.Token(claims(map[string]any{"scope": "notes:read notes:write"}))
	tampered = parts[0] + "." + strings.Split(tampered, ".")[1] + "." + parts[2]

	tests := []struct {
		name  string
		token string
		want  *llmtool.Principal
		// for a refusal
		sentinel         error
		msg, description string
	}{
		{name: "valid", token: valid,
			want: &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Scopes: []string{"notes:read"}}},
		{name: "audience among several, client ID, scp array",
			token: iss.Token(claims(map[string]any{"aud": []string{"https://api.example.com", resource}, "scope": nil, "scp": []string{"notes:read", "notes:write"}, "client_id": "claude", "name": nil, "preferred_username": "ada@example.com"})),
			want:  &llmtool.Principal{ID: "oauth:ada", Name: "ada@example.com", Scopes: []string{"notes:read", "notes:write"}, Attrs: map[string]string{"client_id": "claude"}}},
		{name: "no scope at all limits to tools without scopes, azp",
			token: iss.Token(claims(map[string]any{"scope": nil, "sub": "cron-job", "azp": "cron-job", "name": nil})),
			want:  &llmtool.Principal{ID: "oauth:cron-job", Scopes: []string{}, Attrs: map[string]string{"client_id": "cron-job"}}},
		{name: "expired within the clock skew", token: iss.Token(claims(map[string]any{"exp": now - 30})),
			want: &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Scopes: []string{"notes:read"}}},
		{name: "expired beyond the clock skew", token: iss.Token(claims(map[string]any{"exp": now - 120})),
			sentinel: oauth.ErrExpired, msg: "oauth: token expired at " + at(now-120) + ", more than 1m0s before now",
			description: "The access token expired at " + at(now-120) + "; get a new one from the authorization server."},
		{name: "not yet valid", token: iss.Token(claims(map[string]any{"nbf": now + 300})),
			sentinel: oauth.ErrExpired, msg: "oauth: token expired: not valid before " + at(now+300) + ", more than 1m0s after now",
			description: "The access token is not valid before " + at(now+300) + "; check the clocks of this server and the authorization server."},
		{name: "no expiry", token: iss.Token(claims(map[string]any{"exp": nil})),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: no "exp" claim`,
			description: "The access token has no expiry time; this server accepts only tokens that expire."},
		{name: "wrong audience", token: iss.Token(claims(map[string]any{"aud": "https://other.example.com/mcp"})),
			sentinel: oauth.ErrAudience, msg: `oauth: token for another audience: ["https://other.example.com/mcp"], want "https://mcp.example.com/mcp"`,
			description: "The access token is not for this server: its audience is https://other.example.com/mcp, not https://mcp.example.com/mcp; get a token with the resource parameter https://mcp.example.com/mcp (RFC 8707)."},
		{name: "no audience", token: iss.Token(claims(map[string]any{"aud": nil})),
			sentinel: oauth.ErrAudience, msg: `oauth: token for another audience: [], want "https://mcp.example.com/mcp"`,
			description: "The access token is not for this server: its audience is empty, not https://mcp.example.com/mcp; get a token with the resource parameter https://mcp.example.com/mcp (RFC 8707)."},
		{name: "wrong issuer", token: iss.Token(claims(map[string]any{"iss": "https://evil.example.com"})),
			sentinel: oauth.ErrIssuer, msg: `oauth: token of another issuer: "https://evil.example.com", want "` + iss.URL + `"`,
			description: "The access token was issued by https://evil.example.com, not by " + iss.URL + "; get a token from " + iss.URL + "."},
		{name: "no issuer", token: iss.Token(claims(map[string]any{"iss": nil})),
			sentinel: oauth.ErrIssuer, msg: `oauth: token of another issuer: no "iss" claim`,
			description: "The access token names no issuer; get a token from " + iss.URL + "."},
		{name: "no subject", token: iss.Token(claims(map[string]any{"sub": nil})),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: no "sub" claim`, description: noSubject},
		{name: "a client ID but no subject", token: iss.Token(claims(map[string]any{"sub": nil, "client_id": "alice"})),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: no "sub" claim`, description: noSubject},
		{name: "azp but no subject", token: iss.Token(claims(map[string]any{"sub": nil, "azp": "alice"})),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: no "sub" claim`, description: noSubject},
		{name: "empty subject", token: iss.Token(claims(map[string]any{"sub": ""})),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: no "sub" claim`, description: noSubject},
		{name: "malformed claim", token: iss.Token(claims(map[string]any{"aud": 42})),
			sentinel: oauth.ErrMalformed, msg: "oauth: malformed token: claims: want a string or an array of strings, not 42",
			description: "The access token's claims are malformed; get a new token from the authorization server."},
		{name: "malformed date", token: iss.Token(claims(map[string]any{"exp": "tomorrow"})),
			sentinel: oauth.ErrMalformed, msg: `oauth: malformed token: claims: want a number of seconds since 1970, not "tomorrow"`,
			description: "The access token's claims are malformed; get a new token from the authorization server."},
		{name: "key of another algorithm", token: sign(t, jose.PS256, rsaKey(t), iss.KeyID(), claims(map[string]any{"iss": iss.URL, "exp": now + 60})),
			sentinel: oauth.ErrSignature, msg: `oauth: token signature not verified: key "key-1" is for ES256, not PS256`, description: sigDesc},
		{name: "unknown key", token: sign(t, jose.ES256, attackerKey(t), "key-9", claims(map[string]any{"iss": iss.URL, "exp": now + 60})),
			sentinel: oauth.ErrSignature, msg: `oauth: token signature not verified: the issuer's key set has no key "key-9"`, description: sigDesc},
		{name: "no key ID", token: sign(t, jose.ES256, attackerKey(t), "", claims(map[string]any{"iss": iss.URL, "exp": now + 60})),
			sentinel: oauth.ErrSignature, msg: `oauth: token signature not verified: no key of the issuer verifies the token, which names none`, description: sigDesc},
		{name: "not base64", token: "a.b.c",
			sentinel: oauth.ErrMalformed, msg: "oauth: malformed token: illegal base64 data at input byte 0",
			description: "The access token is not a well-formed JWT; send the access token the authorization server issued."},
		{name: "another issuer's key", token: other.Token(claims(map[string]any{"iss": iss.URL})),
			sentinel: oauth.ErrSignature, msg: notVerified, description: sigDesc},
		{name: "forged signature", token: sign(t, jose.ES256, attackerKey(t), iss.KeyID(), claims(map[string]any{"iss": iss.URL, "exp": now + 60})),
			sentinel: oauth.ErrSignature, msg: notVerified, description: sigDesc},
		{name: "tampered claims", token: tampered,
			sentinel: oauth.ErrSignature, msg: notVerified, description: sigDesc},
		{name: "alg none", token: unsigned(t, claims(map[string]any{"iss": iss.URL, "exp": now + 60})),
			sentinel: oauth.ErrSignature, msg: `oauth: token signature not verified: algorithm "none" not accepted`,
			description: "The access token is signed with the algorithm none, which this server does not accept; get a new token from the authorization server."},
		{name: "HMAC keyed with the public key set", token: sign(t, jose.HS256, get(t, iss.JWKSURL), iss.KeyID(), claims(map[string]any{"iss": iss.URL, "exp": now + 60})),
			sentinel: oauth.ErrSignature, msg: `oauth: token signature not verified: algorithm "HS256" not accepted`,
			description: "The access token is signed with the algorithm HS256, which this server does not accept; get a new token from the authorization server."},
		{name: "not a JWT", token: "opaque-0123456789",
			sentinel: oauth.ErrMalformed, msg: "oauth: malformed token: not a compact JWT",
			description: "The access token is not a JWT; send the access token the authorization server issued."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := authenticate(v, "Bearer "+tt.token)
			if tt.want != nil {
				require.NoError(t, err)
				require.Equal(t, tt.want, p)
				return
			}
			require.Nil(t, p)
			refusal(t, err, tt.sentinel, tt.msg, tt.description)
		})
	}
}

func TestAuthenticateHeader(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	v := newVerifier(t, iss, nil)
	token := iss.Token(claims(nil))
	for _, header := range []string{"", "Basic YWRhOng=", "Bearer", "Bearer   ", token} {
		p, err := authenticate(v, header)
		require.Nil(t, p, header)
		require.ErrorIs(t, err, oauth.ErrNoToken, header)
		require.EqualError(t, err, "oauth: no bearer token")
	}
	p, err := authenticate(v, "bearer  "+token+" ")
	require.NoError(t, err)
	require.Equal(t, "oauth:ada", p.ID)
	require.Zero(t, iss.KeySetRequests()-1, "the key set is fetched once")
}

func TestClockSkew(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	now := time.Now().Unix()
	tests := []struct {
		name string
		skew time.Duration
		exp  int64
		msg  string // "" if accepted
	}{
		{"none allowed", -1, now - 30, "oauth: token expired at " + at(now-30) + ", more than 0s before now"},
		{"five minutes", 5 * time.Minute, now - 120, ""},
		{"five minutes, beyond", 5 * time.Minute, now - 600, "oauth: token expired at " + at(now-600) + ", more than 5m0s before now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newVerifier(t, iss, func(c *oauth.Config) { c.ClockSkew = tt.skew })
			p, err := v.Verify(context.Background(), iss.Token(claims(map[string]any{"exp": tt.exp})))
			if tt.msg == "" {
				require.NoError(t, err)
				require.Equal(t, "oauth:ada", p.ID)
				return
			}
			require.ErrorIs(t, err, oauth.ErrExpired)
			require.EqualError(t, err, tt.msg)
		})
	}
}

// The key set is fetched once and cached; a token signed with a key the
// cache does not hold has it fetched again, so the issuer can rotate its
// keys, and a token of a withdrawn key is refused, fetching at most once
// per MinRefresh.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"RS256", "PS256", "ES384", "EdDSA"} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss := newIssuer(t)
			v := newVerifier(t, iss, nil)
			clock := newClock()
			oauth.SetClock(v, clock.now)
			ctx := context.Background()
			old := iss.Token(claims(nil))
			for range 3 {
				_, err := v.Verify(ctx, old)
				require.NoError(t, err)
			}
			require.Equal(t, 1, iss.KeySetRequests(), "cached")

			iss.RotateKey(alg)
			p, err := v.Verify(ctx, iss.Token(claims(nil)))
			require.NoError(t, err)
			require.Equal(t, "oauth:ada", p.ID)
			require.Equal(t, 2, iss.KeySetRequests(), "fetched again for the new key ID")

			withdrawn := `oauth: token signature not verified: the issuer's key set has no key "key-1"`
			_, err = v.Verify(ctx, old)
			refusal(t, err, oauth.ErrSignature, withdrawn, signatureRefused)
			require.Equal(t, 3, iss.KeySetRequests(), "fetched once for the withdrawn key ID")
			_, err = v.Verify(ctx, old)
			refusal(t, err, oauth.ErrSignature, withdrawn, signatureRefused)
			require.Equal(t, 3, iss.KeySetRequests(), "not again within MinRefresh")

			clock.advance(oauth.MinRefresh)
			_, err = v.Verify(ctx, old)
			refusal(t, err, oauth.ErrSignature, withdrawn, signatureRefused)
			require.Equal(t, 4, iss.KeySetRequests(), "fetched again after MinRefresh")
		})
	}
}

const signatureRefused = "The access token is not signed with a key of the authorization server; get a new token from the authorization server."

// timer is a fetch put off by FetchGap, which the test starts by sending
// on fire.
type timer struct {
	d    time.Duration
	fire chan time.Time
}

// timers makes v's key set put its fetches off on timers the test fires:
// each one put off arrives on the first channel, and each request that
// starts waiting for a fetch sends on the second.
func timers(v *oauth.Verifier) (<-chan timer, <-chan struct{}) {
	put := make(chan timer)
	waiting := make(chan struct{}, 4*oauth.MaxMissed)
	oauth.SetTimer(v, func(d time.Duration) <-chan time.Time {
		t := timer{d: d, fire: make(chan time.Time, 1)}
		put <- t
		return t.fire
	}, func() { waiting <- struct{}{} })
	return put, waiting
}

// madeUp returns a token signed with key under the key ID kid.
func madeUp(t *testing.T, iss *oauthtest.Issuer, key any, kid string) string {
	t.Helper()
	return sign(t, jose.ES256, key, kid, claims(map[string]any{"iss": iss.URL, "exp": time.Now().Unix() + 60}))
}

// flood verifies the tokens at once, each in a goroutine, and returns
// their errors in the order of tokens once all have come back. Before it
// returns, it waits until all are waiting for the key set, then fires
// the one timer they wait for.
func flood(t *testing.T, v *oauth.Verifier, put <-chan timer, waiting <-chan struct{}, tokens []string) []error {
	t.Helper()
	errs := make([]error, len(tokens))
	done := make(chan struct{})
	for i, token := range tokens {
		go func() {
			_, errs[i] = v.Verify(context.Background(), token)
			done <- struct{}{}
		}()
	}
	tm := <-put
	require.Equal(t, oauth.FetchGap, tm.d)
	for range tokens {
		<-waiting
	}
	tm.fire <- time.Time{}
	for range tokens {
		<-done
	}
	return errs
}

// Tokens with made-up key IDs cannot make the server flood the issuer with
// requests for its key set, nor keep a rotated key from verifying: each
// key ID costs at most one fetch per MinRefresh, the fetches of all of
// them are at least FetchGap apart, and the first token of a new key
// waits for the next fetch instead of being refused.
func TestKeySetFlood(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	v := newVerifier(t, iss, nil)
	clock := newClock()
	oauth.SetClock(v, clock.now)
	put, waiting := timers(v)
	ctx := context.Background()
	_, err := v.Verify(ctx, iss.Token(claims(nil)))
	require.NoError(t, err)
	<-waiting
	require.Equal(t, 1, iss.KeySetRequests())

	key := attackerKey(t)
	for i := range 5 {
		_, err := v.Verify(ctx, sign(t, jose.ES256, key, iss.KeyID(), claims(map[string]any{"iss": iss.URL, "exp": time.Now().Unix() + 60, "jti": i})))
		require.ErrorIs(t, err, oauth.ErrSignature)
	}
	require.Equal(t, 1, iss.KeySetRequests(), "a forged signature under a known key ID fetches nothing")

	// 100 made-up key IDs at once: one fetch, FetchGap after the last.
	var tokens []string
	for i := range 100 {
		tokens = append(tokens, madeUp(t, iss, key, fmt.Sprintf("made-up-%d", i)))
	}
	for i, err := range flood(t, v, put, waiting, tokens) {
		refusal(t, err, oauth.ErrSignature, fmt.Sprintf(`oauth: token signature not verified: the issuer's key set has no key "made-up-%d"`, i), signatureRefused)
	}
	require.Equal(t, 2, iss.KeySetRequests(), "one fetch for the flood")

	// Again: refused at once, without a fetch or a wait.
	for i, token := range tokens {
		_, err := v.Verify(ctx, token)
		refusal(t, err, oauth.ErrSignature, fmt.Sprintf(`oauth: token signature not verified: the issuer's key set has no key "made-up-%d"`, i), signatureRefused)
	}
	require.Equal(t, 2, iss.KeySetRequests(), "a key ID missed costs nothing more within MinRefresh")
	require.Empty(t, waiting)

	// The issuer rotates its key right after the flood's fetch began:
	// the first tokens of the new key wait FetchGap, for one fetch, and
	// verify.
	clock.advance(oauth.FetchGap)
	iss.RotateKey("ES256")
	fresh := []string{iss.Token(claims(nil)), iss.Token(claims(map[string]any{"sub": "bob"})), iss.Token(claims(map[string]any{"sub": "cy"}))}
	for i, err := range flood(t, v, put, waiting, fresh) {
		require.NoError(t, err, "token %d of the new key verifies on its first try", i)
	}
	require.Equal(t, 3, iss.KeySetRequests())
	p, err := v.Verify(ctx, fresh[0])
	require.NoError(t, err)
	require.Equal(t, "oauth:ada", p.ID)
	require.Equal(t, 3, iss.KeySetRequests())

	// After MinRefresh, a made-up key ID costs one fetch again; not
	// waiting, FetchGap having passed.
	clock.advance(oauth.MinRefresh)
	_, err = v.Verify(ctx, tokens[0])
	refusal(t, err, oauth.ErrSignature, `oauth: token signature not verified: the issuer's key set has no key "made-up-0"`, signatureRefused)
	<-waiting
	require.Equal(t, 4, iss.KeySetRequests())
	_, err = v.Verify(ctx, tokens[0])
	require.ErrorIs(t, err, oauth.ErrSignature)
	require.Equal(t, 4, iss.KeySetRequests())
}

// The key IDs remembered as missing are bounded: beyond MaxMissed recent
// ones the rest are not remembered (FetchGap still bounds their fetches),
// and those older than MinRefresh make room.
func TestKeySetMissedBounded(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	v := newVerifier(t, iss, nil)
	clock := newClock()
	oauth.SetClock(v, clock.now)
	put, waiting := timers(v)
	_, err := v.Verify(context.Background(), iss.Token(claims(nil)))
	require.NoError(t, err)
	<-waiting

	key := attackerKey(t)
	var tokens []string
	for i := range oauth.MaxMissed + 10 {
		tokens = append(tokens, madeUp(t, iss, key, fmt.Sprintf("made-up-%d", i)))
	}
	for _, err := range flood(t, v, put, waiting, tokens) {
		require.ErrorIs(t, err, oauth.ErrSignature)
	}
	require.Equal(t, 2, iss.KeySetRequests())
	require.Equal(t, oauth.MaxMissed, oauth.MissedKeyIDs(v))

	clock.advance(oauth.MinRefresh)
	_, err = v.Verify(context.Background(), madeUp(t, iss, key, "one-more"))
	require.ErrorIs(t, err, oauth.ErrSignature)
	<-waiting
	require.Equal(t, 1, oauth.MissedKeyIDs(v), "the ones missed MinRefresh ago are forgotten")
}

// keyServer serves the key set of iss, with extra keys before its own,
// or fails with 500 while down is set.
type keyServer struct {
	*httptest.Server
	down  atomic.Bool
	extra []map[string]any
}

func newKeyServer(t *testing.T, iss *oauthtest.Issuer, extra ...map[string]any) *keyServer {
	t.Helper()
	k := &keyServer{extra: extra}
	k.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k.down.Load() {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		}
		var set struct {
			Keys []map[string]any `json:"keys"`
		}
		require.NoError(t, json.Unmarshal(get(t, iss.JWKSURL), &set))
		if len(k.extra) > 0 && k.extra[0] == nil {
			set.Keys = nil // only the extra keys
		}
		for _, e := range k.extra {
			if e != nil {
				set.Keys = append([]map[string]any{e}, set.Keys...)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		require.NoError(t, json.NewEncoder(w).Encode(set))
	}))
	t.Cleanup(k.Close)
	return k
}

// The key set is fetched again after MaxKeyAge; if that fails, the keys
// held are used until it succeeds. Without keys, tokens are refused as the
// issuer being unavailable.
func TestKeySetUnavailable(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	keys := newKeyServer(t, iss)
	v := newVerifier(t, iss, func(c *oauth.Config) { c.JWKSURL = keys.URL })
	clock := newClock()
	oauth.SetClock(v, clock.now)
	ctx := context.Background()
	token := iss.Token(claims(nil))

	keys.down.Store(true)
	down := "oauth: authorization server unavailable: fetching the key set: the key set at " + keys.URL + ": 500 Internal Server Error"
	unavailable := "The authorization server's keys could not be fetched to verify the access token; try again later."
	_, err := v.Verify(ctx, token)
	refusal(t, err, oauth.ErrUnavailable, down, unavailable)
	keys.down.Store(false)
	_, err = v.Verify(ctx, token)
	refusal(t, err, oauth.ErrUnavailable, down, unavailable) // within FetchGap: the last fetch's error, at once

	clock.advance(oauth.MinRefresh)
	_, err = v.Verify(ctx, token)
	require.NoError(t, err)

	// A key ID the keys held lack while the issuer is down: refused, and
	// not remembered as missing, so that it is looked for again.
	keys.down.Store(true)
	clock.advance(oauth.FetchGap)
	rotated := madeUp(t, iss, attackerKey(t), "key-2")
	_, err = v.Verify(ctx, rotated)
	refusal(t, err, oauth.ErrSignature, `oauth: token signature not verified: the issuer's key set has no key "key-2"`, signatureRefused)
	require.Zero(t, oauth.MissedKeyIDs(v))
	keys.down.Store(false)
	_, err = v.Verify(ctx, rotated)
	refusal(t, err, oauth.ErrSignature, `oauth: token signature not verified: the issuer's key set has no key "key-2"`, signatureRefused)
	require.Equal(t, 1, oauth.MissedKeyIDs(v))

	keys.down.Store(true)
	clock.advance(oauth.MaxKeyAge)
	_, err = v.Verify(ctx, token)
	require.NoError(t, err, "the keys held are used while the issuer is down")
}

// A request that joins a fetch begun before its token came waits for the
// next one if that fetch did not find its key: the issuer may have
// published the key since. A request whose context ends stops waiting.
func TestKeySetFetchBegunBefore(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	var fetches atomic.Int32
	var gated atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		if gated.Load() {
			entered <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(get(t, iss.JWKSURL))
	}))
	t.Cleanup(srv.Close)
	v := newVerifier(t, iss, func(c *oauth.Config) { c.JWKSURL = srv.URL })
	clock := newClock()
	oauth.SetClock(v, clock.now)
	put, waiting := timers(v)
	ctx := context.Background()
	_, err := v.Verify(ctx, iss.Token(claims(nil)))
	require.NoError(t, err)
	<-waiting

	gated.Store(true)
	clock.advance(oauth.FetchGap)
	key := attackerKey(t)
	errs := make(chan error, 2)
	go func() {
		_, err := v.Verify(ctx, madeUp(t, iss, key, "made-up-a"))
		errs <- err
	}()
	<-waiting
	<-entered // a's fetch is under way
	clock.advance(time.Millisecond)
	go func() {
		_, err := v.Verify(ctx, madeUp(t, iss, key, "made-up-b"))
		errs <- err
	}()
	<-waiting // b joined it
	release <- struct{}{}
	require.ErrorIs(t, <-errs, oauth.ErrSignature) // a: the fetch began as it came
	tm := <-put                                    // b: the next one, FetchGap after
	require.Equal(t, oauth.FetchGap-time.Millisecond, tm.d)
	<-waiting
	tm.fire <- time.Time{}
	<-entered
	release <- struct{}{}
	refusal(t, <-errs, oauth.ErrSignature, `oauth: token signature not verified: the issuer's key set has no key "made-up-b"`, signatureRefused)
	require.Equal(t, int32(3), fetches.Load())
	require.Equal(t, 2, oauth.MissedKeyIDs(v))

	// A request that gives up waiting is refused; the fetch goes on.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = v.Verify(canceled, madeUp(t, iss, key, "made-up-c"))
	refusal(t, err, oauth.ErrSignature, `oauth: token signature not verified: the issuer's key set has no key "made-up-c"`, signatureRefused)
	tm = <-put
	tm.fire <- time.Time{}
	<-entered
	release <- struct{}{}
}

// Keys this server cannot use are skipped, not a reason to refuse the set.
func TestKeySetSkipsUnusableKeys(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	unusable := []map[string]any{
		{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
		{"kty": "OKP", "kid": "x448", "crv": "X448", "x": "AAAA"},
		{"kty": "EC", "kid": "k1", "alg": "ES256K", "crv": "secp256k1", "x": "AAAA", "y": "AAAA"},
		{"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
		{"kty": "RSA", "kid": "broken", "n": 17},
	}
	keys := newKeyServer(t, iss, unusable...)
	v := newVerifier(t, iss, func(c *oauth.Config) { c.JWKSURL = keys.URL })
	p, err := v.Verify(context.Background(), iss.Token(claims(nil)))
	require.NoError(t, err)
	require.Equal(t, "oauth:ada", p.ID)

	none := newKeyServer(t, iss, append([]map[string]any{nil}, unusable...)...)
	v = newVerifier(t, iss, func(c *oauth.Config) { c.JWKSURL = none.URL })
	_, err = v.Verify(context.Background(), iss.Token(claims(nil)))
	refusal(t, err, oauth.ErrUnavailable, "oauth: authorization server unavailable: fetching the key set: the key set at "+none.URL+" has no public signing key of a type this server accepts",
		"The authorization server's keys could not be fetched to verify the access token; try again later.")
}

func TestPrincipalMapping(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	refused := errors.New("not in the staff group")
	shared := &llmtool.Principal{ID: "owner", Name: "Owner"} // the host's own, unlimited
	v := newVerifier(t, iss, func(c *oauth.Config) {
		c.Principal = func(c oauth.Claims) (*llmtool.Principal, error) {
			groups, _ := c.Raw["groups"].([]any)
			for _, g := range groups {
				if g == "staff" {
					p, err := oauth.DefaultPrincipal(c)
					p.Roles = []string{"staff"}
					return p, err
				}
			}
			if c.Subject == "nobody" {
				return nil, nil
			}
			if c.Subject == "bob" {
				return &llmtool.Principal{ID: "bob"}, nil
			}
			if c.Subject == "eve" {
				return nil, &oauth.TokenError{Description: "Eve is banned; ask an administrator.", Err: oauth.ErrInactive}
			}
			if c.Subject == "anon" {
				return &llmtool.Principal{Name: "Anonymous"}, nil
			}
			if c.Subject == "me" {
				return shared, nil
			}
			return nil, refused
		}
	})
	ctx := context.Background()

	p, err := v.Verify(ctx, iss.Token(claims(map[string]any{"groups": []string{"staff"}})))
	require.NoError(t, err)
	require.Equal(t, &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Roles: []string{"staff"}, Scopes: []string{"notes:read"}}, p)

	p, err = v.Verify(ctx, iss.Token(claims(map[string]any{"sub": "bob"})))
	require.NoError(t, err)
	require.Equal(t, &llmtool.Principal{ID: "bob", Scopes: []string{"notes:read"}}, p, "the token's scopes, whatever the mapping")

	desc := "The access token's user may not use this server; sign in as another user."
	_, err = v.Verify(ctx, iss.Token(claims(nil)))
	require.ErrorIs(t, err, refused)
	refusal(t, err, refused, `oauth: Config.Principal refused subject "ada": not in the staff group`, desc)

	_, err = v.Verify(ctx, iss.Token(claims(map[string]any{"sub": "nobody"})))
	var te *oauth.TokenError
	require.ErrorAs(t, err, &te)
	require.EqualError(t, err, `oauth: Config.Principal refused subject "nobody": Config.Principal returned no principal`)

	_, err = v.Verify(ctx, iss.Token(claims(map[string]any{"sub": "eve"})))
	refusal(t, err, oauth.ErrInactive, "oauth: token not active", "Eve is banned; ask an administrator.")

	_, err = v.Verify(ctx, iss.Token(claims(map[string]any{"sub": "anon"})))
	require.ErrorAs(t, err, &te)
	require.Equal(t, desc, te.Description)
	require.EqualError(t, err, `oauth: Config.Principal refused subject "anon": Config.Principal returned a principal without an ID`)

	// A principal the hook shares (a deliberate mapping to the host's
	// own user) runs as a copy limited to the token's scopes; the
	// host's stays unlimited.
	p, err = v.Verify(ctx, iss.Token(claims(map[string]any{"sub": "me"})))
	require.NoError(t, err)
	require.Equal(t, &llmtool.Principal{ID: "owner", Name: "Owner", Scopes: []string{"notes:read"}}, p)
	require.NotSame(t, shared, p)
	require.Nil(t, shared.Scopes)

	_, err = v.Verify(ctx, iss.Token(claims(map[string]any{"sub": nil, "client_id": "bob"})))
	refusal(t, err, oauth.ErrMalformed, `oauth: malformed token: no "sub" claim`, noSubject)
}

func TestIntrospection(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	v := newVerifier(t, iss, func(c *oauth.Config) {
		c.Introspection = &oauth.Introspection{ClientID: oauthtest.ClientID, ClientSecret: oauthtest.ClientSecret}
	})
	now := time.Now().Unix()
	revoked := iss.OpaqueToken(claims(nil))
	iss.Revoke(revoked)
	inactive := "The access token is not active: it expired, was revoked or was never issued; get a new one from the authorization server."

	tests := []struct {
		name      string
		token     string
		want      *llmtool.Principal
		sentinel  error
		msg, desc string
	}{
		{name: "active opaque token", token: iss.OpaqueToken(claims(map[string]any{"client_id": "claude"})),
			want: &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Scopes: []string{"notes:read"}, Attrs: map[string]string{"client_id": "claude"}}},
		{name: "active JWT, not verified locally", token: iss.Token(claims(map[string]any{"scope": "notes:write"})),
			want: &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Scopes: []string{"notes:write"}}},
		{name: "without iss and exp", token: iss.OpaqueToken(claims(map[string]any{"iss": nil, "exp": nil})),
			want: &llmtool.Principal{ID: "oauth:ada", Name: "Ada", Scopes: []string{"notes:read"}}},
		{name: "a client's token without a subject", token: iss.OpaqueToken(claims(map[string]any{"sub": nil, "client_id": "alice"})), sentinel: oauth.ErrMalformed,
			msg: `oauth: malformed token: no "sub" claim`, desc: noSubject},
		{name: "revoked", token: revoked, sentinel: oauth.ErrInactive,
			msg: "oauth: token not active: the introspection endpoint answered active=false", desc: inactive},
		{name: "never issued", token: "opaque-forged", sentinel: oauth.ErrInactive,
			msg: "oauth: token not active: the introspection endpoint answered active=false", desc: inactive},
		{name: "expired", token: iss.OpaqueToken(claims(map[string]any{"exp": now - 120})), sentinel: oauth.ErrInactive,
			msg: "oauth: token not active: the introspection endpoint answered active=false", desc: inactive},
		{name: "wrong audience", token: iss.OpaqueToken(claims(map[string]any{"aud": "https://other.example.com/mcp"})), sentinel: oauth.ErrAudience,
			msg:  `oauth: token for another audience: ["https://other.example.com/mcp"], want "https://mcp.example.com/mcp"`,
			desc: "The access token is not for this server: its audience is https://other.example.com/mcp, not https://mcp.example.com/mcp; get a token with the resource parameter https://mcp.example.com/mcp (RFC 8707)."},
		{name: "no audience", token: iss.OpaqueToken(claims(map[string]any{"aud": nil})), sentinel: oauth.ErrAudience,
			msg:  `oauth: token for another audience: [], want "https://mcp.example.com/mcp"`,
			desc: "The access token is not for this server: its audience is empty, not https://mcp.example.com/mcp; get a token with the resource parameter https://mcp.example.com/mcp (RFC 8707)."},
		{name: "wrong issuer", token: iss.OpaqueToken(claims(map[string]any{"iss": "https://evil.example.com"})), sentinel: oauth.ErrIssuer,
			msg:  `oauth: token of another issuer: "https://evil.example.com", want "` + iss.URL + `"`,
			desc: "The access token was issued by https://evil.example.com, not by " + iss.URL + "; get a token from " + iss.URL + "."},
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
	require.Zero(t, iss.KeySetRequests(), "introspection fetches no key set")

	t.Run("wrong client secret", func(t *testing.T) {
		t.Parallel()
		v := newVerifier(t, iss, func(c *oauth.Config) {
			c.Introspection = &oauth.Introspection{URL: iss.IntrospectionURL, ClientID: oauthtest.ClientID, ClientSecret: "guess"}
		})
		_, err := v.Verify(context.Background(), iss.OpaqueToken(claims(nil)))
		refusal(t, err, oauth.ErrUnavailable, "oauth: authorization server unavailable: introspection endpoint "+iss.IntrospectionURL+" answered 401 Unauthorized",
			"The authorization server could not be asked whether the access token is valid; try again later.")
	})
}
