package llmtool

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// Approval that spans the transaction. A write tool that needs approval
// (NeedsApproval, or SetApproval for a scope) does not commit on its first
// call: the registry runs it in its transaction, records a Preview of what
// it changed, rolls back and answers with an ApprovalRequest. The person
// decides with no transaction open and no lock held; the call then runs
// again with Call.Approval and commits only if its preview is the one the
// person approved. A dry run (Call.DryRun) gives the same preview for any
// write tool, and always rolls back.

// NeedsApproval marks a write tool whose calls a person approves before
// they commit; see Call.Approval. A scope can require approval of more
// tools with Registry.SetApproval. NeedsApproval on a Read tool panics.
func NeedsApproval() Option { return func(c *toolConfig) { c.spec.NeedsApproval = true } }

// Preview is what a write call would change: its result, the rows it
// inserted, updated and deleted per table (as its statements reported
// them: the tables the statements name, not rows changed by triggers or
// cascades), and the one line the tool wrote about it (WriteCtx.Describe).
type Preview struct {
	Result  json.RawMessage `json:"result"`
	Changes []TableChange   `json:"changes"`
	Summary string          `json:"summary,omitempty"`
}

// TableChange counts the rows a write changed in one table.
type TableChange struct {
	Table    string `json:"table"`
	Inserted int64  `json:"inserted"`
	Updated  int64  `json:"updated"`
	Deleted  int64  `json:"deleted"`
}

// String describes the preview in one line for a person: the tool's
// summary if it wrote one, then the rows changed per table.
func (p *Preview) String() string {
	var parts []string
	for _, c := range p.Changes {
		var n []string
		for _, x := range []struct {
			n    int64
			verb string
		}{{c.Inserted, "inserted"}, {c.Updated, "updated"}, {c.Deleted, "deleted"}} {
			if x.n > 0 {
				n = append(n, fmt.Sprintf("%d %s", x.n, x.verb))
			}
		}
		if len(n) > 0 {
			parts = append(parts, c.Table+": "+strings.Join(n, ", "))
		}
	}
	changes := "no rows changed"
	if len(parts) > 0 {
		changes = strings.Join(parts, "; ")
	}
	if p.Summary != "" {
		return p.Summary + " (" + changes + ")"
	}
	return changes
}

// ApprovalRequest asks a person to approve the change a call previewed.
// Show the Preview; send the Token back in Call.Approval with the
// person's answer, before Expires.
type ApprovalRequest struct {
	Preview Preview
	Token   string
	Expires time.Time
}

// Approval is a person's answer to an ApprovalRequest, sent with the same
// call (tool and arguments) in Call.Approval by the same principal in the
// same scope. The token is single-use.
type Approval struct {
	Token    string
	Approved bool // false: the person denied the change
}

// ErrApprovalRequired is wrapped by the result of a call that needs a
// person's approval first, or again because the data changed since the
// preview was approved: nothing was saved, and Result.Approval asks.
var ErrApprovalRequired = errors.New("llmtool: approval required")

// ErrApprovalRefused is wrapped by the result of a call whose approval was
// denied, or whose token is expired, used, forged or for another call,
// principal or scope: nothing was saved.
var ErrApprovalRefused = errors.New("llmtool: approval refused")

// Describe sets the one-line description of the call's change that a
// person approving it reads (Preview.Summary), such as
// `Delete note "Plans" and its 3 child notes.`
func (c *WriteCtx) Describe(format string, args ...any) {
	if c.call.done.Load() {
		_ = c.late("Describe")
		return
	}
	c.call.summary = fmt.Sprintf(format, args...)
}

// defaultApprovalTTL is how long an approval request stays valid unless
// Options.ApprovalTTL says otherwise.
const defaultApprovalTTL = 15 * time.Minute

// approvalsTable holds the used tokens' nonces: one row per approved
// commit, written in its transaction, so a token commits once across
// replicas.
const approvalsTable = "llmtool_approvals"

// previewMode is how a write call treats its transaction at the end.
type previewMode uint8

const (
	previewNone    previewMode = iota
	previewDryRun              // roll back and answer with the preview
	previewRequest             // roll back and answer with an approval request
	previewApprove             // commit only if the preview's digest is want
)

// previewState is a write call's preview bookkeeping.
type previewState struct {
	mode  previewMode
	args  string // the digest of the call's arguments
	want  string // previewApprove: the approved preview's digest
	nonce int64  // previewApprove: the token's nonce, recorded as used
	exp   int64  // previewApprove: the token's expiry (Unix seconds)
	held  bool   // previewApprove: the nonce is reserved in memory (approvals.reserve)
	sum   string // the digest of preview, once built

	mu      sync.Mutex
	changes map[string]*TableChange
	order   []string
	preview *Preview // built at the end of the run
}

// record counts a statement's changed rows.
func (p *previewState) record(d sqlcheck.Dialect, query string, rows int64) {
	kind, table := sqlcheck.Target(d, query)
	if kind == "" || rows <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changes == nil {
		p.changes = make(map[string]*TableChange)
	}
	c := p.changes[table]
	if c == nil {
		c = &TableChange{Table: table}
		p.changes[table] = c
		p.order = append(p.order, table)
	}
	switch kind {
	case "insert":
		c.Inserted += rows
	case "update":
		c.Updated += rows
	case "delete":
		c.Deleted += rows
	}
}

// build returns the run's preview: out, the changes in the order the
// tables were first changed, summary.
func (p *previewState) build(out []byte, summary string) *Preview {
	p.mu.Lock()
	defer p.mu.Unlock()
	pv := &Preview{Result: json.RawMessage(bytes.Clone(out)), Changes: make([]TableChange, 0, len(p.order)), Summary: summary}
	for _, t := range p.order {
		pv.Changes = append(pv.Changes, *p.changes[t])
	}
	return pv
}

// reset forgets a run's changes, for a run again (a retry).
func (p *previewState) reset() {
	p.mu.Lock()
	p.changes, p.order, p.preview = nil, nil, nil
	p.mu.Unlock()
}

// digest is the preview's fingerprint: what an approval approves.
func (pv *Preview) digest() string {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field(pv.Result)
	for _, c := range pv.Changes {
		field([]byte(c.Table))
		for _, x := range []int64{c.Inserted, c.Updated, c.Deleted} {
			binary.LittleEndian.PutUint64(n[:], uint64(x))
			h.Write(n[:])
		}
	}
	field([]byte(pv.Summary))
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0]))
}

// approvalClaims are what a token binds.
type approvalClaims struct {
	Tool      string
	Args      string // digest of the canonical arguments
	Principal string
	Scope     string
	Preview   string // digest of the approved preview
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

	stmtMu sync.Mutex
	stmt   *sql.Stmt // spendStmt

	// shared is set when Options.ApprovalKey is: other processes honour
	// this one's tokens, so a used token is recorded in the database.
	// Otherwise only this process can, and remembers used tokens in spent.
	shared  bool
	spentMu sync.Mutex
	spent   map[int64]int64 // nonce → the token's expiry (Unix seconds)
	sweeps  int
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
	a.key = o.ApprovalKey
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

// spendStmt returns the statement that records a token's nonce as used,
// prepared once: database/sql keeps it prepared on each connection it
// runs on.
func (a *approvals) spendStmt(ctx context.Context, db *sql.DB) (*sql.Stmt, error) {
	a.stmtMu.Lock()
	defer a.stmtMu.Unlock()
	if a.stmt == nil {
		st, err := db.PrepareContext(ctx, `INSERT INTO `+approvalsTable+` (nonce, used_at) VALUES ($1, $2)`)
		if err != nil {
			return nil, err
		}
		a.stmt = st
	}
	return a.stmt, nil
}

// close closes the prepared statement, with the registry.
func (a *approvals) close() {
	a.stmtMu.Lock()
	defer a.stmtMu.Unlock()
	if a.stmt != nil {
		_ = a.stmt.Close()
		a.stmt = nil
	}
}

// seal makes the token approving pv for this call.
func (a *approvals) seal(ctx context.Context, tool, args, preview string) (string, time.Time) {
	exp := a.now().Add(a.ttl)
	c := approvalClaims{Tool: tool, Args: args, Principal: principalID(ctx), Scope: ScopeFrom(ctx),
		Preview: preview, Expires: exp.Unix(), Nonce: int64((a.nonceBase + a.nonces.Add(1)) & (1<<63 - 1))}
	body := base64.RawURLEncoding.EncodeToString(c.encode())
	return body + "." + a.mac(body), exp
}

// encode writes the claims as length-prefixed fields ("3:abc"), which
// decode reads back whatever bytes the principal or scope hold.
func (c *approvalClaims) encode() []byte {
	b := make([]byte, 0, 160)
	for _, f := range []string{c.Tool, c.Args, c.Principal, c.Scope, c.Preview} {
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
	for _, f := range []*string{&c.Tool, &c.Args, &c.Principal, &c.Scope, &c.Preview} {
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
	case c.Scope != ScopeFrom(ctx):
		return nil, refusedApproval("The approval was given in another scope.")
	case a.now().Unix() > c.Expires:
		return nil, refusedApproval(fmt.Sprintf("The approval expired at %s.", time.Unix(c.Expires, 0).UTC().Format(time.RFC3339)))
	}
	return &c, nil
}

func refusedApproval(msg string) *Error {
	return &Error{Kind: KindDenied, Message: msg + " Nothing was saved.",
		NextAction: "Call the tool again to get a new preview for the user to approve.", err: ErrApprovalRefused}
}

// argsDigest fingerprints arguments independently of key order and
// spacing: the JSON of their decoded value, argv when the call decoded
// them already.
func argsDigest(args []byte, argv map[string]any) string {
	var v any = argv
	if argv == nil && (len(bytes.TrimSpace(args)) == 0 || json.Unmarshal(args, &v) != nil) {
		v = map[string]any{}
	}
	b, _ := json.Marshal(v) // map keys sorted
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// needsApproval reports whether a call of t in ctx's scope needs approval:
// the tool says so, or the scope's settings do (SetApproval).
func (r *Registry) needsApproval(ctx context.Context, t *Tool) bool {
	if t.spec.ReadOnly {
		return false
	}
	st := r.scopeSettings(ctx, nil, ScopeFrom(ctx))
	if on, ok := st.approvals[t.spec.Name]; ok {
		return on
	}
	if t.spec.NeedsApproval {
		return true
	}
	return t.spec.Destructive && st.approveDestructive
}

// SetApproval requires (on) or stops requiring a person's approval in
// scope, persistently: for the named tool, or with tool "" for every
// Destructive tool of the scope. A tool's own setting wins over the
// scope's rule for destructive tools, which wins over NeedsApproval. The
// settings live beside the scope's other settings (ScopeSettings lists
// them with Approval set).
func (r *Registry) SetApproval(ctx context.Context, scope, tool string, on bool) error {
	return r.setScope(ctx, scope, approvalKey+tool, &on)
}

// approvalKey prefixes the tool column of an approval setting; tool names
// cannot contain ':', so the two kinds never meet.
const approvalKey = "approval:"

// approvalOutcome is the call's approval step, for the audit record.
func approvalOutcome(mode previewMode, err error) string {
	switch {
	case mode == previewDryRun:
		return "dry_run"
	case errors.Is(err, ErrApprovalRefused):
		if errors.Is(err, errDenied) {
			return "denied"
		}
		return "refused"
	case mode == previewRequest && errors.Is(err, ErrApprovalRequired):
		return "requested"
	case mode == previewApprove && errors.Is(err, ErrApprovalRequired):
		return "changed"
	case mode == previewApprove && err == nil:
		return "approved"
	}
	return ""
}

var errDenied = errors.New("denied by the user")

// prepareApproval sets up the call's preview state from the call and the
// policy, or returns the refusal of a bad or denied approval.
func (r *Registry) prepareApproval(ctx context.Context, t *Tool, call *Call, args []byte, argv map[string]any) (*previewState, error) {
	if t.spec.ReadOnly {
		if call.Approval != nil {
			return nil, refusedApproval(fmt.Sprintf("Tool %s reads only, so there is nothing to approve.", t.spec.Name))
		}
		return nil, nil
	}
	var p *previewState
	switch {
	case call.Approval != nil:
		ad := argsDigest(args, argv)
		c, err := r.approve.open(ctx, t.spec.Name, ad, call.Approval.Token)
		if err != nil {
			return nil, err
		}
		if !call.Approval.Approved {
			if err := r.spendApproval(ctx, c); err != nil {
				return nil, err
			}
			return nil, &Error{Kind: KindDenied, Message: "The user denied this change. Nothing was saved.",
				NextAction: "Ask the user what to do instead.", err: fmt.Errorf("%w: %w", ErrApprovalRefused, errDenied)}
		}
		return &previewState{mode: previewApprove, args: ad, want: c.Preview, nonce: c.Nonce, exp: c.Expires}, nil
	case call.DryRun:
		return &previewState{mode: previewDryRun}, nil
	case r.needsApproval(ctx, t):
		p = &previewState{mode: previewRequest, args: argsDigest(args, argv)}
	}
	return p, nil
}

// spendApproval records a denied token as used, so it cannot approve later.
func (r *Registry) spendApproval(ctx context.Context, c *approvalClaims) error {
	if !r.approve.shared {
		if !r.approve.reserve(c.Nonce, c.Expires) {
			return refusedApproval("This approval was already used.")
		}
		return nil
	}
	if r.tx.DB == nil {
		return errNoDB
	}
	_, err := r.tx.DB.ExecContext(ctx, `INSERT INTO `+approvalsTable+` (nonce, used_at) VALUES ($1, $2)`, c.Nonce, time.Now().Unix())
	if err != nil && engine.UniqueViolation(err) {
		return refusedApproval("This approval was already used.")
	}
	return err
}

// finishPreview ends a write run that previews, before its commit: it
// returns commit true when the run may commit (an approved preview that
// matches, its token recorded as used: in tx when replicas share the key,
// else in this process's memory), or the error that ends it.
func (r *Registry) finishPreview(ctx context.Context, p *previewState, out []byte, summary string, tx *sql.Tx) (commit bool, err error) {
	pv := p.build(out, summary)
	p.preview = pv
	if p.mode == previewDryRun {
		return false, nil
	}
	p.sum = pv.digest()
	if p.mode == previewRequest || p.sum != p.want {
		return false, nil
	}
	if !r.approve.shared {
		// Only this process honours its tokens: remember this one as used
		// (Invoke forgets it if the commit fails).
		if !p.held && !r.approve.reserve(p.nonce, p.exp) {
			return false, refusedApproval("This approval was already used.")
		}
		p.held = true
		return true, nil
	}
	stmt, err := r.approve.spendStmt(ctx, r.tx.DB)
	if err != nil {
		return false, err
	}
	if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, p.nonce, time.Now().Unix()); err != nil {
		if engine.UniqueViolation(err) {
			return false, refusedApproval("This approval was already used.")
		}
		return false, err
	}
	return true, nil
}

// previewResult completes a previewing call's Result: the dry run's
// preview, or an approval request (first, or again because the data
// changed) and the error that says so.
func (r *Registry) previewResult(ctx context.Context, t *Tool, args []byte, p *previewState, res *Result) error {
	pv := p.preview
	if pv == nil {
		return nil
	}
	switch p.mode {
	case previewDryRun:
		res.Preview = pv
		b, err := json.Marshal(struct {
			DryRun bool `json:"dryRun"`
			*Preview
		}{true, pv})
		res.JSON = b
		return err
	case previewApprove:
		if p.sum == p.want {
			return nil
		}
	}
	if p.args == "" {
		p.args = argsDigest(args, nil)
	}
	token, exp := r.approve.seal(ctx, t.spec.Name, p.args, p.sum)
	res.Preview = pv
	res.Approval = &ApprovalRequest{Preview: *pv, Token: token, Expires: exp}
	msg := "This change needs the user's approval: " + pv.String() + "."
	if p.mode == previewApprove {
		msg = "The data changed since the user approved this change, so nothing was saved. The change is now: " + pv.String() + "."
	}
	return &Error{Kind: KindDenied, Message: msg, NextAction: "Nothing was saved yet; ask the user to approve it.", err: ErrApprovalRequired}
}

func previewModeOf(p *previewState) previewMode {
	if p == nil {
		return previewNone
	}
	return p.mode
}
