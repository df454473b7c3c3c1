package llmtool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmtool/llmtool/internal/callinfo"
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

// The handler contexts are context.Contexts of their own: derived from the
// caller's, and cancelled when the handler returns, so a goroutine waiting
// on Done and a context derived with context.WithCancel(c) see the end of
// the call. The channel is made only when someone asks for it, so a call
// whose handler never calls Done costs nothing for it.

// Deadline returns the caller's deadline.
func (c *ReadCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Value returns the caller's context value for key.
func (c *ReadCtx) Value(key any) any {
	if _, ok := key.(callinfo.Key); ok {
		return c.info()
	}
	return c.parent.Value(key)
}

// info describes the call to llmtool's own packages (package ask).
func (c *ReadCtx) info() callinfo.Info {
	in := callinfo.Info{Tool: c.call.tool.spec.Name, Write: c.write != nil, Run: c.call}
	if c.call.done.Load() {
		in.Late = c.late
	} else {
		in.Fail = c.call.fail
	}
	return in
}

// Done returns a channel that is closed when the caller cancels the call or
// when the handler returns, whichever comes first.
func (c *ReadCtx) Done() <-chan struct{} { return c.call.doneChan(c.parent) }

// Err returns the caller's context error, or context.Canceled once the
// handler has returned.
func (c *ReadCtx) Err() error {
	if err := c.parent.Err(); err != nil {
		return err
	}
	if c.call.done.Load() {
		return context.Canceled
	}
	return nil
}

// doneChan returns the call's Done channel, making it on first use.
func (cs *callState) doneChan(parent context.Context) <-chan struct{} {
	cs.ctxMu.Lock()
	defer cs.ctxMu.Unlock()
	if cs.doneCh == nil {
		cs.doneCh = make(chan struct{})
		if cs.done.Load() {
			close(cs.doneCh)
			cs.closed = true
		} else if parent.Done() != nil {
			cs.stopParent = context.AfterFunc(parent, cs.closeDone)
		}
	}
	return cs.doneCh
}

// closeDone closes the Done channel, if it was made.
func (cs *callState) closeDone() {
	cs.ctxMu.Lock()
	defer cs.ctxMu.Unlock()
	if cs.doneCh != nil && !cs.closed {
		close(cs.doneCh)
		cs.closed = true
	}
	if cs.stopParent != nil {
		cs.stopParent()
		cs.stopParent = nil
	}
}
