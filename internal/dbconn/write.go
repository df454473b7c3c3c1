package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// WriteTx is a write transaction on a connection the call holds, so the
// registry can close the connection rather than hand it back when the
// handler may have changed it.
//
// On SQLite, where writes take turns, the registry keeps that connection
// between writes (see writeConn), its authorizer installed once; on
// PostgreSQL each write takes a connection from the pool.
//
// The transaction does not end with the call's context: database/sql
// would roll it back from a goroutine of its own as soon as the context
// ends, while the handler may still be running statements, and on SQLite
// its ROLLBACK would meet the authorizer in the handler's mode. The
// registry ends it itself, when the handler returns, in ModeOwn.
type WriteTx struct {
	Conn   *sql.Conn
	Tx     *sql.Tx
	Policy *Policy // SQLite's authorizer; nil on PostgreSQL

	pool    *Pool                 // the pool that began it
	wc      *writeConn            // SQLite's write connection
	capture *Capture              // records the call's changes to tracked tables; nil if none are
	pg      *pgCall               // PostgreSQL's capture, once StartCall turned it on
	pgOn    bool                  // PostgreSQL: a reserved write connection, its session's capture on (pgsession.go)
	pgBase  map[string]TableCount // PostgreSQL: the session's counts when the run began counting (count.go)
	cancel  context.CancelFunc    // ends the transaction's context
	state   atomic.Int32          // writeRunning, writeEnding or writeAbandoned

	// The watch of Watch: stopWatch unregisters it; ended, closed by
	// Claim, tells its goroutine that the call no longer needs watching.
	stopWatch func() bool
	ended     chan struct{}
}

// A write transaction's state: the handler runs, the registry ends the
// transaction (commit or rollback), or the watch abandoned the call.
const (
	writeRunning int32 = iota
	writeEnding
	writeAbandoned
)

// writeConn is SQLite's write connection, with its authorizer's policy.
// The holder of the write token owns Pool.writer.
type writeConn struct {
	conn   *sql.Conn
	policy Policy
	hook   *rowHook // its pre-update hook (count.go), once a run tracks or counts
}

// BeginWrite starts a write transaction, with the connection's authorizer
// in ModeOwn on SQLite. On SQLite it first waits for the registry's write
// token; open the database with _txlock=immediate (as sqlite.Open does) so
// the transaction takes the write lock at BEGIN. On PostgreSQL the
// transaction is SERIALIZABLE: the server lets writes run side by side and
// fails one that could not have run alone (40001), which the registry
// retries. The wait for the token, a connection and BEGIN end with ctx.
func (t *Pool) BeginWrite(ctx context.Context) (*WriteTx, error) {
	var opts *sql.TxOptions
	if t.sqlite {
		select {
		case t.writes <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else if t.Engine == engine.Postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelSerializable}
	}
	var kept *writeConn
	if t.sqlite { // the token's holder owns t.writer
		kept, t.writer = t.writer, nil
	}
	w, err := t.beginWrite(ctx, opts, kept)
	if err != nil && w == nil && kept != nil {
		// The kept write connection is gone (database/sql closes a
		// connection its driver reported bad): take another.
		w, err = t.beginWrite(ctx, opts, nil)
	}
	for tries := 0; err != nil && w != nil && w.pgOn && tries <= cap(t.pgWriters) && ctx.Err() == nil &&
		(engine.BrokenConn(err) || engine.Unavailable(err)); tries++ {
		// A reserved PostgreSQL write connection whose server session
		// ended (a restart, pg_terminate_backend) fails its BEGIN before
		// anything ran: take the next, as BeginRead does.
		w, err = t.beginWrite(ctx, opts, nil)
	}
	if err != nil {
		t.releaseToken()
		return nil, err
	}
	return w, nil
}

// beginWrite begins a write transaction on kept, SQLite's write
// connection, or on a connection from the pool when kept is nil. It
// returns a nil WriteTx and an error when kept is closed, and else, on
// failure, a WriteTx whose connection it handed back.
func (t *Pool) beginWrite(ctx context.Context, opts *sql.TxOptions, kept *writeConn) (*WriteTx, error) {
	w := &WriteTx{pool: t, wc: kept}
	if kept != nil {
		w.Conn, w.Policy = kept.conn, &kept.policy
		w.Policy.reset()
	} else if conn, err := t.pgWriter(ctx); err != nil || conn != nil {
		if err != nil {
			return nil, err
		}
		w.Conn, w.pgOn = conn, true
	} else {
		conn, err := t.DB.Conn(ctx)
		if err != nil {
			return nil, err
		}
		w.Conn = conn
		if t.sqlite {
			w.wc = &writeConn{conn: conn}
			w.Policy = &w.wc.policy
			if err := install(conn, w.Policy); err != nil {
				discard(conn)
				return w, err
			}
			if c := NewCapture(t.Track, t.MaxValue); c != nil {
				h := &rowHook{capture: c}
				if err := installRowHook(conn, h); err != nil {
					discard(conn)
					return w, err
				}
				w.wc.hook = h
				w.Policy.sets = true
			}
		}
	}
	if w.wc != nil && w.wc.hook != nil {
		w.capture = w.wc.hook.capture
	}
	// BEGIN waits for a lock under ctx; the transaction then lives on a
	// context only EndWrite ends. A context that cannot end serves as it
	// is (and spares the driver a watcher goroutine per statement).
	txCtx, cancel := ctx, context.CancelFunc(func() {})
	stop := func() bool { return true }
	if ctx.Done() != nil {
		txCtx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		stop = context.AfterFunc(ctx, cancel)
	}
	var err error
	w.Tx, err = w.Conn.BeginTx(txCtx, opts)
	if !stop() && err == nil {
		// ctx ended during BEGIN, and with it the transaction's context.
		_ = w.Tx.Rollback()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		if kept != nil && (errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn)) {
			discard(w.Conn)
			return nil, err
		}
		if w.wc != nil && ctx.Err() == nil && engine.Locked(err) && t.keepWriter && !t.closed.Load() {
			// BEGIN IMMEDIATE found the write lock taken by another
			// process: no transaction began, so the connection is as it
			// was, kept for the run again.
			t.writer = w.wc
			return w, err
		}
		if w.pgOn {
			t.putPGWriter(w.Conn, true)
			return w, err
		}
		t.releaseWriteConn(w.Conn, w.wc != nil, true)
		return w, err
	}
	w.cancel = cancel
	if w.capture != nil {
		w.capture.start()
	}
	return w, nil
}

// LockWatch asks PostgreSQL, shortly before a write's deadline, whether a
// session waits for a lock: how the registry tells a write whose deadline
// cut a statement that waited behind another transaction's lock, which is
// contention, from one that ran long. It asks before the deadline because
// after it there is nothing left to see: pgx cancels a statement whose
// context ends (its CancelRequest ends the session's wait) and closes the
// connection.
type LockWatch struct {
	timer *time.Timer
	done  chan struct{}
	seen  bool
}

// WatchLocks starts the watch of a write whose handler runs under ctx:
// when a quarter of the time left, at most 100 ms, remains before ctx's
// deadline, it asks whether a session of this database and user, other
// than the asking one, waits for a lock. It asks on a connection of the
// pool: when none is idle and opening one takes longer than that, the
// answer comes after pgx's cancellation and says no. It returns nil,
// which watches nothing (at no cost), on SQLite and for a ctx without a
// deadline.
func (t *Pool) WatchLocks(ctx context.Context) *LockWatch {
	if t.Engine != engine.Postgres {
		return nil
	}
	d, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	left := time.Until(d)
	lead := min(left/4, 100*time.Millisecond)
	w := &LockWatch{done: make(chan struct{})}
	w.timer = time.AfterFunc(left-lead, func() {
		defer close(w.done)
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		err := t.DB.QueryRowContext(pctx, pgLockWait).Scan(&w.seen)
		w.seen = err == nil && w.seen
	})
	return w
}

// pgLockWait asks whether a session of this database and user, other
// than the asking one, waits for a lock.
const pgLockWait = `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE datname = current_database() AND usename = session_user AND pid <> pg_backend_pid() AND wait_event_type = 'Lock')`

// Stop ends the watch, once the handler returned, and reports whether it
// saw a session wait for a lock: false if it did not ask. A question in
// flight is waited for (at most a second).
func (w *LockWatch) Stop() bool {
	if w == nil || w.timer.Stop() {
		return false
	}
	<-w.done
	return w.seen
}

// releaseToken gives the write token back (SQLite).
func (t *Pool) releaseToken() {
	if t.sqlite {
		<-t.writes
	}
}

// EndWrite hands the connection back, without the registry's authorizer,
// or closes it if the call had a statement refused (suspect), and
// releases the write token. The transaction must have ended. It does
// nothing for a call the watch abandoned (see Watch).
func (t *Pool) EndWrite(w *WriteTx, suspect bool) {
	if !w.Claim() {
		return
	}
	w.cancel()
	t.endConn(w, suspect)
}

// Grace is how long a write whose context ended may keep the write path:
// WriteGrace, or one second.
func (t *Pool) Grace() time.Duration {
	if t.WriteGrace > 0 {
		return t.WriteGrace
	}
	return time.Second
}

// Watch bounds how long a call whose context ended may keep the write
// path: once ctx is done, if the handler has not returned (Claim) within
// Grace, Watch abandons the call from a goroutine of its own. It rolls
// the transaction back (database/sql cancels its open rows, and the
// handler's later statements fail with sql.ErrTxDone), closes the
// connection rather than reusing it (closing it ends the transaction
// even if the ROLLBACK did not run), releases the write token (SQLite),
// and calls abandoned. The handler's goroutine runs on until it returns;
// the registry then finds the call abandoned (Claim reports false).
//
// On SQLite the authorizer is put in ModeClosed first, which refuses
// everything: the handler may still be running statements, which must
// not run as llmtool's own. So the ROLLBACK is refused too, and closing
// the connection rolls back instead. One wait remains: a statement the
// handler started with a context that does not end (not c, nor one
// derived from it) runs to its end before the transaction ends.
func (t *Pool) Watch(ctx context.Context, w *WriteTx, abandoned func()) {
	if ctx.Done() == nil {
		return
	}
	grace := t.Grace()
	w.ended = make(chan struct{})
	w.stopWatch = context.AfterFunc(ctx, func() {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-w.ended:
		case <-timer.C:
			if w.state.CompareAndSwap(writeRunning, writeAbandoned) {
				w.Policy.SetMode(ModeClosed)
				_ = w.Tx.Rollback()
				w.cancel()
				t.endConn(w, true)
				abandoned()
			}
		}
	})
}

// Claim ends the watch of a call whose handler returned, and reports
// whether the registry may end the transaction: false once the watch
// abandoned the call.
func (w *WriteTx) Claim() bool {
	if w.state.CompareAndSwap(writeRunning, writeEnding) {
		if w.stopWatch != nil {
			w.stopWatch()
			close(w.ended)
		}
		return true
	}
	return w.state.Load() == writeEnding
}

// endConn keeps SQLite's write connection for the next write, or
// PostgreSQL's reserved one, or hands w's connection back, or closes it
// (suspect), and releases the token.
func (t *Pool) endConn(w *WriteTx, suspect bool) {
	defer t.releaseToken()
	if w.pgOn {
		t.putPGWriter(w.Conn, suspect)
		return
	}
	if !suspect && w.wc != nil && t.keepWriter && !t.closed.Load() {
		t.writer = w.wc
		return
	}
	t.releaseWriteConn(w.Conn, w.wc != nil, suspect)
}

// releaseWriteConn hands conn back to the host's pool without the
// registry's authorizer, or closes it (suspect).
func (t *Pool) releaseWriteConn(conn *sql.Conn, authorizer, suspect bool) {
	if !suspect && authorizer && uninstall(conn) != nil {
		suspect = true
	}
	if !suspect && authorizer {
		uninstallHook(conn)
	}
	if suspect {
		discard(conn)
	} else {
		conn.Close()
	}
}

// CheckTriggers returns what the authorizer denies in the triggers the
// handler created (SQLite), or nil. SQLite checks a trigger's body not
// when it is created but when a statement that fires it is compiled: a
// trigger a write tool creates on its own table could change llmtool's
// tables when the host's code writes to that table, where no authorizer
// is installed. So for each table the handler created a trigger on,
// CheckTriggers compiles, without running them, an INSERT, an UPDATE of
// every column and a DELETE on it, in ModeOwn, which checks what runs
// inside triggers as in a write call. Call it after the handler, in
// ModeOwn; a denial fails the call, and its rollback takes the trigger.
func (w *WriteTx) CheckTriggers(ctx context.Context) *Denial {
	p := w.Policy
	if p == nil {
		return nil
	}
	p.mu.Lock()
	if len(p.triggers) == 0 {
		p.mu.Unlock()
		return nil
	}
	tables := slices.Compact(slices.Sorted(slices.Values(p.triggers)))
	p.triggers = nil
	p.mu.Unlock()
	for _, table := range tables {
		name := "main." + sqlcheck.QuoteIdent(table)
		set, err := w.columns(ctx, table)
		if err != nil {
			continue // the table is gone: so are its triggers
		}
		for _, probe := range []string{`INSERT INTO ` + name + ` DEFAULT VALUES`, `UPDATE ` + name + ` SET ` + set, `DELETE FROM ` + name} {
			if st, err := w.Tx.PrepareContext(ctx, probe); err == nil {
				st.Close()
			}
			if d := p.Take(); d != nil {
				return d
			}
		}
	}
	return nil
}

// columns returns "c1 = c1, c2 = c2, ..." for the columns of table that
// an UPDATE can set.
func (w *WriteTx) columns(ctx context.Context, table string) (string, error) {
	rows, err := w.Tx.QueryContext(ctx, `SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0`, table)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var set []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return "", err
		}
		q := sqlcheck.QuoteIdent(c)
		set = append(set, q+" = "+q)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if len(set) == 0 {
		return "", sql.ErrNoRows
	}
	return strings.Join(set, ", "), nil
}
