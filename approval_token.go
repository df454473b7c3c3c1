package llmtool

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/schema"
)

// Approval tokens: what they bind, how they are signed and checked, and
// how a used one is remembered (approval.go has the flow).

// approvalClaims are what a token binds.
type approvalClaims struct {
	Tool      string
	Args      string // digest of the canonical arguments
	Principal string
	Tenant    string
	Preview   string // digest of the approved preview
	Fresh     string // what the preview's digest left unbound (fresh.encode)
	Expires   int64  // Unix seconds
	Nonce     int64  // unique, 63 bits: the used tokens' key
}

// approvals is a registry's approval configuration.
type approvals struct {
	key  []byte
	ttl  time.Duration
	now  func() time.Time
	macs sync.Pool // HMAC-SHA256 hashes keyed with key, reset between uses

	// Nonces need to be unique, not secret (the token is signed): a
	// random start per registry, then a counter.
	nonceBase uint64
	nonces    atomic.Uint64

	// spend records a token's nonce as used, in the approved call's
	// transaction (shared keys only).
	spend dbconn.Prepared

	// shared is set when Options.ApprovalKey is: other processes honour
	// this one's tokens, so a used token is recorded in the database.
	// Otherwise only this process can, and remembers used tokens in spent.
	shared  bool
	spentMu sync.Mutex
	spent   map[int64]int64 // nonce → the token's expiry (Unix seconds)
	sweeps  int

	made madeColumns // the columns whose values the engine makes (approval_fresh.go)
}

// reserve records nonce as used until exp, and reports false if it was
// already.
func (a *approvals) reserve(nonce, exp int64) bool {
	a.spentMu.Lock()
	defer a.spentMu.Unlock()
	if _, used := a.spent[nonce]; used {
		return false
	}
	if a.spent == nil {
		a.spent = make(map[int64]int64)
	}
	a.spent[nonce] = exp
	if a.sweeps++; a.sweeps >= 1024 {
		// An expired token is refused as expired: forget it.
		a.sweeps = 0
		now := a.now().Unix()
		for n, e := range a.spent {
			if e < now {
				delete(a.spent, n)
			}
		}
	}
	return true
}

// release forgets a reservation whose commit did not happen.
func (a *approvals) release(nonce int64) {
	a.spentMu.Lock()
	delete(a.spent, nonce)
	a.spentMu.Unlock()
}

func (a *approvals) init(o *Options) {
	if o == nil {
		o = &Options{}
	}
	a.key = slices.Clone(o.ApprovalKey) // checked by NewRegistry (signkey.Check)
	a.shared = len(a.key) > 0
	if len(a.key) == 0 {
		a.key = make([]byte, 32)
		_, _ = rand.Read(a.key)
	}
	var base [8]byte
	_, _ = rand.Read(base[:])
	a.nonceBase = binary.LittleEndian.Uint64(base[:])
	a.ttl = o.ApprovalTTL
	if a.ttl <= 0 {
		a.ttl = defaultApprovalTTL
	}
	a.now = time.Now
	a.spend.Query = `INSERT INTO ` + approvalsTable + ` (nonce, used_at) VALUES ($1, $2)`
}

func (a *approvals) mac(body string) string {
	h, _ := a.macs.Get().(hash.Hash)
	if h == nil {
		h = hmac.New(sha256.New, a.key)
	}
	h.Reset()
	h.Write([]byte(body))
	var sum [sha256.Size]byte
	out := base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0]))
	a.macs.Put(h)
	return out
}

// close closes the prepared statement, with the registry.
func (a *approvals) close() { a.spend.Close() }

// seal makes the token approving pv for this call.
func (a *approvals) seal(ctx context.Context, tool, args, preview, fresh string) (string, time.Time) {
	exp := a.now().Add(a.ttl)
	c := approvalClaims{Tool: tool, Args: args, Principal: principalID(ctx), Tenant: TenantFrom(ctx),
		Preview: preview, Fresh: fresh, Expires: exp.Unix(), Nonce: int64((a.nonceBase + a.nonces.Add(1)) & (1<<63 - 1))}
	body := base64.RawURLEncoding.EncodeToString(c.encode())
	return body + "." + a.mac(body), exp
}

// encode writes the claims as length-prefixed fields ("3:abc"), which
// decode reads back whatever bytes the principal or tenant hold.
func (c *approvalClaims) encode() []byte {
	b := make([]byte, 0, 160)
	for _, f := range []string{c.Tool, c.Args, c.Principal, c.Tenant, c.Preview, c.Fresh} {
		b = strconv.AppendInt(b, int64(len(f)), 10)
		b = append(b, ':')
		b = append(b, f...)
	}
	b = strconv.AppendInt(b, c.Expires, 10)
	b = append(b, ':')
	return strconv.AppendInt(b, c.Nonce, 10)
}

// decode reads what encode wrote.
func (c *approvalClaims) decode(b []byte) bool {
	next := func() (string, bool) {
		i := bytes.IndexByte(b, ':')
		if i < 0 {
			return "", false
		}
		n, err := strconv.Atoi(string(b[:i]))
		if err != nil || n < 0 || i+1+n > len(b) {
			return "", false
		}
		f := string(b[i+1 : i+1+n])
		b = b[i+1+n:]
		return f, true
	}
	for _, f := range []*string{&c.Tool, &c.Args, &c.Principal, &c.Tenant, &c.Preview, &c.Fresh} {
		v, ok := next()
		if !ok {
			return false
		}
		*f = v
	}
	exp, nonce, ok := strings.Cut(string(b), ":")
	var err1, err2 error
	c.Expires, err1 = strconv.ParseInt(exp, 10, 64)
	c.Nonce, err2 = strconv.ParseInt(nonce, 10, 64)
	return ok && err1 == nil && err2 == nil
}

// open checks a token against this call and returns its claims, or the
// refusal a person and the model read.
func (a *approvals) open(ctx context.Context, tool, args, token string) (*approvalClaims, error) {
	body, sig, ok := strings.Cut(token, ".")
	var c approvalClaims
	if !ok || !hmac.Equal([]byte(sig), []byte(a.mac(body))) {
		return nil, refusedApproval("The approval token is not one this server issued for this change.")
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || !c.decode(b) {
		return nil, refusedApproval("The approval token is not one this server issued for this change.")
	}
	switch {
	case c.Tool != tool:
		return nil, refusedApproval(fmt.Sprintf("The approval was given for tool %s, not %s.", c.Tool, tool))
	case c.Args != args:
		return nil, refusedApproval("The approval was given for other arguments.")
	case c.Principal != principalID(ctx):
		return nil, refusedApproval("The approval was given to another user.")
	case c.Tenant != TenantFrom(ctx):
		return nil, refusedApproval("The approval was given in another tenant.")
	case a.now().Unix() > c.Expires:
		return nil, refusedApproval(fmt.Sprintf("The approval expired at %s.", time.Unix(c.Expires, 0).UTC().Format(time.RFC3339)))
	}
	return &c, nil
}

func refusedApproval(msg string) *Error {
	return &Error{Kind: KindDenied, Message: msg + " Nothing was saved.",
		NextAction: "Call the tool again to get a new preview for the user to approve.", err: approval.ErrRefused}
}

// argsDigest fingerprints arguments independently of key order and
// spacing: the JSON of their decoded value (numbers as sent, as
// json.Number keeps them).
func argsDigest(args []byte) string {
	var v any = map[string]any{}
	if d, err := schema.DecodeArguments(args); err == nil {
		v = d
	}
	b, _ := json.Marshal(v) // map keys sorted
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
