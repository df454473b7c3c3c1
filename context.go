package llmtool

import (
	"context"
	"time"

	"github.com/llmtool/llmtool/internal/callinfo"
)

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

// doneSignal is a call's Done channel, made on first use; the call's ctxMu
// guards it.
type doneSignal struct {
	ch         chan struct{}
	closed     bool
	stopParent func() bool // stops the caller's context from closing ch
}

// doneChan returns the call's Done channel, making it on first use.
func (cs *callState) doneChan(parent context.Context) <-chan struct{} {
	cs.ctxMu.Lock()
	defer cs.ctxMu.Unlock()
	if cs.ctxDone.ch == nil {
		cs.ctxDone.ch = make(chan struct{})
		if cs.done.Load() {
			close(cs.ctxDone.ch)
			cs.ctxDone.closed = true
		} else if parent.Done() != nil {
			cs.ctxDone.stopParent = context.AfterFunc(parent, cs.closeDone)
		}
	}
	return cs.ctxDone.ch
}

// closeDone closes the Done channel, if it was made.
func (cs *callState) closeDone() {
	cs.ctxMu.Lock()
	defer cs.ctxMu.Unlock()
	if cs.ctxDone.ch != nil && !cs.ctxDone.closed {
		close(cs.ctxDone.ch)
		cs.ctxDone.closed = true
	}
	if cs.ctxDone.stopParent != nil {
		cs.ctxDone.stopParent()
		cs.ctxDone.stopParent = nil
	}
}
