package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Fetching the issuer's key set.
const (
	// minRefresh bounds the fetches of the key set that tokens naming an
	// unknown key cause: at most two within any minRefresh, so the first
	// token of a rotated key gets the new key at once, even right after
	// the first fetch, while a flood of tokens with made-up key IDs costs
	// the authorization server two requests per minRefresh, not one each.
	minRefresh = 10 * time.Second
	// maxKeyAge is how long a fetched key set is used before it is
	// fetched again, so that a key the issuer withdrew stops verifying
	// even if no token names a new key. If that fetch fails, the old set
	// is used until the next attempt.
	maxKeyAge = time.Hour
)

// keySet is the issuer's JSON Web Key Set (RFC 7517), fetched on first
// use, cached, and fetched again when a token names a key it does not
// hold (the issuer rotated its keys) or when it is older than maxKeyAge.
// A token that names a key the set holds, with a signature that key does
// not verify, is refused without a fetch: it is forged.
type keySet struct {
	url    string
	client *http.Client
	now    func() time.Time

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	fetched  time.Time     // of keys; zero before the first fetch that succeeded
	attempts [2]time.Time  // the last two fetches begun, latest first
	err      error         // of the last fetch
	inflight chan struct{} // closed when the fetch under way has updated the fields; nil if none
}

// verify returns the payload of jws if a key of the set verifies its one
// signature.
func (k *keySet) verify(ctx context.Context, jws *jose.JSONWebSignature) ([]byte, error) {
	header := jws.Signatures[0].Header
	kid, alg := header.KeyID, header.Algorithm
	keys, fetched := k.snapshot()
	if fetched.IsZero() || k.now().Sub(fetched) >= maxKeyAge {
		var err error
		if keys, err = k.refresh(ctx); keys == nil {
			return nil, &TokenError{Description: "The authorization server's keys could not be fetched to verify the access token; try again later.",
				Err: fmt.Errorf("%w: fetching the key set: %w", ErrUnavailable, err)}
		}
	}
	payload, missing, err := verifyWith(keys, jws, kid, alg)
	if missing {
		// The issuer may have rotated its keys.
		if fresh, _ := k.refresh(ctx); fresh != nil {
			payload, _, err = verifyWith(fresh, jws, kid, alg)
		}
	}
	if err != nil {
		return nil, &TokenError{Description: signatureRefused, Err: err}
	}
	return payload, nil
}

// signatureRefused describes the refusal of a signature.
const signatureRefused = "The access token is not signed with a key of the authorization server; get a new token from the authorization server."

// verifyWith verifies jws with the key named kid, or with each key for a
// token without a key ID. missing reports that no key has the token's key
// ID (or, for a token without one, that none verifies it): the keys may
// be out of date.
func verifyWith(keys []jose.JSONWebKey, jws *jose.JSONWebSignature, kid, alg string) (payload []byte, missing bool, err error) {
	for _, key := range keys {
		if kid != "" && key.KeyID != kid {
			continue
		}
		if key.Algorithm != "" && key.Algorithm != alg {
			if kid == "" {
				continue
			}
			return nil, false, fmt.Errorf("%w: key %q is for %s, not %s", ErrSignature, kid, key.Algorithm, alg)
		}
		payload, err := jws.Verify(key.Key)
		switch {
		case err == nil:
			return payload, false, nil
		case kid != "":
			return nil, false, fmt.Errorf("%w: key %q does not verify the signature: %w", ErrSignature, kid, err)
		}
	}
	if kid == "" {
		return nil, true, fmt.Errorf("%w: no key of the issuer verifies the token, which names none", ErrSignature)
	}
	return nil, true, fmt.Errorf("%w: the issuer's key set has no key %q", ErrSignature, kid)
}

func (k *keySet) snapshot() ([]jose.JSONWebKey, time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.fetched
}

// refresh fetches the key set, or waits for the fetch under way, and
// returns the keys and the error of the fetch. Beyond two fetches within
// minRefresh it fetches nothing and returns what it has.
func (k *keySet) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	if k.inflight == nil {
		now := k.now()
		if older := k.attempts[1]; !older.IsZero() && now.Sub(older) < minRefresh {
			keys, err := k.keys, k.err
			k.mu.Unlock()
			if err == nil {
				err = fmt.Errorf("fetched twice within %s", minRefresh)
			}
			return keys, err
		}
		k.attempts = [2]time.Time{now, k.attempts[0]}
		k.inflight = make(chan struct{})
		// The fetch outlives a request that gives up waiting: the
		// requests waiting with it, or after it, use what it fetched.
		go k.fetchInto(context.WithoutCancel(ctx), k.inflight)
	}
	done := k.inflight
	k.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.err
}

// fetchInto fetches the key set and updates the cache, then closes done:
// a request woken by done sees the new keys, so a withdrawn key is never
// used once the set without it is in.
func (k *keySet) fetchInto(ctx context.Context, done chan struct{}) {
	// Bounded even with a Config.HTTPClient without a timeout: requests
	// wait for this fetch.
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	keys, err := k.fetch(ctx)
	cancel()
	k.mu.Lock()
	if err == nil {
		k.keys, k.fetched = keys, k.now()
	}
	k.err = err
	k.inflight = nil
	k.mu.Unlock()
	close(done)
}

// fetch GETs the key set and returns its signing keys that this package
// can use: public keys, of a type and for an algorithm accepted, not
// marked for encryption. Other keys are skipped, as RFC 7517 §5 says,
// rather than failing the whole set.
func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading the key set at %s: %w", k.url, err)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("the key set at %s: %s", k.url, resp.Status)
	case len(body) > maxDocument:
		return nil, fmt.Errorf("the key set at %s is larger than %d bytes", k.url, maxDocument)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("the key set at %s is not a JSON Web Key Set: %w", k.url, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) != nil || !key.Valid() || !key.IsPublic() ||
			(key.Use != "" && key.Use != "sig") || (key.Algorithm != "" && !accepted(key.Algorithm)) {
			continue
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("the key set at %s has no public signing key of a type this server accepts", k.url)
	}
	return keys, nil
}
