package dbconn

import (
	"context"
	"sync"
	"time"
)

// Interrupter returns a function that stops the statement running on
// driverConn (the driver's connection, as (*sql.Conn).Raw passes it), such
// as SQLite's sqlite3_interrupt, which may be called from any goroutine; or
// nil when it cannot interrupt that connection.
//
// With one, a read call under a cancellable context runs its statements
// without the context's cancellation and registers a single
// context.AfterFunc per call that interrupts the connection. Without one,
// database/sql and the driver each watch the context of every statement:
// modernc.org/sqlite and database/sql's *sql.Rows each start a goroutine
// per statement.
//
// One gap remains: SQLite forgets an interrupt that comes while no
// statement runs, so a cancellation that lands between a statement's
// context check and its first step lets that one statement run to its
// end (the driver closes the gap with a progress handler, which it does
// not export); the call's next statement then fails with the context's
// error, and the call reports the cancellation.
type Interrupter func(driverConn any) func()

// hook is a reserved read connection's cancellation hook: one per call,
// armed at BeginRead and disarmed at EndRead.
type hook struct {
	interrupt func() // nil: the driver watches each statement's context

	mu     sync.Mutex
	armed  bool        // a call holds the connection: interrupting it is safe
	fired  bool        // the call's context ended while it held the connection
	stop   func() bool // unregisters the AfterFunc
	done   <-chan struct{}
	parent context.Context
	quiet  quietCtx // the call's context without its cancellation
}

// quietCtx is a context without cancellation: statements run on it start
// no watcher, and the hook interrupts them instead.
type quietCtx struct{ context.Context }

func (quietCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (quietCtx) Done() <-chan struct{}       { return nil }
func (quietCtx) Err() error                  { return nil }

// arm registers the hook for a call under ctx.
func (h *hook) arm(ctx context.Context) {
	if h.interrupt == nil {
		return
	}
	done := ctx.Done()
	if done == nil {
		return // nothing to watch: statements start no watcher either
	}
	h.mu.Lock()
	h.armed, h.fired, h.done, h.parent = true, false, done, ctx
	h.quiet.Context = ctx
	h.mu.Unlock()
	h.stop = context.AfterFunc(ctx, h.fire)
}

// fire interrupts the call's statement, if the call still holds the
// connection.
func (h *hook) fire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.armed {
		h.fired = true
		h.interrupt()
	}
}

// disarm unregisters the hook, after an interrupt under way has finished,
// and reports whether it fired. An interrupt that reached the connection
// when no statement ran is cleared by SQLite when the next one starts.
func (h *hook) disarm() (fired bool) {
	if h.stop == nil {
		return false
	}
	h.stop()
	h.mu.Lock()
	fired = h.fired
	h.armed, h.fired, h.done, h.parent, h.stop = false, false, nil, nil, nil
	h.quiet.Context = nil
	h.mu.Unlock()
	return fired
}

// ctx returns the context to run a statement with: the call's context
// without its cancellation when ctx ends with the call's (the hook
// interrupts the statement), else ctx. It fails once the call's context
// has ended.
func (h *hook) ctx(ctx context.Context) (context.Context, error) {
	if h.done == nil || ctx.Done() != h.done {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &h.quiet, nil
}
