package llmtool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// ErrTxDone is returned when a handler's context or transaction is used after
// the handler returned, for instance from a goroutine it started. It is
// sql.ErrTxDone, so errors.Is matches it whichever layer reports it. The
// registry logs each such use with the tool's name and counts it (see
// Registry.LateUses).
var ErrTxDone = sql.ErrTxDone

// ReadCtx is what a read tool's handler and every guard get: a
// context.Context for the call, queries in the call's read-only transaction,
// the principal and scope, and progress and log reporting. It has no way to
// write, and the database refuses writes in its transaction too.
//
// A ReadCtx is valid only until the handler returns; then its context is
// cancelled (Done closes, contexts derived from it are cancelled) and its
// queries fail with ErrTxDone. Results (*sql.Rows, *sql.Row) a read tool's
// handler leaves open are closed when it returns.
//
// A handler's SQL may read data and nothing else: statements that would
// change the transaction or the connection (BEGIN, COMMIT, ROLLBACK, a
// PRAGMA that sets a value, ATTACH, ...) are refused with
// ErrStatementRefused, and the call fails.
//
// With SQLite, a read tool's queries run on statements its connection keeps
// prepared, keyed by query text, so a tool's SQL is parsed once per
// connection rather than once per call. Pass values as arguments rather
// than formatting them into the text; a connection keeps at most 64
// statements.
type ReadCtx struct {
	parent context.Context // the caller's context
	call   *callState
	q      querier   // the read connection, or the write transaction
	tx     *sql.Tx   // the write transaction, nil for read tools
	write  *WriteCtx // set for write tools, so guards run in the same transaction
}

// querier is what a read runs on: a *sql.Conn inside BEGIN for read tools, a
// *sql.Tx for write tools.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// WriteCtx is what a write tool's handler gets: everything a ReadCtx offers
// plus Exec, the *sql.Tx and AfterCommit. The handler runs in a write
// transaction, serialized with the registry's other writes, that commits
// when it returns a nil error and rolls back on an error, a panic or a
// cancelled context. Its SQL may change data and schema; statements that
// would change the transaction or the connection are refused as for a
// ReadCtx.
type WriteCtx struct {
	ReadCtx
}

// callState is shared by the contexts of one call.
type callState struct {
	reg  *Registry
	tool *Tool
	// mu orders queries against the end of the call: queries hold it for
	// reading, finish takes it for writing, so no query can start on a
	// connection after it went back to the pool.
	mu          sync.RWMutex
	done        atomic.Bool
	afterCommit []func()
	content     []Content      // parts of a Rich result
	fill        uint64         // top-level defaults to set on In (see compiledSchema.defaults)
	argv        map[string]any // the decoded arguments, when In is flat
	rawTx       atomic.Bool    // the handler took the *sql.Tx (WriteCtx.Tx)
	wtx         *writeTx       // the write transaction, nil for read tools

	// ctxMu guards the call's Done channel and its first refusal.
	ctxMu      sync.Mutex
	doneCh     chan struct{}
	closed     bool
	stopParent func() bool
	refused    error
}

func (c *ReadCtx) late(op string) error {
	c.call.reg.lateUse(c.call.tool.spec.Name, op)
	return fmt.Errorf("llmtool: tool %s: %s after its handler returned (finish all work before returning; start no goroutine that outlives the handler): %w", c.call.tool.spec.Name, op, ErrTxDone)
}

// Query runs a query in the call's transaction.
func (c *ReadCtx) Query(query string, args ...any) (*sql.Rows, error) {
	return c.QueryContext(c.parent, query, args...)
}

// QueryRow runs a query that returns at most one row in the call's
// transaction.
func (c *ReadCtx) QueryRow(query string, args ...any) *sql.Row {
	return c.QueryRowContext(c.parent, query, args...)
}

// QueryContext is Query with an explicit context, so a *ReadCtx satisfies
// the query interfaces of database/sql-style data layers (as *sql.Tx does).
func (c *ReadCtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if !c.call.enter() {
		return nil, c.late("Query")
	}
	defer c.call.mu.RUnlock()
	if err := c.call.check(query); err != nil {
		return nil, err
	}
	return c.q.QueryContext(ctx, query, args...)
}

// enter reports whether the call is still running, holding mu for reading
// if so.
func (cs *callState) enter() bool {
	cs.mu.RLock()
	if cs.done.Load() {
		cs.mu.RUnlock()
		return false
	}
	return true
}

// finish marks the call done; later uses of its contexts fail, and its
// context is cancelled.
func (cs *callState) finish() {
	cs.mu.Lock()
	cs.done.Store(true)
	cs.mu.Unlock()
	cs.closeDone()
}

// QueryRowContext is QueryRow with an explicit context. After the handler
// returned, the row's Scan reports ErrTxDone.
func (c *ReadCtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if !c.call.enter() {
		return c.call.reg.tx.errRow.row(c.late("QueryRow"))
	}
	defer c.call.mu.RUnlock()
	if err := c.call.check(query); err != nil {
		return c.call.reg.tx.errRow.row(err)
	}
	return c.q.QueryRowContext(ctx, query, args...)
}

// ToolName returns the name of the tool being called.
func (c *ReadCtx) ToolName() string { return c.call.tool.spec.Name }

// Principal returns the authenticated user the call runs as, or nil.
func (c *ReadCtx) Principal() *Principal { return PrincipalFrom(c.parent) }

// Scope returns the scope (tenant, workspace, chat) the call runs in.
func (c *ReadCtx) Scope() string { return ScopeFrom(c.parent) }

// Logger returns the registry's logger with the tool's name attached.
func (c *ReadCtx) Logger() *slog.Logger {
	return c.call.reg.logger().With("tool", c.call.tool.spec.Name)
}

// Progress reports progress to the client, if it asked for it: done of
// total units (total 0 if unknown), with an optional message. Over MCP it
// becomes notifications/progress; elsewhere it goes to the Reporter in the
// call's context, if any.
func (c *ReadCtx) Progress(done, total float64, message string) {
	if r := reporterFrom(c.parent); r != nil {
		r.Progress(c.parent, done, total, message)
	}
}

// Log sends a log message to the client (MCP notifications/message, subject
// to the client's logging level) and to the registry's logger.
func (c *ReadCtx) Log(level slog.Level, message string) {
	c.Logger().Log(c.parent, level, message)
	if r := reporterFrom(c.parent); r != nil {
		r.Log(c.parent, level, message)
	}
}

// Exec runs a statement in the call's write transaction.
func (c *WriteCtx) Exec(query string, args ...any) (sql.Result, error) {
	return c.ExecContext(c.parent, query, args...)
}

// ExecContext is Exec with an explicit context, so a *WriteCtx satisfies the
// DBTX-style interfaces of generated data layers.
func (c *WriteCtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if !c.call.enter() {
		return nil, c.late("Exec")
	}
	defer c.call.mu.RUnlock()
	if err := c.call.check(query); err != nil {
		return nil, err
	}
	return c.tx.ExecContext(ctx, query, args...)
}

// Tx returns the call's write transaction, for code that insists on a
// *sql.Tx. Prefer passing c itself: a *WriteCtx has ExecContext,
// QueryContext and QueryRowContext, which is what generated data layers
// (sqlc's New(db DBTX), for instance) ask for, and its statements are
// checked.
//
// Statements run on the *sql.Tx directly are not checked, so the registry
// treats the connection as changed: after the call it is closed rather
// than handed back to the pool. Never commit or roll the *sql.Tx back: the
// registry does when the handler returns. With SQLite a COMMIT the handler
// runs is turned into a ROLLBACK, and a call whose transaction the handler
// ended fails with nothing saved.
func (c *WriteCtx) Tx() *sql.Tx {
	if c.call.done.Load() {
		_ = c.late("Tx")
		return c.tx
	}
	if !c.call.rawTx.Swap(true) && c.call.wtx != nil {
		c.call.wtx.guard.install(c.call.wtx.conn)
	}
	return c.tx
}

// AfterCommit registers f to run after the transaction commits, in
// registration order. It does not run if the call rolls back. Use it for
// side effects outside the database, such as invalidating a cache.
func (c *WriteCtx) AfterCommit(f func()) {
	if c.call.done.Load() {
		_ = c.late("AfterCommit")
		return
	}
	c.call.afterCommit = append(c.call.afterCommit, f)
}

// prepared is what argument preparation hands to the call.
type prepared struct {
	fill uint64
	argv map[string]any
}

// decodeIn fills in (a pointer to the tool's In) from the call's arguments:
// straight from the decoded object when In is a flat struct of scalars,
// else by decoding the JSON; then sets the missing defaults.
func (cs *callState) decodeIn(args []byte, in any) error {
	schema := cs.tool.in
	if cs.argv == nil || !schema.flat || !schema.fillFlat(in, cs.argv) {
		if err := decodeArgs(args, in); err != nil {
			return err
		}
	}
	schema.setDefaults(in, cs.fill)
	return nil
}

// Reporter receives a handler's progress and log messages. Adapters set one
// per call with WithReporter; MCP turns them into notifications.
type Reporter interface {
	Progress(ctx context.Context, done, total float64, message string)
	Log(ctx context.Context, level slog.Level, message string)
}

type reporterKey struct{}

// WithReporter returns a context whose calls report progress and log
// messages to r.
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

func reporterFrom(ctx context.Context) Reporter {
	r, _ := ctx.Value(reporterKey{}).(Reporter)
	return r
}

// ReporterFrom returns the Reporter in ctx, or nil, so an adapter can chain
// to a reporter the host installed.
func ReporterFrom(ctx context.Context) Reporter { return reporterFrom(ctx) }

// txer begins the transactions of a registry's calls.
type txer struct {
	db      *sql.DB
	sqlite  bool             // enforce read-only with PRAGMA query_only
	dialect sqlcheck.Dialect // the lexical rules for checking handler SQL
	writes  chan struct{}    // one token: writes are serialized per registry
	errRow  errRower         // rows that fail with llmtool's own errors
	checked sqlcheck.Cache   // handler SQL already accepted

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

	mu    sync.Mutex
	call  uint64                 // counts the calls run on this connection
	stmts map[string]*cachedStmt // by query text; nil unless reserved
	lent  []lent                 // results handed out in the current call
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
// keeps no statements, or query is in use in this call (a nested query with
// the same text), or it failed to prepare (running it unprepared reports
// the error). A statement is free once the call that used it ended, because
// endRead closes every result a call left open.
func (rc *readConn) stmt(ctx context.Context, query string) *cachedStmt {
	if !rc.reserved {
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
// it has one, and remembers the rows so endRead can close them.
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

func newTxer(db *sql.DB) *txer {
	t := &txer{db: db, writes: make(chan struct{}, 1)}
	if db != nil {
		t.sqlite = strings.Contains(strings.ToLower(fmt.Sprintf("%T", db.Driver())), "sqlite")
		if !t.sqlite && strings.Contains(strings.ToLower(fmt.Sprintf("%T", db.Driver())), "pgx") {
			t.dialect = sqlcheck.Postgres
		}
		n := maxReservedReads
		if m := db.Stats().MaxOpenConnections; m > 0 {
			n = min(n, (m-1)/2) // leave the host and the writer their connections
		}
		t.idle = make(chan *readConn, max(n, 0))
	}
	return t
}

// readTx is a read-only transaction: for SQLite a plain BEGIN on a
// query_only connection rather than a *sql.Tx, the same snapshot without
// database/sql's per-transaction goroutine.
type readTx struct {
	rc *readConn
	tx *sql.Tx // non-SQLite databases: a read-only *sql.Tx
}

func (r readTx) querier() querier {
	if r.tx != nil {
		return r.tx
	}
	return r.rc
}

// beginRead starts a read-only transaction: a consistent snapshot in which
// the database itself refuses writes.
func (t *txer) beginRead(ctx context.Context) (readTx, error) {
	if !t.sqlite {
		tx, err := t.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		return readTx{tx: tx}, err
	}
	rc, err := t.readConn(ctx)
	if err != nil {
		return readTx{}, err
	}
	// A deferred BEGIN takes no lock and cannot wait, so it runs without
	// the caller's context: under a cancellable context the driver would
	// start a watcher goroutine for this one statement.
	if err := rc.exec(rc.begin, "BEGIN"); err != nil {
		t.putConn(rc, true)
		return readTx{}, err
	}
	return readTx{rc: rc}, nil
}

// readConn returns a connection in query_only mode: a reserved idle one, a
// newly reserved one while fewer than cap(t.idle) exist, or else a pooled
// one with query_only set for this call only.
func (t *txer) readConn(ctx context.Context) (*readConn, error) {
	select {
	case rc := <-t.idle:
		return rc, nil
	default:
	}
	rc := &readConn{}
	if n := t.reserved.Add(1); int(n) <= cap(t.idle) {
		rc.reserved = true
	} else {
		t.reserved.Add(-1)
	}
	conn, err := t.db.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, "PRAGMA query_only = 1")
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
	if rc.reserved {
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

// endRead ends a read transaction with ROLLBACK, so nothing the call did
// is kept, and puts its connection back. A connection whose ROLLBACK
// fails (its transaction was ended some other way), or whose call had a
// statement refused, is closed rather than reused. It returns how many
// rows the handler left open (endRead closed them).
func (t *txer) endRead(r readTx, suspect bool) (open int) {
	if r.tx != nil {
		_ = r.tx.Rollback()
		return 0
	}
	open = r.rc.closeLent()
	err := r.rc.exec(r.rc.rollback, "ROLLBACK")
	t.putConn(r.rc, err != nil || suspect)
	return open
}

// putConn keeps a reserved connection for the next read, or hands a
// connection back to the host with writes allowed again. A connection that
// failed or cannot be reset is discarded, never handed back read-only.
func (t *txer) putConn(rc *readConn, failed bool) {
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
func (t *txer) release(rc *readConn, failed bool) {
	rc.closeStmts()
	if _, err := rc.conn.ExecContext(context.Background(), "PRAGMA query_only = 0"); err != nil || failed {
		_ = rc.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	rc.conn.Close()
}

// close hands the reserved connections back to the host's pool.
func (t *txer) close() {
	t.closed.Store(true)
	t.drain()
}

func (t *txer) drain() {
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

// writeTx is a write transaction on a connection the call holds, so the
// registry can close the connection rather than hand it back when the
// handler may have changed it.
type writeTx struct {
	conn  *sql.Conn
	tx    *sql.Tx
	guard commitGuard
}

// beginWrite waits for the registry's write token, then starts a write
// transaction. For SQLite, open the database with _txlock=immediate (as
// OpenSQLite does) so the transaction takes the write lock at BEGIN.
func (t *txer) beginWrite(ctx context.Context) (*writeTx, error) {
	select {
	case t.writes <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	conn, err := t.db.Conn(ctx)
	if err != nil {
		<-t.writes
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		<-t.writes
		return nil, err
	}
	return &writeTx{conn: conn, tx: tx}, nil
}

// endWrite hands the connection back, or closes it if the handler took the
// *sql.Tx or had a statement refused, and releases the write token.
func (t *txer) endWrite(w *writeTx, suspect bool) {
	if suspect {
		discard(w.conn)
	} else {
		w.conn.Close()
	}
	<-t.writes
}

// OpenSQLite opens the SQLite file at path with the settings llmtool's
// transactions expect: WAL (readers run beside the writer), a busy timeout,
// foreign keys on, and BEGIN IMMEDIATE for write transactions. driverName
// is the name the SQLite driver registered ("sqlite" for
// modernc.org/sqlite, which the host imports). Use it when the host has no
// setup of its own.
func OpenSQLite(driverName, path string) (*sql.DB, error) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	dsn := "file:" + path + sep + "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("llmtool: open %s: %w", path, err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("llmtool: open %s: %w", path, err)
	}
	return db, nil
}

// Close hands the read connections the registry reserved back to the
// database's pool, in their normal writable state. It does not close the
// database, which belongs to the host. Calls made after Close still work,
// without reserved connections.
func (r *Registry) Close() error {
	r.tx.close()
	return nil
}

// exec runs a prepared call in its transaction.
func (r *Registry) exec(ctx context.Context, t *Tool, args []byte, pa prepared, res *Result) (out []byte, committed bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if r.tx.db == nil {
		return nil, false, errors.New("llmtool: the registry has no database; pass the host's *sql.DB to NewRegistry to run tools")
	}
	if t.spec.ReadOnly {
		rt, err := r.tx.beginRead(ctx)
		if err != nil {
			return nil, false, beginErr(ctx, err)
		}
		// One allocation for the call's state and its context.
		rc := &struct {
			cs callState
			c  ReadCtx
		}{cs: callState{reg: r, tool: t, fill: pa.fill, argv: pa.argv}}
		cs, c := &rc.cs, &rc.c
		*c = ReadCtx{parent: ctx, call: cs, q: rt.querier()}
		out, err = r.run(t, c, args)
		if refused := cs.refusal(); refused != nil {
			err = refused
		} else if err == nil {
			err = ctx.Err()
		} else if readOnlyErr(err) {
			err = fmt.Errorf("llmtool: tool %s is a read tool, so the database refuses its writes; declare it with llmtool.Write to change data: %w", t.spec.Name, err)
		}
		cs.finish()
		if open := r.tx.endRead(rt, cs.refusal() != nil); open > 0 {
			r.logger().Warn("llmtool: read tool returned with query rows open; llmtool closed them (close rows before returning, or defer rows.Close())", "tool", t.spec.Name, "rows", open)
		}
		if err != nil {
			return nil, false, err
		}
		res.Content = cs.content
		return out, false, nil
	}
	cs := &callState{reg: r, tool: t, fill: pa.fill, argv: pa.argv}
	wt, err := r.tx.beginWrite(ctx)
	if err != nil {
		return nil, false, beginErr(ctx, err)
	}
	cs.wtx = wt
	tx := wt.tx
	defer func() { r.tx.endWrite(wt, cs.rawTx.Load() || cs.refusal() != nil) }()
	w := &WriteCtx{ReadCtx{parent: ctx, call: cs, q: tx, tx: tx}}
	w.write = w
	out, err = r.run(t, &w.ReadCtx, args)
	if refused := cs.refusal(); refused != nil {
		err = refused
	} else if err == nil {
		err = ctx.Err() // cancelled while the handler ran: roll back
	}
	cs.finish()
	if err != nil {
		if rbErr := tx.Rollback(); errors.Is(rbErr, sql.ErrTxDone) && cs.rawTx.Load() {
			r.logger().Error("llmtool: write tool ended its transaction itself; return an error to roll back, and let the registry commit", "tool", t.spec.Name)
		}
		return nil, false, err
	}
	wt.guard.allow.Store(true)
	if err := tx.Commit(); err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		if cs.rawTx.Load() {
			// The handler committed or rolled back through WriteCtx.Tx, or
			// ran transaction control on it; with SQLite's commit hook in
			// place its COMMIT became a ROLLBACK.
			return nil, false, fmt.Errorf("%w (tool %s called Commit or Rollback on WriteCtx.Tx, or ran transaction control on it; return an error to roll back, and let the registry commit): %w", errTxEnded, t.spec.Name, err)
		}
		return nil, false, fmt.Errorf("llmtool: commit: %w", err)
	}
	for _, f := range cs.afterCommit {
		r.afterCommit(t.spec.Name, f)
	}
	res.Content = cs.content
	return out, true, nil
}

// readOnlyErr reports whether err is the database refusing a write in a
// read-only transaction: SQLITE_READONLY from any driver that reports
// SQLite's result code, or its message.
func readOnlyErr(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) && coded.Code()&0xff == 8 { // SQLITE_READONLY
		return true
	}
	return strings.Contains(err.Error(), "readonly database")
}

func beginErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("llmtool: begin transaction: %w", err)
}

func (r *Registry) afterCommit(tool string, f func()) {
	defer func() {
		if p := recover(); p != nil {
			r.logger().Error("llmtool: after-commit hook panicked", "tool", tool, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	f()
}
