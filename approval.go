package llmtool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/engine"
)

// Approval that spans the transaction: the flow (package approval has its
// data and describes it). A write tool that needs approval (NeedsApproval,
// or Tenants().SetApproval for a tenant) does not commit on its first call:
// the registry runs it in its transaction, records an approval.Preview of
// what it changed, rolls back and answers with an approval.Request. The
// person decides with no transaction open and no lock held; the call then
// runs again with Call.Approval and commits only if its preview is the one
// the person approved. A dry run (Call.DryRun) gives the same preview for
// any write tool, and always rolls back.

// NeedsApproval marks a write tool whose calls a person approves before
// they commit; see Call.Approval. A tenant can require approval of more
// tools with Registry.Tenants().SetApproval. NeedsApproval on a Read tool panics.
func NeedsApproval() Option { return func(c *toolConfig) { c.spec.NeedsApproval = true } }

// Describe sets the one-line description of the call's change that a
// person approving it reads (approval.Preview.Summary), such as
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
	// previewIfDeletes commits unless the run deletes rows, and then asks
	// as previewRequest does (undo_changes where the tenant requires
	// approval of destructive tools: approval_undo.go).
	previewIfDeletes
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
	// fresh is what the tool makes afresh on each run, found by a
	// request's second run; an approved run reads it from its token
	// (approval_fresh.go).
	fresh fresh
	first *approval.Preview // previewRequest: the first run's preview, during the second

	preview *approval.Preview // built at the end of the run
}

// previewHooks plug the preview into the write path (hooks.go), for a
// call that previews (a dry run, or one that asks for approval or brings
// it): at begin the run counts the rows it changes per table, whichever
// statement, trigger or cascade changes them (dbconn.WriteTx.CountChanges);
// before commit its preview is built and decides whether the run commits
// (finishPreview), or ends rolled back with its result.
var previewHooks = writeHooks{
	begin: []func(context.Context, *callState) error{
		func(ctx context.Context, cs *callState) error {
			if cs.preview == nil {
				return nil
			}
			cs.preview.preview = nil // a run again builds its own
			return cs.wtx.CountChanges(ctx)
		},
	},
	beforeCommit: []func(context.Context, *callState) error{
		func(ctx context.Context, cs *callState) error {
			if cs.preview == nil {
				return nil
			}
			counts, err := cs.wtx.Counts(ctx)
			if err != nil {
				return err
			}
			pv := buildPreview(cs.out, counts, cs.summary, cs.changes)
			commit, err := cs.reg.finishPreview(ctx, cs.preview, pv, cs.wtx.Tx)
			if err == nil && !commit {
				return errRolledBack
			}
			return err
		},
	},
}

// buildPreview returns a run's preview: out, the rows it changed per
// table, summary (Describe) and its changeset. The tables come in the
// order the run first changed them where the changeset tells (tracked
// tables), then the others in the order of their names (counts'), so a
// person reads the table the tool is about first.
func buildPreview(out []byte, counts []dbconn.TableCount, summary string, set *changeset.Set) *approval.Preview {
	pv := &approval.Preview{Result: json.RawMessage(bytes.Clone(out)), Tables: make([]approval.TableCount, 0, len(counts)), Summary: summary, Changeset: set}
	var first []string
	if set != nil {
		for _, row := range set.Rows {
			if !slices.Contains(first, row.Table) {
				first = append(first, row.Table)
			}
		}
	}
	rank := func(c dbconn.TableCount) int {
		if i := slices.IndexFunc(first, func(t string) bool { return strings.EqualFold(t, c.Table) }); i >= 0 {
			return i
		}
		return len(first)
	}
	slices.SortStableFunc(counts, func(a, b dbconn.TableCount) int { return rank(a) - rank(b) })
	for _, c := range counts {
		pv.Tables = append(pv.Tables, approval.TableCount{Table: c.Table, Inserted: c.Inserted, Updated: c.Updated, Deleted: c.Deleted})
	}
	return pv
}

// previewDigest is the preview's fingerprint: what an approval approves.
// With tracked tables it binds the changeset too (changeset.Set.Digest):
// the rows' keys and values before, and what their columns change to,
// but for the values the host declared generated, read from f.masked
// when set (an approved run's, its made values put back to the shown
// ones: approval_fresh.go); and the tool's output unless f found it
// fresh.
func (r *Registry) previewDigest(pv *approval.Preview, f *fresh) string {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	if f.result {
		field([]byte("(fresh)"))
	} else {
		field(pv.Result)
	}
	for _, c := range pv.Tables {
		field([]byte(c.Table))
		for _, x := range []int64{c.Inserted, c.Updated, c.Deleted} {
			binary.LittleEndian.PutUint64(n[:], uint64(x))
			h.Write(n[:])
		}
	}
	field([]byte(pv.Summary))
	set := pv.Changeset
	if f.masked != nil {
		set = f.masked
	}
	if set != nil {
		field([]byte(set.Digest(r.tracked.isGenerated)))
	}
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0]))
}

// approvalMode is how a call of t in ctx's tenant previews for approval:
// previewRequest when the tool says so, or the tenant's settings do
// (tenant.Settings.SetApproval); previewIfDeletes for the undo of
// changes where the tenant requires approval of destructive tools
// (approval_undo.go); else previewNone.
func (r *Registry) approvalMode(ctx context.Context, t *Tool) previewMode {
	if t.spec.ReadOnly {
		return previewNone
	}
	st := r.tenants.Get(ctx, TenantFrom(ctx))
	if on, ok := st.Approval[t.spec.Name]; ok {
		if on {
			return previewRequest
		}
		return previewNone
	}
	switch {
	case t.spec.NeedsApproval || (t.spec.Destructive && st.Approval[""]):
		return previewRequest
	case st.Approval[""] && isUndoTool(t):
		return previewIfDeletes
	}
	return previewNone
}

// approvalOutcome is the call's approval step, for the audit record.
func approvalOutcome(mode previewMode, err error) string {
	switch {
	case mode == previewDryRun:
		return "dry_run"
	case errors.Is(err, approval.ErrRefused):
		if errors.Is(err, errDenied) {
			return "denied"
		}
		return "refused"
	case mode == previewRequest && errors.Is(err, approval.ErrRequired):
		return "requested"
	case mode == previewApprove && errors.Is(err, approval.ErrRequired):
		return "changed"
	case mode == previewApprove && err == nil:
		return "approved"
	}
	return ""
}

var errDenied = errors.New("denied by the user")

var errNoDB = errors.New("llmtool: the registry has no database")

// prepareApproval sets up the call's preview state from the call and the
// policy, or returns the refusal of a bad or denied approval.
func (r *Registry) prepareApproval(ctx context.Context, t *Tool, call *Call, args []byte) (*previewState, error) {
	if t.spec.ReadOnly {
		if call.Approval != nil {
			return nil, refusedApproval(fmt.Sprintf("Tool %s reads only, so there is nothing to approve.", t.spec.Name))
		}
		return nil, nil
	}
	var p *previewState
	switch {
	case call.Approval != nil:
		ad := argsDigest(args)
		c, err := r.approve.open(ctx, t.spec.Name, ad, call.Approval.Token)
		if err != nil {
			return nil, err
		}
		if !call.Approval.Approved {
			if err := r.spendApproval(ctx, c); err != nil {
				return nil, err
			}
			return nil, &Error{Kind: KindDenied, Message: "The user denied this change. Nothing was saved.",
				NextAction: "Ask the user what to do instead.", err: fmt.Errorf("%w: %w", approval.ErrRefused, errDenied)}
		}
		return &previewState{mode: previewApprove, args: ad, want: c.Preview, nonce: c.Nonce, exp: c.Expires, fresh: decodeFresh(c.Fresh)}, nil
	case call.DryRun:
		return &previewState{mode: previewDryRun}, nil
	default:
		if mode := r.approvalMode(ctx, t); mode != previewNone {
			p = &previewState{mode: mode, args: argsDigest(args)}
		}
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

// finishPreview ends a write run that previews, before its commit, with
// its preview pv: it returns commit true when the run may commit (an approved preview that
// matches, its token recorded as used: in tx when replicas share the key,
// else in this process's memory), or the error that ends it.
func (r *Registry) finishPreview(ctx context.Context, p *previewState, pv *approval.Preview, tx *sql.Tx) (commit bool, err error) {
	p.preview = pv
	if p.mode == previewDryRun {
		return false, nil
	}
	if p.mode == previewIfDeletes {
		if !deletesRows(pv) {
			return true, nil // the tool that makes this change would not ask
		}
		p.mode = previewRequest // so Registry.call runs it again, as a request
	}
	if p.first != nil {
		if p.fresh, err = r.revealFresh(ctx, tx, p.first, pv); err != nil {
			return false, err
		}
	}
	if p.first != nil || p.mode == previewApprove {
		// The shown run and the approved run: their digests are compared.
		if err := r.bindMade(ctx, tx, pv.Changeset, &p.fresh, p.mode == previewApprove); err != nil {
			return false, err
		}
	}
	p.sum = r.previewDigest(pv, &p.fresh)
	if p.mode == previewApprove && p.sum != p.want && p.fresh.masked != nil {
		// Asked again, this run is the one shown: bind it as it is.
		p.fresh.masked = nil
		p.sum = r.previewDigest(pv, &p.fresh)
	}
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
	stmt, err := r.approve.spend.In(ctx, r.tx.DB, tx)
	if err != nil {
		return false, err
	}
	if _, err := stmt.ExecContext(ctx, p.nonce, time.Now().Unix()); err != nil {
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
func (r *Registry) previewResult(ctx context.Context, t *Tool, args []byte, p *previewState, locale string, res *Result) error {
	pv := p.preview
	if pv == nil {
		return nil
	}
	pv = r.shownPreview(pv, locale)
	switch p.mode {
	case previewDryRun:
		res.Preview = pv
		b, err := json.Marshal(struct {
			DryRun bool `json:"dryRun"`
			*approval.Preview
		}{true, pv})
		res.JSON = b
		return err
	case previewApprove:
		if p.sum == p.want {
			return nil
		}
	case previewIfDeletes:
		return nil // it deleted nothing, and committed
	}
	if p.args == "" {
		p.args = argsDigest(args)
	}
	token, exp := r.approve.seal(ctx, t.spec.Name, p.args, p.sum, p.fresh.encode())
	res.Preview = pv
	res.Approval = &approval.Request{Preview: *pv, Token: token, Expires: exp}
	// The model reads the tool's own line, as the person's words may
	// show values of rows it did not read.
	msg := "This change needs the user's approval: " + p.preview.String() + "."
	if p.mode == previewApprove {
		msg = "The data changed since the user approved this change, so nothing was saved. The change is now: " + p.preview.String() + "."
	}
	return &Error{Kind: KindDenied, Message: msg, NextAction: "Nothing was saved yet; ask the user to approve it.", err: approval.ErrRequired}
}

// shownPreview is pv as a person is shown it, bound already: its rows
// in the host's words in locale (words.go) and, when the tool did not
// describe its change, those words as its Summary. pv itself when no
// entity describes its rows.
func (r *Registry) shownPreview(pv *approval.Preview, locale string) *approval.Preview {
	set := r.changeWords(locale).set(pv.Changeset)
	if set == pv.Changeset {
		return pv
	}
	shown := *pv
	shown.Changeset = set
	if shown.Summary == "" {
		shown.Summary = summary(set)
	}
	return &shown
}

func previewModeOf(p *previewState) previewMode {
	if p == nil {
		return previewNone
	}
	return p.mode
}
