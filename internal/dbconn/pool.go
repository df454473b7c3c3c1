// Package dbconn holds the connections under a registry's calls: the read
// connections it reserves in query_only mode with their statement cache,
// read snapshots (BEGIN ... ROLLBACK), the write token that serializes
// writes, the write transaction on a held connection, and the commit
// guard that keeps a handler from committing its own transaction.
//
// On SQLite, reads run on reserved query_only connections and writes are
// serialized by a token, as SQLite allows one writer. On PostgreSQL, reads
// run on reserved connections whose transactions are read-only by default
// (default_transaction_read_only), in REPEATABLE READ transactions, or in
// autocommit for a call known to run one statement; writes run in
// SERIALIZABLE transactions, concurrently, with no process-wide token: the
// server decides, and the registry retries a write that lost a race.
package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
	"sync/atomic"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// Querier is what a call's reads run on: a reserved connection inside
// BEGIN for read tools, a *sql.Tx for write tools.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Pool begins the transactions of a registry's calls.
type Pool struct {
	DB      *sql.DB          // the host's database
	Engine  engine.Engine    // the database's engine
	Dialect sqlcheck.Dialect // the lexical rules for checking handler SQL
	ErrRow  ErrRower         // rows that fail with llmtool's own errors
	Checked sqlcheck.Cache   // handler SQL already accepted
	sqlite  bool             // enforce read-only with PRAGMA query_only
	Role    string           // PostgreSQL: the role handler SQL runs as (Options.Role, pgsession.go)

	// Interrupter, when set (SQLite only), lets a read call watch its
	// context with one hook rather than a watcher per statement (see
	// Interrupter). Set it before the first call.
	Interrupter Interrupter
	writes      chan struct{} // one token: writes are serialized per registry

	// Read connections reserved from db and kept in query_only mode, with
	// BEGIN and ROLLBACK prepared once, so a read call costs neither PRAGMA
	// statements nor parsing. At most cap(idle) are reserved; none when the
	// host limits db to very few connections.
	idle     chan *readConn
	reserved atomic.Int32
	closed   atomic.Bool
}

// readConn is a connection in query_only mode. begin and rollback are
// prepared on reserved connections and nil on one borrowed for one call.
//
// A reserved connection also keeps the statements its calls run, prepared
// (see stmt), so a tool's query is parsed and planned once per connection
// rather than once per call. A read call has the connection to itself, but
// its handler may query from several goroutines before it returns, so mu
// guards the bookkeeping.
type readConn struct {
	conn            *sql.Conn
	begin, rollback driver.StmtExecContext // prepared on the driver's connection
	reserved        bool                   // stays query_only and goes back to t.idle
	pg              bool                   // PostgreSQL: read-only by default_transaction_read_only

	hook      hook            // the call's cancellation hook (see Interrupter)
	rows      *ErrRower       // makes the *sql.Row of a query run directly (direct.go)
	rowc      *sql.Conn       // rows' connection for this one, under mu
	dq        directQuery     // the direct query running, under mu
	runDirect func(any) error // rc.direct, made once
	reps      []*replayed     // replayed rows kept for reuse, under mu
	nrep      int             // how many of reps the current call uses
	// lastQuery's entry was the last that directStmt found, under mu;
	// forgotten when a statement is closed.
	lastQuery  string
	lastDirect *cachedStmt
	nv         [maxDirectArgs]driver.NamedValue // a direct query's arguments, under mu

	mu    sync.Mutex
	call  uint64                 // counts the calls run on this connection
	stmts map[string]*cachedStmt // by query text; nil unless reserved
	lent  []lent                 // results handed out in the current call
}

// cachedStmt is a statement prepared on a reserved read connection.
type cachedStmt struct {
	st   *sql.Stmt // nil until a Query or a QueryRow off the direct path needs it
	call uint64    // the call it was last lent to
	rows *sql.Rows // lent as rows in that call: free again once they close

	// The statement on the driver's connection that QueryRow runs
	// directly (direct.go), nil until then; numInput is its
	// NumInput. noDirect: the driver cannot run it directly.
	ds       driver.StmtQueryContext
	numInput int
	noDirect bool
}

// lent is a query result handed to a handler, closed when the call ends if
// the handler left it open, so no statement outlives its call.
type lent struct {
	rows *sql.Rows
	row  *sql.Row
	rep  *replayed // row's replayed rows, when it ran directly
}

// maxCachedStmts bounds the statements a reserved read connection keeps.
const maxCachedStmts = 64

// stmt returns a prepared statement for query that no open result of the
// current call is using, preparing it on first use, or nil: the connection
// keeps no statements (PostgreSQL's driver keeps its own), or query is in use in this call (a nested query with
// the same text), or it failed to prepare (running it unprepared reports
// the error). A statement is free once the call that used it ended, because
// EndRead closes every result a call left open.
func (rc *readConn) stmt(ctx context.Context, query string) *cachedStmt {
	if !rc.reserved || rc.pg {
		return nil
	}
	s := rc.stmts[query]
	switch {
	case s == nil || s.st == nil:
		if s == nil && len(rc.stmts) >= maxCachedStmts && !rc.evict() {
			return nil
		}
		st, err := rc.conn.PrepareContext(ctx, query)
		if err != nil {
			return nil
		}
		if s == nil {
			s = &cachedStmt{numInput: -1}
			if rc.stmts == nil {
				rc.stmts = make(map[string]*cachedStmt)
			}
			rc.stmts[query] = s
		}
		s.st = st
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
			rc.closeStmt(s)
			delete(rc.stmts, q)
			return true
		}
	}
	return false
}

// closeStmt closes s's statements.
func (rc *readConn) closeStmt(s *cachedStmt) {
	rc.lastQuery, rc.lastDirect = "", nil
	if s.st != nil {
		s.st.Close()
	}
	if s.ds != nil {
		_ = rc.conn.Raw(func(any) error { return s.ds.(driver.Stmt).Close() })
	}
}

// QueryContext runs query on the connection, on its prepared statement when
// it has one, and remembers the rows so EndRead can close them.
func (rc *readConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	sctx, err := rc.hook.ctx(ctx)
	if err != nil {
		return nil, err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var rows *sql.Rows
	if s := rc.stmt(sctx, query); s != nil {
		rows, err = s.st.QueryContext(sctx, args...)
		s.rows = rows
	} else {
		rows, err = rc.conn.QueryContext(sctx, query, args...)
	}
	if rows != nil {
		rc.lent = append(rc.lent, lent{rows: rows})
	}
	if err != nil && sctx != ctx && ctx.Err() != nil {
		err = ctx.Err() // interrupted by the hook
	}
	return rows, err
}

// QueryRowContext is QueryContext for at most one row.
func (rc *readConn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	sctx, err := rc.hook.ctx(ctx)
	if err != nil {
		// A done context makes database/sql's row fail with its error.
		return rc.conn.QueryRowContext(ctx, query, args...)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if row, rep := rc.queryRowDirect(sctx, query, args); row != nil {
		rc.lent = append(rc.lent, lent{row: row, rep: rep})
		return row
	}
	var row *sql.Row
	if s := rc.stmt(sctx, query); s != nil {
		row = s.st.QueryRowContext(sctx, args...)
	} else {
		row = rc.conn.QueryRowContext(sctx, query, args...)
	}
	rc.lent = append(rc.lent, lent{row: row})
	return row
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
		} else if l.rep == nil || !l.rep.closed {
			_ = l.row.Scan()
		}
		rc.lent[i] = lent{}
	}
	rc.lent = rc.lent[:0]
	rc.nrep = 0
	if cap(rc.lent) > 256 { // one call ran many queries; do not keep its array
		rc.lent = nil
	}
	rc.call++
	return open
}

// exec runs a prepared statement on the driver's connection directly, or
// query when there is none.
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

// maxReservedReads bounds the read connections a registry keeps. Reads
// beyond it borrow a pooled connection for the call.
const maxReservedReads = 4

// New returns the pool for db's calls. It reserves no connection until the
// first read; a nil db gives a pool that runs nothing (lint-only
// registries).
func New(db *sql.DB, e engine.Engine) *Pool {
	t := &Pool{DB: db, Engine: e, writes: make(chan struct{}, 1)}
	if db != nil {
		t.sqlite = e == engine.SQLite
		if e == engine.Postgres {
			t.Dialect = sqlcheck.Postgres
		}
		n := maxReservedReads
		if m := db.Stats().MaxOpenConnections; m > 0 {
			n = min(n, (m-1)/2) // leave the host and the writer their connections
		}
		t.idle = make(chan *readConn, max(n, 0))
	}
	return t
}

// ReadTx is a read-only transaction: for SQLite a plain BEGIN on a
// query_only connection rather than a *sql.Tx, the same snapshot without
// database/sql's per-transaction goroutine.
type ReadTx struct {
	rc *readConn
	// single: a call that runs one statement, in autocommit on a
	// read-only connection; no BEGIN and no ROLLBACK, since one statement
	// sees one snapshot.
	single bool
}

func (r ReadTx) Querier() Querier { return r.rc }

// BeginRead starts a read-only transaction: a consistent snapshot in which
// the database itself refuses writes. Single asks for a call that runs
// one statement: it runs in autocommit on the read-only connection, which
// saves BEGIN and ROLLBACK (on PostgreSQL two round trips); the caller
// makes sure the call runs no second statement.
func (t *Pool) BeginRead(ctx context.Context, single bool) (ReadTx, error) {
	rc, err := t.readConn(ctx)
	if err != nil {
		return ReadTx{}, err
	}
	rc.hook.arm(ctx)
	if single {
		return ReadTx{rc: rc, single: true}, nil
	}
	if !t.sqlite {
		if _, err := rc.conn.ExecContext(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
			rc.hook.disarm()
			t.putConn(rc, true)
			return ReadTx{}, err
		}
		return ReadTx{rc: rc}, nil
	}
	// A deferred BEGIN takes no lock and cannot wait, so it runs without
	// the caller's context: under a cancellable context the driver would
	// start a watcher goroutine for this one statement.
	if err := rc.exec(rc.begin, "BEGIN"); err != nil {
		rc.hook.disarm()
		t.putConn(rc, true)
		return ReadTx{}, err
	}
	return ReadTx{rc: rc}, nil
}

// readConn returns a connection in query_only mode: a reserved idle one, a
// newly reserved one while fewer than cap(t.idle) exist, or else a pooled
// one with query_only set for this call only.
func (t *Pool) readConn(ctx context.Context) (*readConn, error) {
	select {
	case rc := <-t.idle:
		return rc, nil
	default:
	}
	rc := &readConn{pg: !t.sqlite, rows: &t.ErrRow}
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
	if t.sqlite && t.Interrupter != nil {
		_ = conn.Raw(func(dc any) error {
			rc.hook.interrupt = t.Interrupter(dc)
			return nil
		})
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

func (rc *readConn) closeStmts() {
	if rc.rowc != nil {
		rc.rowc.Close()
		rc.rowc = nil
	}
	for q, s := range rc.stmts {
		rc.closeStmt(s)
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

// EndRead ends a read transaction with ROLLBACK, so nothing the call did
// is kept, and puts its connection back. A connection whose ROLLBACK
// fails (its transaction was ended some other way), or whose call had a
// statement refused, is closed rather than reused. It returns how many
// rows the handler left open (EndRead closed them), and whether the
// call's cancellation hook interrupted the connection (see Interrupter):
// then a statement may have failed with the driver's interruption error
// rather than the context's.
func (t *Pool) EndRead(r ReadTx, suspect bool) (open int, interrupted bool) {
	interrupted = r.rc.hook.disarm()
	open = r.rc.closeLent()
	if r.single {
		t.putConn(r.rc, suspect)
		return open, interrupted
	}
	err := r.rc.exec(r.rc.rollback, "ROLLBACK")
	t.putConn(r.rc, err != nil || suspect)
	return open, interrupted
}

// putConn keeps a reserved connection for the next read, or hands a
// connection back to the host with writes allowed again. A connection that
// failed or cannot be reset is discarded, never handed back read-only.
func (t *Pool) putConn(rc *readConn, failed bool) {
	if rc.reserved && !failed && !t.closed.Load() {
		select {
		case t.idle <- rc:
			if t.closed.Load() { // raced with close: drain it ourselves
				t.drain()
			}
			return
		default:
		}
	}
	if rc.reserved {
		t.reserved.Add(-1)
	}
	t.release(rc, failed)
}

// release hands a connection back to the database's pool, writable.
func (t *Pool) release(rc *readConn, failed bool) {
	rc.closeStmts()
	if _, err := rc.conn.ExecContext(context.Background(), t.readOnlyOff()); err != nil || failed {
		_ = rc.conn.Raw(func(any) error { return driver.ErrBadConn })
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

// close hands the reserved connections back to the host's pool.
func (t *Pool) Close() {
	t.closed.Store(true)
	t.drain()
	t.ErrRow.Close()
}

func (t *Pool) drain() {
	for {
		select {
		case rc := <-t.idle:
			t.reserved.Add(-1)
			t.release(rc, false)
		default:
			return
		}
	}
}

// WriteTx is a write transaction on a connection the call holds, so the
// registry can close the connection rather than hand it back when the
// handler may have changed it.
type WriteTx struct {
	Conn  *sql.Conn
	Tx    *sql.Tx
	Guard CommitGuard
}

// BeginWrite starts a write transaction. On SQLite it first waits for the
// registry's write token; open the database with _txlock=immediate (as
// sqlite.Open does) so the transaction takes the write lock at BEGIN. On
// PostgreSQL the transaction is SERIALIZABLE: the server lets writes run
// side by side and fails one that could not have run alone (40001), which
// the registry retries.
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
	conn, err := t.DB.Conn(ctx)
	if err != nil {
		t.releaseToken()
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		conn.Close()
		t.releaseToken()
		return nil, err
	}
	return &WriteTx{Conn: conn, Tx: tx}, nil
}

// releaseToken gives the write token back (SQLite).
func (t *Pool) releaseToken() {
	if t.sqlite {
		<-t.writes
	}
}

// EndWrite hands the connection back, or closes it if the handler took the
// *sql.Tx or had a statement refused, and releases the write token.
func (t *Pool) EndWrite(w *WriteTx, suspect bool) {
	if suspect {
		discard(w.Conn)
	} else {
		w.Conn.Close()
	}
	t.releaseToken()
}

// discard closes conn's physical connection instead of handing it back to
// the pool: its state may differ from what the registry set.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}
