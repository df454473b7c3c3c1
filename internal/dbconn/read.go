package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"

	"github.com/llmtool/llmtool/internal/engine"
)

// readConn is a read-only connection: SQLite's query_only and the
// authorizer's ModeRead, PostgreSQL's default_transaction_read_only.
// begin and rollback are prepared on reserved SQLite connections and nil
// otherwise.
//
// A reserved SQLite connection also keeps the statements its calls run,
// prepared (see stmt), so a tool's query is parsed and planned once per
// connection rather than once per call. A read call has the connection to
// itself, but its handler may query from several goroutines before it
// returns, so mu guards the bookkeeping.
type readConn struct {
	conn            *sql.Conn
	begin, rollback driver.StmtExecContext // prepared on the driver's connection
	reserved        bool                   // stays read-only and goes back to Pool.idle
	pg              bool                   // PostgreSQL: read-only by default_transaction_read_only
	policy          *Policy                // SQLite's authorizer; nil on PostgreSQL

	mu       sync.Mutex
	prepared bool                   // the call's handler prepared a statement: close the connection after it
	call     uint64                 // counts the calls run on this connection
	stmts    map[string]*cachedStmt // by query text; nil unless reserved
	lent     []lent                 // results handed out in the current call
}

// cachedStmt is a statement prepared on a reserved read connection.
type cachedStmt struct {
	st   *sql.Stmt
	call uint64    // the call it was last lent to
	rows *sql.Rows // lent as rows in that call: free again once they close
}

// lent is a query result handed to a handler, closed when the call ends if
// the handler left it open, so no statement outlives its call.
type lent struct {
	rows *sql.Rows
	row  *sql.Row
}

// maxCachedStmts bounds the statements a reserved read connection keeps.
const maxCachedStmts = 64

// stmt returns a prepared statement for query that no open result of the
// current call is using, preparing it on first use, or nil: the connection
// keeps no statements (it is borrowed for one call, or on PostgreSQL,
// whose driver keeps its own), or query is in use in this call (a nested
// query with the same text), or it failed to prepare (running it
// unprepared reports the error). A statement is free once the call that
// used it ended, because EndRead closes every result a call left open.
func (rc *readConn) stmt(ctx context.Context, query string) *cachedStmt {
	if !rc.reserved || rc.pg {
		return nil
	}
	s := rc.stmts[query]
	switch {
	case s == nil:
		if len(rc.stmts) >= maxCachedStmts && !rc.evict() {
			return nil
		}
		st, err := rc.conn.PrepareContext(ctx, query)
		if err != nil {
			return nil
		}
		s = &cachedStmt{st: st}
		if rc.stmts == nil {
			rc.stmts = make(map[string]*cachedStmt)
		}
		rc.stmts[query] = s
	case s.call == rc.call:
		// Lent earlier in this call: free only if it was lent as rows that
		// have been closed since (Columns fails on closed rows).
		if s.rows == nil {
			return nil
		}
		if _, err := s.rows.Columns(); err == nil {
			return nil
		}
	}
	s.call, s.rows = rc.call, nil
	return s
}

// evict closes and forgets one statement not lent in the current call,
// reporting whether there was one.
func (rc *readConn) evict() bool {
	for q, s := range rc.stmts {
		if s.call != rc.call {
			s.st.Close()
			delete(rc.stmts, q)
			return true
		}
	}
	return false
}

// QueryContext runs query on the connection, on its prepared statement when
// it has one, and remembers the rows so EndRead can close them.
func (rc *readConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var rows *sql.Rows
	var err error
	if s := rc.stmt(ctx, query); s != nil {
		rows, err = s.st.QueryContext(ctx, args...)
		s.rows = rows
	} else {
		rows, err = rc.conn.QueryContext(ctx, query, args...)
	}
	if rows != nil {
		rc.lent = append(rc.lent, lent{rows: rows})
	}
	return rows, err
}

// QueryRowContext is QueryContext for at most one row.
func (rc *readConn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var row *sql.Row
	if s := rc.stmt(ctx, query); s != nil {
		row = s.st.QueryRowContext(ctx, args...)
	} else {
		row = rc.conn.QueryRowContext(ctx, query, args...)
	}
	rc.lent = append(rc.lent, lent{row: row})
	return row
}

// PrepareContext prepares query on the connection for the handler. Its
// *sql.Stmt closes the driver's statement at once, even while rows of it
// are open, and those rows are the handler's to close: so the call's end
// closes the connection instead of the statement, and database/sql closes
// the statement once its rows are closed.
func (rc *readConn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.prepared = true
	return rc.conn.PrepareContext(ctx, query)
}

// closeLent closes the results the ending call left open, resetting their
// statements before the transaction ends, and returns how many rows (from
// Query) were still open. Scan with no destinations closes a row whether
// or not the handler scanned it.
func (rc *readConn) closeLent() (open int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for i, l := range rc.lent {
		if l.rows != nil {
			if _, err := l.rows.Columns(); err == nil {
				open++
			}
			l.rows.Close()
		} else {
			_ = l.row.Scan()
		}
		rc.lent[i] = lent{}
	}
	rc.lent = rc.lent[:0]
	if cap(rc.lent) > 256 { // one call ran many queries; do not keep its array
		rc.lent = nil
	}
	rc.call++
	return open
}

// exec runs a statement of llmtool's own (BEGIN, ROLLBACK): prepared, on
// the driver's connection, or query when the connection has none. It runs
// without the call's context: neither statement waits for a lock, and
// under a cancellable context the driver would start a watcher goroutine
// for it.
func (rc *readConn) exec(stmt driver.StmtExecContext, query string) error {
	if stmt == nil {
		_, err := rc.conn.ExecContext(context.Background(), query)
		return err
	}
	return rc.conn.Raw(func(any) error {
		_, err := stmt.ExecContext(context.Background(), nil)
		return err
	})
}

// prepare prepares query on the driver's connection, or returns nil if the
// driver cannot.
func (rc *readConn) prepare(ctx context.Context, query string) driver.StmtExecContext {
	var st driver.StmtExecContext
	_ = rc.conn.Raw(func(dc any) error {
		p, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return nil
		}
		ds, err := p.PrepareContext(ctx, query)
		if err != nil {
			return nil
		}
		if st, ok = ds.(driver.StmtExecContext); !ok {
			ds.Close()
		}
		return nil
	})
	return st
}

// closeStmts closes the connection's prepared statements.
func (rc *readConn) closeStmts() {
	for q, s := range rc.stmts {
		s.st.Close()
		delete(rc.stmts, q)
	}
	_ = rc.conn.Raw(func(any) error {
		for _, st := range []*driver.StmtExecContext{&rc.begin, &rc.rollback} {
			if c, ok := (*st).(driver.Stmt); ok {
				c.Close()
			}
			*st = nil
		}
		return nil
	})
}

// ReadTx is a read-only transaction: a plain BEGIN on a read-only
// connection rather than a *sql.Tx, the same snapshot without
// database/sql's per-transaction goroutine.
type ReadTx struct{ rc *readConn }

// Querier returns what the transaction's queries run on.
func (r ReadTx) Querier() Querier { return r.rc }

// Policy returns the connection's authorizer policy: SQLite's, in ModeRead
// until EndRead; nil on PostgreSQL.
func (r ReadTx) Policy() *Policy { return r.rc.policy }

// BeginRead starts a read-only transaction: a consistent snapshot in which
// the database itself refuses writes. On SQLite that is a deferred BEGIN on
// a query_only connection, whose authorizer is then in ModeRead; on
// PostgreSQL a REPEATABLE READ READ ONLY transaction.
//
// A reserved connection whose server session ended (a restart, an
// administrator's pg_terminate_backend) fails its BEGIN before anything
// ran; BeginRead then tries the next, and at last a new one, as
// database/sql does with its pool's connections. A server that is down
// refuses the new one too.
func (t *Pool) BeginRead(ctx context.Context) (ReadTx, error) {
	for tries := 0; ; tries++ {
		rt, err := t.beginRead(ctx)
		if err == nil || !(engine.BrokenConn(err) || engine.Unavailable(err)) || tries > cap(t.idle) || ctx.Err() != nil {
			return rt, err
		}
	}
}

func (t *Pool) beginRead(ctx context.Context) (ReadTx, error) {
	rc, err := t.readConn(ctx)
	if err != nil {
		return ReadTx{}, err
	}
	if !t.sqlite {
		if _, err := rc.conn.ExecContext(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
			t.putConn(rc, true)
			return ReadTx{}, err
		}
		return ReadTx{rc: rc}, nil
	}
	// A deferred BEGIN takes no lock and cannot wait.
	if err := rc.exec(rc.begin, "BEGIN"); err != nil {
		t.putConn(rc, true)
		return ReadTx{}, err
	}
	rc.policy.SetMode(ModeRead)
	return ReadTx{rc: rc}, nil
}

// readConn returns a read-only connection: a reserved idle one, a newly
// reserved one while fewer than cap(t.idle) exist, or else a pooled one
// made read-only for this call only.
func (t *Pool) readConn(ctx context.Context) (*readConn, error) {
	select {
	case rc := <-t.idle:
		return rc, nil
	default:
	}
	rc := &readConn{pg: !t.sqlite}
	if n := t.reserved.Add(1); int(n) <= cap(t.idle) {
		rc.reserved = true
	} else {
		t.reserved.Add(-1)
	}
	conn, err := t.DB.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, t.readOnlyOn())
		if err != nil {
			conn.Close()
		}
	}
	if err != nil {
		if rc.reserved {
			t.reserved.Add(-1)
		}
		return nil, err
	}
	rc.conn = conn
	if t.sqlite {
		rc.policy = new(Policy)
		if err := install(conn, rc.policy); err != nil {
			t.putConn(rc, true)
			return nil, err
		}
	}
	if rc.reserved && t.sqlite {
		// Prepared once, reused by every call on this connection; if the
		// driver cannot prepare them, plain statements do.
		rc.begin, rc.rollback = rc.prepare(ctx, "BEGIN"), rc.prepare(ctx, "ROLLBACK")
		if rc.begin == nil || rc.rollback == nil {
			rc.closeStmts()
		}
	}
	return rc, nil
}

// readLast runs f on a read-only connection in autocommit mode, each of
// its statements a read of the last commit of its own, on the statements
// the connection keeps prepared (SQLite: capture_text.go reads the rows
// as a write found them, while the write holds the write lock).
func (t *Pool) readLast(ctx context.Context, f func(q rowQuerier) error) error {
	rc, err := t.readConn(ctx)
	if err != nil {
		return err
	}
	rc.policy.SetMode(ModeRead)
	err = f(rc)
	rc.closeLent()
	rc.policy.SetMode(ModeOwn)
	t.putConn(rc, err != nil)
	return err
}

// EndRead ends a read transaction with ROLLBACK, so nothing the call did
// is kept, and puts its connection back. The results the handler left
// open are closed first, so that no statement of the handler's runs in
// the authorizer's ModeOwn. A connection whose ROLLBACK fails (its
// transaction was ended some other way), or whose call the caller calls
// suspect (a statement refused, a broken connection), is closed rather
// than reused; so is one the handler prepared statements on (see
// readConn.PrepareContext), without a ROLLBACK and from a goroutine of its
// own, since closing it waits for rows of those statements the handler
// left open. It returns
// how many rows of its queries the handler left open (EndRead closed
// them).
func (t *Pool) EndRead(r ReadTx, suspect bool) (open int) {
	rc := r.rc
	open = rc.closeLent()
	rc.policy.SetMode(ModeOwn)
	if rc.prepared {
		// Closing the connection ends the transaction too; a ROLLBACK
		// might have to wait for those rows as well (PostgreSQL's).
		go t.putConn(rc, true)
		return open
	}
	err := rc.exec(rc.rollback, "ROLLBACK")
	t.putConn(rc, err != nil || suspect)
	return open
}

// putConn keeps a reserved connection for the next read, or hands a
// connection back to the host with writes allowed again. A connection that
// failed or cannot be reset is discarded, never handed back read-only.
func (t *Pool) putConn(rc *readConn, failed bool) {
	if rc.reserved && !failed && park(t, t.idle, rc) {
		return
	}
	if rc.reserved {
		t.reserved.Add(-1)
	}
	t.release(rc, failed)
}

// park keeps v, a reserved connection, in idle for the next call, and
// reports whether there was room and the pool is open.
func park[T any](t *Pool, idle chan T, v T) bool {
	if t.closed.Load() {
		return false
	}
	select {
	case idle <- v:
		if t.closed.Load() { // raced with close: drain it ourselves
			t.drain()
		}
		return true
	default:
		return false
	}
}

// release hands a connection back to the database's pool, writable and
// without the registry's authorizer.
func (t *Pool) release(rc *readConn, failed bool) {
	rc.closeStmts() // begin and rollback are the driver's: database/sql would not close them
	if failed {
		discard(rc.conn)
		return
	}
	_, err := rc.conn.ExecContext(context.Background(), t.readOnlyOff())
	if err == nil && rc.policy != nil {
		err = uninstall(rc.conn)
	}
	if err != nil {
		discard(rc.conn)
		return
	}
	rc.conn.Close()
}

// readOnlyOn is the statement that makes a connection read-only, and
// readOnlyOff the one that undoes it: SQLite's query_only pragma, or
// PostgreSQL's default for the session's transactions (RESET restores
// what the host's DSN set).
func (t *Pool) readOnlyOn() string {
	if t.sqlite {
		return "PRAGMA query_only = 1"
	}
	return t.pgReadOn() // pgsession.go
}

func (t *Pool) readOnlyOff() string {
	if t.sqlite {
		return "PRAGMA query_only = 0"
	}
	return t.pgReadOff() // pgsession.go
}
