package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Fetching the issuer's key set.
const (
	// minRefresh is how long a key ID that a fetch of the key set did not
	// find is refused without another fetch: each key ID a token names
	// costs the authorization server at most one request per minRefresh,
	// however many tokens name it.
	minRefresh = 10 * time.Second
	// fetchGap is the least time between the starts of two fetches,
	// whatever the key IDs: a flood of tokens with ever new made-up key
	// IDs costs the authorization server one request per fetchGap. A
	// token whose key ID is new waits for the next fetch rather than
	// being refused, so a rotated key verifies on its first token even
	// right after such a flood.
	fetchGap = time.Second
	// maxMissed bounds the key IDs remembered as missing. When it is
	// reached, key IDs missed more than minRefresh ago are forgotten;
	// while it is full of recent ones, the others are not remembered,
	// and only fetchGap bounds what they cost.
	maxMissed = 1024
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
	// after waits before a fetch put off by fetchGap: time.After, or a
	// test's channel.
	after func(time.Duration) <-chan time.Time
	// waiting, when set (by tests), is called each time a request
	// starts waiting for a fetch.
	waiting func()

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetched time.Time            // of keys; zero before the first fetch that succeeded
	err     error                // of the last fetch
	last    time.Time            // when the latest fetch began, or is to begin; zero before the first
	next    *fetch               // the fetch under way or put off; nil if none
	missed  map[string]time.Time // key ID → when a fetch begun after a token named it did not find it
}

// fetch is one fetch of the key set, under way or put off until start.
type fetch struct {
	start time.Time
	done  chan struct{} // closed once the cache holds what the fetch got
	err   error         // of the fetch; read after done
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
		if fresh := k.lookFor(ctx, kid); fresh != nil {
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
// returns the keys and the error of the fetch. Within fetchGap of the
// last fetch it fetches nothing and returns what it holds at once.
func (k *keySet) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	f := k.fetchLocked(ctx, k.now(), false)
	keys, err := k.keys, k.err
	k.mu.Unlock()
	if f == nil {
		return keys, err
	}
	if err := k.wait(ctx, f); err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.err
}

// lookFor fetches the key set for a token that names the key kid (or no
// key: kid "") that the keys held lack, and returns the keys to verify it
// with, or nil if there are none new: a fetch less than minRefresh ago
// did not find kid, the fetch failed, or ctx ended. It waits for a fetch
// begun after the token came, if need be until fetchGap after the last
// one began, so that a key the issuer published just before it issued
// the token is found.
func (k *keySet) lookFor(ctx context.Context, kid string) []jose.JSONWebKey {
	came := k.now()
	k.mu.Lock()
	if kid != "" && hasKey(k.keys, kid) {
		// A fetch since the caller looked brought it.
		keys := k.keys
		k.mu.Unlock()
		return keys
	}
	if at, ok := k.missed[kid]; ok && came.Sub(at) < minRefresh {
		k.mu.Unlock()
		return nil
	}
	for {
		f := k.fetchLocked(ctx, k.now(), true)
		k.mu.Unlock()
		if k.wait(ctx, f) != nil {
			return nil
		}
		k.mu.Lock()
		fresh := !f.start.Before(came)
		switch {
		case f.err != nil:
			k.mu.Unlock()
			return nil
		case kid == "" && fresh, kid != "" && hasKey(k.keys, kid):
			keys := k.keys
			k.mu.Unlock()
			return keys
		case fresh:
			k.missLocked(kid)
			k.mu.Unlock()
			return nil
		}
		// The fetch began before the token came: the issuer may have
		// published the key since. Wait for the next.
	}
}

// missLocked remembers that a fetch did not find kid.
func (k *keySet) missLocked(kid string) {
	if kid == "" {
		return // a token without a key ID: fetchGap bounds what it costs
	}
	now := k.now()
	if len(k.missed) >= maxMissed {
		for id, at := range k.missed {
			if now.Sub(at) >= minRefresh {
				delete(k.missed, id)
			}
		}
		if len(k.missed) >= maxMissed {
			return
		}
	}
	if k.missed == nil {
		k.missed = make(map[string]time.Time)
	}
	k.missed[kid] = now
}

func hasKey(keys []jose.JSONWebKey, kid string) bool {
	return slices.ContainsFunc(keys, func(key jose.JSONWebKey) bool { return key.KeyID == kid })
}

// fetchLocked returns the fetch to wait for: the one under way, or put
// off if later is set; else a new one, begun now if the last began
// fetchGap ago or more, else (if later is set) put off until then; else
// nil. The fetch keeps the values of ctx, the context of the request
// that began it, but not its end.
func (k *keySet) fetchLocked(ctx context.Context, now time.Time, later bool) *fetch {
	if f := k.next; f != nil {
		if later || !f.start.After(now) {
			return f
		}
		return nil
	}
	start := now
	if !k.last.IsZero() && now.Before(k.last.Add(fetchGap)) {
		if !later {
			return nil
		}
		start = k.last.Add(fetchGap)
	}
	f := &fetch{start: start, done: make(chan struct{})}
	k.next, k.last = f, start
	go k.run(context.WithoutCancel(ctx), f, start.Sub(now))
	return f
}

// wait waits for f, or for ctx to end.
func (k *keySet) wait(ctx context.Context, f *fetch) error {
	if k.waiting != nil {
		k.waiting()
	}
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run makes the fetch f after delay and updates the cache, then closes
// f.done: a request woken by it sees the new keys, so a withdrawn key is
// never used once the set without it is in. The fetch outlives the
// requests that give up waiting: the others, and those after them, use
// what it got.
func (k *keySet) run(ctx context.Context, f *fetch, delay time.Duration) {
	if delay > 0 {
		<-k.after(delay)
	}
	// Bounded even with a Config.HTTPClient without a timeout: requests
	// wait for this fetch.
	ctx, cancel := context.WithTimeout(ctx, defaultTimeout)
	keys, err := k.fetch(ctx)
	cancel()
	k.mu.Lock()
	if err == nil {
		k.keys, k.fetched = keys, k.now()
	}
	k.err, f.err = err, err
	k.next = nil
	k.mu.Unlock()
	close(f.done)
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
