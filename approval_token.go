package llmtool

import (
	"context"
	"fmt"
	"time"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/token"
)

// Approval tokens: what they bind and what a refusal says (approval.go
// has the flow). Signing, checking and the memory of used tokens are
// internal/token's.

// approvalPurpose names approval tokens and their format among the
// tokens one key signs.
const approvalPurpose = "llmtool-approval-2"

// approvalClaims are what a token binds: the call (tool, arguments,
// principal, tenant, expiry, nonce) and the approval's own claims.
type approvalClaims struct {
	token.Claims
	Preview string // digest of the approved preview
	Fresh   string // what the preview's digest left unbound (fresh.encode)
}

// approvals is a registry's approval configuration.
type approvals struct {
	key    []byte // the signer's, for a test's replica
	signer *token.Signer
	ttl    time.Duration
	now    func() time.Time

	// spend records a token's nonce as used, in the approved call's
	// transaction (shared keys only).
	spend dbconn.Prepared

	// shared is set when Options.ApprovalKey is: other processes honour
	// this one's tokens, so a used token is recorded in the database.
	// Otherwise only this process can, and remembers used tokens in spent.
	shared bool
	spent  token.Spent

	made madeColumns // the columns whose values the engine makes (approval_fresh.go)
}

// reserve records nonce as used until exp, and reports false if it was
// already.
func (a *approvals) reserve(nonce, exp int64) bool { return a.spent.Spend(nonce, exp, a.now()) }

// release forgets a reservation whose commit did not happen.
func (a *approvals) release(nonce int64) { a.spent.Forget(nonce) }

func (a *approvals) init(o *Options) {
	if o == nil {
		o = &Options{}
	}
	a.shared = len(o.ApprovalKey) > 0 // checked by NewRegistry (signkey.Check)
	a.signer = token.NewSigner(approvalPurpose, o.ApprovalKey)
	a.key = a.signer.Key()
	a.ttl = o.ApprovalTTL
	if a.ttl <= 0 {
		a.ttl = defaultApprovalTTL
	}
	a.now = time.Now
	a.spend.Query = `INSERT INTO ` + approvalsTable + ` (nonce, used_at) VALUES ($1, $2)`
}

// close closes the prepared statement, with the registry.
func (a *approvals) close() { a.spend.Close() }

// seal makes the token approving pv for this call.
func (a *approvals) seal(ctx context.Context, tool, args, preview, fresh string) (string, time.Time) {
	exp := a.now().Add(a.ttl)
	c := token.Claims{Tool: tool, Args: args, Principal: principalID(ctx), Tenant: TenantFrom(ctx),
		Expires: exp.Unix(), Extra: []string{preview, fresh}}
	return a.signer.Issue(&c), exp
}

// open checks a token against this call and returns its claims, or the
// refusal a person and the model read.
func (a *approvals) open(ctx context.Context, tool, args, tok string) (*approvalClaims, error) {
	c, why := a.signer.Check(tok, &token.Claims{Tool: tool, Args: args, Principal: principalID(ctx), Tenant: TenantFrom(ctx)}, a.now().Unix())
	if why == token.OK && len(c.Extra) != 2 {
		why = token.Forged
	}
	switch why {
	case token.OK:
		return &approvalClaims{Claims: *c, Preview: c.Extra[0], Fresh: c.Extra[1]}, nil
	case token.OtherTool:
		return nil, refusedApproval(fmt.Sprintf("The approval was given for tool %s, not %s.", c.Tool, tool))
	case token.OtherArgs:
		return nil, refusedApproval("The approval was given for other arguments.")
	case token.OtherUser:
		return nil, refusedApproval("The approval was given to another user.")
	case token.OtherTenant:
		return nil, refusedApproval("The approval was given in another tenant.")
	case token.Expired:
		return nil, refusedApproval(fmt.Sprintf("The approval expired at %s.", time.Unix(c.Expires, 0).UTC().Format(time.RFC3339)))
	}
	return nil, refusedApproval("The approval token is not one this server issued for this change.")
}

func refusedApproval(msg string) *Error {
	return &Error{Kind: KindDenied, Message: msg + " Nothing was saved.",
		NextAction: "Call the tool again to get a new preview for the user to approve.", err: approval.ErrRefused}
}

// argsDigest fingerprints arguments independently of key order and
// spacing (token.ArgsDigest).
func argsDigest(args []byte) string { return token.ArgsDigest(args) }
