package token

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCheck: what a token binds, and what Check says of one that does not
// fit the call.
func TestCheck(t *testing.T) {
	t.Parallel()
	s := NewSigner("llmtool-test-1", nil)
	call := Claims{Tool: "delete_note", Args: ArgsDigest([]byte(`{"id":1}`)), Principal: "alice", Tenant: "acme"}
	issued := call
	issued.Expires, issued.Extra = 1000, []string{"preview", "", "a:b"}
	tok := s.Issue(&issued)
	other := func(s *Signer) string {
		c := issued
		return s.Issue(&c)
	}
	with := func(f func(c *Claims)) *Claims {
		c := call
		f(&c)
		return &c
	}
	for _, tc := range []struct {
		name string
		tok  string
		want *Claims
		now  int64
		why  Refusal
	}{
		{name: "the call it was issued for", tok: tok, want: &call, now: 1000, why: OK},
		{name: "arguments spelled otherwise", tok: tok, want: with(func(c *Claims) { c.Args = ArgsDigest([]byte(` { "id" : 1 } `)) }), now: 1000, why: OK},
		{name: "forged with another key", tok: other(NewSigner("llmtool-test-1", nil)), want: &call, now: 1000, why: Forged},
		{name: "another purpose, same key", tok: other(NewSigner("llmtool-other-1", s.Key())), want: &call, now: 1000, why: Forged},
		{name: "not a token", tok: "abc", want: &call, now: 1000, why: Forged},
		{name: "a payload that is not claims", tok: s.Seal([]byte("12:short")), want: &call, now: 1000, why: Forged},
		{name: "expired", tok: tok, want: &call, now: 1001, why: Expired},
		{name: "other tool", tok: tok, want: with(func(c *Claims) { c.Tool = "add_note" }), now: 1000, why: OtherTool},
		{name: "other args", tok: tok, want: with(func(c *Claims) { c.Args = ArgsDigest([]byte(`{"id":2}`)) }), now: 1000, why: OtherArgs},
		{name: "other user", tok: tok, want: with(func(c *Claims) { c.Principal = "bob" }), now: 1000, why: OtherUser},
		{name: "other tenant", tok: tok, want: with(func(c *Claims) { c.Tenant = "globex" }), now: 1000, why: OtherTenant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, why := s.Check(tc.tok, tc.want, tc.now)
			require.Equal(t, tc.why, why)
			if why == OK {
				require.Equal(t, issued, *c)
			}
		})
	}
}

// TestTokenEdited: a token changed in any one character is refused,
// base64's unused trailing bits included.
func TestTokenEdited(t *testing.T) {
	t.Parallel()
	s := NewSigner("llmtool-test-1", []byte("0123456789abcdef0123456789abcdef"))
	c := Claims{Tool: "t", Expires: 1, Extra: []string{"x"}}
	tok := s.Issue(&c)
	_, ok := s.Open(tok)
	require.True(t, ok)
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
	for i := range tok {
		for _, r := range alphabet {
			if byte(r) == tok[i] {
				continue
			}
			edited := tok[:i] + string(r) + tok[i+1:]
			_, ok := s.Open(edited)
			require.False(t, ok, "%q at %d", r, i)
		}
	}
	_, ok = s.Open(tok + "A")
	require.False(t, ok)
	_, ok = s.Open(strings.TrimSuffix(tok, tok[len(tok)-1:]))
	require.False(t, ok)
}

// TestNonces: each token has its own nonce.
func TestNonces(t *testing.T) {
	t.Parallel()
	s := NewSigner("llmtool-test-1", nil)
	seen := make(map[int64]bool)
	for range 1000 {
		var c Claims
		s.Issue(&c)
		require.False(t, seen[c.Nonce])
		require.GreaterOrEqual(t, c.Nonce, int64(0))
		seen[c.Nonce] = true
	}
}

// TestSpent: a token is spent once; a forgotten one again; an expired one
// is forgotten once a minute passed.
func TestSpent(t *testing.T) {
	t.Parallel()
	var s Spent
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name  string
		op    func() bool
		spent bool
	}{
		{name: "first use", op: func() bool { return s.Spend(1, 1030, now) }, spent: true},
		{name: "replayed", op: func() bool { return s.Spend(1, 1030, now) }, spent: false},
		{name: "another nonce", op: func() bool { return s.Spend(2, 2000, now) }, spent: true},
		{name: "forgotten, then used", op: func() bool { s.Forget(1); return s.Spend(1, 1030, now) }, spent: true},
		{name: "replayed after a sweep that keeps it", op: func() bool { return s.Spend(2, 2000, now.Add(2*time.Minute)) }, spent: false},
	} {
		require.Equal(t, tc.spent, tc.op(), tc.name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Equal(t, map[int64]int64{2: 2000}, s.until, "the sweep forgot the expired nonce")
}

// TestDigest: the digest of chatadapter's saved answers keeps its value,
// and arguments digest by value.
func TestDigest(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Jzbow3061a3ddgBDWQ-LMKiL", Digest([]byte("Which note?"), []byte(`{"type":"object","properties":{}}`)),
		"saved paused turns hold such digests")
	require.NotEqual(t, Digest([]byte("ab"), []byte("c")), Digest([]byte("a"), []byte("bc")))
	for _, tc := range []struct{ a, b string }{
		{`{"a":1,"b":[1,2]}`, ` {"b":[1,2], "a":1} `},
		{``, `{}`},
		{`null`, `{}`},
		{`not json`, `{}`},
	} {
		require.Equal(t, ArgsDigest([]byte(tc.a)), ArgsDigest([]byte(tc.b)), "%s and %s", tc.a, tc.b)
	}
	require.NotEqual(t, ArgsDigest([]byte(`{"a":1}`)), ArgsDigest([]byte(`{"a":1.0}`)), "numbers as sent")
}
