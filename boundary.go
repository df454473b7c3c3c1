package llmtool

import (
	"context"
	"errors"
	"fmt"

	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// ErrStatementRefused is wrapped by the error a handler gets when it runs a
// statement that would change the transaction or the connection rather
// than data: BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, END, a PRAGMA
// that sets a value, ATTACH, DETACH, VACUUM, CREATE TEMP and the like; or
// that touches llmtool's own tables (llmtool_*), or, on SQLite, the raw
// pages of sqlite_dbpage; or, in a read tool, that writes. llmtool owns
// each call's transaction and hands its connection back exactly as it
// found it, so such a statement never runs: on SQLite the engine's
// authorizer refuses it as it compiles it, on PostgreSQL llmtool's check
// of its text before it is sent. The error names what was refused and
// what to do instead.
//
// A refusal ends the call: whatever the handler returns afterwards, the
// transaction rolls back and the model gets the generic internal-error
// message, while the log names the tool, the statement and what to do
// instead.
var ErrStatementRefused = errors.New("llmtool: statement refused")

// check refuses, on PostgreSQL, a statement that would change the
// transaction or the connection, and returns the text to send, with
// SQLite's ? placeholders rewritten as $N. On SQLite the text is sent as
// it is: the engine's authorizer decides, operation by operation, as it
// compiles the statement (see denied). The first refusal sticks to the
// call: it fails whatever the handler returns.
func (cs *callState) check(query string) (string, error) {
	if cs.policy != nil {
		return query, nil
	}
	text, r := cs.reg.tx.Checked.CheckRebind(cs.reg.tx.Dialect, query)
	if r == nil {
		return text, nil
	}
	return "", cs.refuseStatement(r)
}

// triggerHooks check, before commit, what the triggers a write handler
// created would run (SQLite; see dbconn.WriteTx.CheckTriggers): a denial
// is the call's refusal.
var triggerHooks = writeHooks{beforeCommit: []func(context.Context, *callState) error{
	func(ctx context.Context, cs *callState) error {
		if d := cs.wtx.CheckTriggers(ctx); d != nil {
			return cs.refuseStatement(d.Refusal(""))
		}
		return nil
	},
}}

// denied turns what SQLite's authorizer denied since the last look, while
// the statement query ran ("" when the statement is not known), into the
// call's refusal, or returns nil.
func (cs *callState) denied(query string) error {
	d := cs.policy.Take()
	if d == nil {
		return nil
	}
	return cs.refuseStatement(d.Refusal(query))
}

// refuseStatement records r as the call's refusal and logs it for the tool's
// author.
func (cs *callState) refuseStatement(r *sqlcheck.Refusal) error {
	var err error
	if r.Statement == "" {
		err = fmt.Errorf("%w: tool %s ran a statement that %s; %s", ErrStatementRefused, cs.tool.spec.Name, r.Reason, r.Instead)
	} else {
		err = fmt.Errorf("%w: tool %s ran %s", ErrStatementRefused, cs.tool.spec.Name, r.Error())
	}
	cs.reg.logger().Error("llmtool: tool ran a statement that a tool may not run; llmtool refused it",
		"tool", cs.tool.spec.Name, "statement", r.Statement, "why", r.Reason, "instead", r.Instead)
	cs.refuse(err)
	return err
}

// refuse records the first refusal of the call.
func (cs *callState) refuse(err error) {
	cs.ctxMu.Lock()
	if cs.refused == nil {
		cs.refused = err
	}
	cs.ctxMu.Unlock()
}

// fail records the call's first failure (callinfo.Info.Fail): like a
// refusal, it fails the call whatever the handler returns, but the
// connection is sound and goes back to the pool.
func (cs *callState) fail(err error) {
	cs.ctxMu.Lock()
	if cs.failed == nil {
		cs.failed = err
	}
	cs.ctxMu.Unlock()
}

// failure returns the call's first failure, or nil.
func (cs *callState) failure() error {
	cs.ctxMu.Lock()
	defer cs.ctxMu.Unlock()
	return cs.failed
}

// refusal returns the call's first refusal, or nil.
func (cs *callState) refusal() error {
	cs.ctxMu.Lock()
	defer cs.ctxMu.Unlock()
	return cs.refused
}
