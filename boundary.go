package llmtool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStatementRefused is wrapped by the error a handler gets when it runs a
// statement that would change the transaction or the connection rather
// than data: BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, END, a PRAGMA
// that sets a value, ATTACH, DETACH, VACUUM, CREATE TEMP and the like.
// llmtool owns each call's transaction and hands its connection back
// exactly as it found it, so such a statement never reaches the database.
//
// A refusal ends the call: whatever the handler returns afterwards, the
// transaction rolls back and the model gets the generic internal-error
// message, while the log names the tool, the statement and what to do
// instead.
var ErrStatementRefused = errors.New("llmtool: statement refused")

// errTxEnded is the cause when a write handler ended its transaction
// itself, through the *sql.Tx that WriteCtx.Tx gives out.
var errTxEnded = errors.New("llmtool: the handler ended its transaction itself")

// check refuses a statement that would change the transaction or the
// connection. The first refusal sticks to the call: it fails whatever the
// handler returns.
func (cs *callState) check(query string) error {
	r := cs.reg.tx.checked.Check(cs.reg.tx.dialect, query)
	if r == nil {
		return nil
	}
	err := fmt.Errorf("%w: tool %s ran %s", ErrStatementRefused, cs.tool.spec.Name, r.Error())
	cs.reg.logger().Error("llmtool: tool ran a statement that would change its transaction or connection; llmtool refused it",
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
func (c *ReadCtx) Value(key any) any { return c.parent.Value(key) }

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

// errRows answers queries with the error passed as their only argument, so
// QueryRow can hand a handler a *sql.Row whose Scan reports llmtool's own
// error (a refusal, a use after the handler returned).
type errRows struct{}

func (errRows) Connect(context.Context) (driver.Conn, error) { return errRows{}, nil }
func (errRows) Driver() driver.Driver                        { return errRows{} }
func (errRows) Open(string) (driver.Conn, error)             { return errRows{}, nil }
func (errRows) Prepare(string) (driver.Stmt, error)          { return nil, driver.ErrSkip }
func (errRows) Close() error                                 { return nil }
func (errRows) Begin() (driver.Tx, error)                    { return nil, driver.ErrSkip }
func (errRows) CheckNamedValue(*driver.NamedValue) error     { return nil }
func (errRows) QueryContext(_ context.Context, _ string, args []driver.NamedValue) (driver.Rows, error) {
	return nil, args[0].Value.(error)
}

// errRower makes *sql.Row values that fail with a given error.
type errRower struct {
	once sync.Once
	db   *sql.DB
}

// row returns a *sql.Row whose Scan returns err.
func (e *errRower) row(err error) *sql.Row {
	e.once.Do(func() { e.db = sql.OpenDB(errRows{}) })
	return e.db.QueryRowContext(context.Background(), "", err)
}

// commitGuard turns a COMMIT that the handler runs through WriteCtx.Tx
// into a ROLLBACK, through the SQLite driver's commit hook, until the
// registry itself commits.
type commitGuard struct{ allow atomic.Bool }

// install registers the guard as conn's commit hook. It reports false if
// the driver has no commit hook. It finds the hook by reflection, so the
// core does not import a driver: modernc.org/sqlite's
// RegisterCommitHook(func() int32) and mattn/go-sqlite3's
// RegisterCommitHook(func() int) both fit.
func (g *commitGuard) install(conn *sql.Conn) bool {
	ok := false
	_ = conn.Raw(func(dc any) error {
		m := reflect.ValueOf(dc).MethodByName("RegisterCommitHook")
		if !m.IsValid() || m.Type().NumIn() != 1 {
			return nil
		}
		ft := m.Type().In(0)
		if ft.Kind() != reflect.Func || ft.NumIn() != 0 || ft.NumOut() != 1 {
			return nil
		}
		switch ft.Out(0).Kind() {
		case reflect.Int, reflect.Int32, reflect.Int64:
		default:
			return nil
		}
		deny, allow := reflect.ValueOf(1).Convert(ft.Out(0)), reflect.ValueOf(0).Convert(ft.Out(0))
		hook := reflect.MakeFunc(ft, func([]reflect.Value) []reflect.Value {
			if g.allow.Load() {
				return []reflect.Value{allow}
			}
			return []reflect.Value{deny} // non-zero: SQLite rolls back instead
		})
		m.Call([]reflect.Value{hook})
		ok = true
		return nil
	})
	return ok
}

// discard closes conn's physical connection instead of handing it back to
// the pool: its state may differ from what the registry set.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}
