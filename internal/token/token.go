// Package token is llmtool's one signed, bound, expiring, single-use
// token: the approval token of package llmtool and the requestState of
// mcpadapter's input-required results are both a Claims sealed by a
// Signer, and both remember the tokens they accepted in a Spent. The same
// Signer seals chatadapter's saved paused turns, with no claims.
//
// A token is "<body>.<mac>": body is the payload in unpadded base64url,
// mac the HMAC-SHA256 of the Signer's purpose and of body as sent, in
// unpadded base64url too. The purpose ("llmtool-approval-2") names the
// kind of token and the version of its payload, so a token of one kind,
// or of an older format, is never read as another, even under one key;
// and the MAC covers the body's characters, not the bytes they decode
// to, so a token changed in any character is refused.
//
// Each kind keeps its own claims beside the common ones (Claims.Extra),
// and its own refusal sentences: Check says what is wrong (a Refusal),
// the caller says it to the model. Keys follow internal/signkey's rule.
package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Signer seals and opens the tokens of one purpose with one key. It is
// safe for concurrent use.
type Signer struct {
	purpose string
	key     []byte
	macs    sync.Pool // HMAC-SHA256 hashes keyed with key, reset between uses

	// Nonces need to be unique, not secret (the token is signed): a
	// random start per Signer, then a counter.
	nonceBase uint64
	nonces    atomic.Uint64
}

// NewSigner returns the Signer of purpose with key (checked by the caller
// with signkey.Check), or with 32 random bytes of its own when key is
// empty: then only this Signer opens what it seals.
func NewSigner(purpose string, key []byte) *Signer {
	s := &Signer{purpose: purpose, key: bytes.Clone(key)}
	if len(s.key) == 0 {
		s.key = make([]byte, 32)
		_, _ = rand.Read(s.key) // crypto/rand.Read never fails
	}
	var base [8]byte
	_, _ = rand.Read(base[:])
	s.nonceBase = binary.LittleEndian.Uint64(base[:])
	return s
}

// Key returns the Signer's key, for a test that makes a replica.
func (s *Signer) Key() []byte { return s.key }

func (s *Signer) mac(body string) string {
	h, _ := s.macs.Get().(hash.Hash)
	if h == nil {
		h = hmac.New(sha256.New, s.key)
	}
	h.Reset()
	h.Write([]byte(s.purpose))
	h.Write([]byte{0})
	h.Write([]byte(body))
	var sum [sha256.Size]byte
	out := base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0]))
	s.macs.Put(h)
	return out
}

// Seal returns payload signed.
func (s *Signer) Seal(payload []byte) string {
	body := base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + s.mac(body)
}

// Open returns the payload of a token Seal made, or false for one it did
// not make or that was changed in any character.
func (s *Signer) Open(tok string) ([]byte, bool) {
	body, sig, ok := strings.Cut(tok, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.mac(body))) {
		return nil, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(body)
	return b, err == nil
}

// Claims are what a single-use token binds: a call of Tool with the
// arguments whose ArgsDigest is Args, by Principal in Tenant, until
// Expires; Nonce is what a Spent remembers. Extra holds the kind's own
// claims.
type Claims struct {
	Tool      string
	Args      string // ArgsDigest of the call's arguments
	Principal string // the principal's ID; sealed as its Digest
	Tenant    string // sealed as its Digest
	Expires   int64  // Unix seconds
	Nonce     int64  // unique, 63 bits; Issue sets it
	Extra     []string
}

// Issue sets c's nonce and returns the token sealing c.
func (s *Signer) Issue(c *Claims) string {
	c.Nonce = int64((s.nonceBase + s.nonces.Add(1)) & (1<<63 - 1))
	return s.Seal(c.encode())
}

// encode writes the claims as length-prefixed fields ("3:abc"), which
// decode reads back whatever bytes they hold; the principal and the
// tenant as their digests, so a token shows neither.
func (c *Claims) encode() []byte {
	b := make([]byte, 0, 192)
	field := func(f string) {
		b = strconv.AppendInt(b, int64(len(f)), 10)
		b = append(b, ':')
		b = append(b, f...)
	}
	for _, f := range []string{c.Tool, c.Args, Digest([]byte(c.Principal)), Digest([]byte(c.Tenant)),
		strconv.FormatInt(c.Expires, 10), strconv.FormatInt(c.Nonce, 10)} {
		field(f)
	}
	for _, f := range c.Extra {
		field(f)
	}
	return b
}

// decode reads what encode wrote; Principal and Tenant hold digests.
func (c *Claims) decode(b []byte) bool {
	var fs []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, ':')
		if i < 0 {
			return false
		}
		n, err := strconv.Atoi(string(b[:i]))
		if err != nil || n < 0 || i+1+n > len(b) {
			return false
		}
		fs = append(fs, string(b[i+1:i+1+n]))
		b = b[i+1+n:]
	}
	if len(fs) < 6 {
		return false
	}
	var err1, err2 error
	c.Tool, c.Args, c.Principal, c.Tenant = fs[0], fs[1], fs[2], fs[3]
	c.Expires, err1 = strconv.ParseInt(fs[4], 10, 64)
	c.Nonce, err2 = strconv.ParseInt(fs[5], 10, 64)
	c.Extra = fs[6:]
	return err1 == nil && err2 == nil
}

// Refusal is what is wrong with a token, in the order Check looks.
type Refusal uint8

const (
	OK          Refusal = iota
	Forged              // not sealed by this Signer, changed, or unreadable
	OtherTool           // sealed for a call of another tool
	OtherArgs           // sealed for other arguments
	OtherUser           // sealed for another principal
	OtherTenant         // sealed in another tenant
	Expired             // its Expires has passed
)

// Check opens tok and checks it against the call want describes (Tool,
// Args, Principal, Tenant) at now (Unix seconds). It returns the claims,
// whose Principal and Tenant are want's when it is OK.
func (s *Signer) Check(tok string, want *Claims, now int64) (*Claims, Refusal) {
	b, ok := s.Open(tok)
	var c Claims
	if !ok || !c.decode(b) {
		return nil, Forged
	}
	switch {
	case c.Tool != want.Tool:
		return &c, OtherTool
	case c.Args != want.Args:
		return &c, OtherArgs
	case c.Principal != Digest([]byte(want.Principal)):
		return &c, OtherUser
	case c.Tenant != Digest([]byte(want.Tenant)):
		return &c, OtherTenant
	case now > c.Expires:
		return &c, Expired
	}
	c.Principal, c.Tenant = want.Principal, want.Tenant
	return &c, OK
}
