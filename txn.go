package llmtool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
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
// A ReadCtx is valid only until the handler returns; afterwards its context
// is cancelled and its queries fail with ErrTxDone.
type ReadCtx struct {
	context.Context
	call  *callState
	tx    *sql.Tx
	write *WriteCtx // set for write tools, so guards run in the same transaction
}

// WriteCtx is what a write tool's handler gets: everything a ReadCtx offers
// plus Exec, the *sql.Tx and AfterCommit. The handler runs in a write
// transaction, serialized with the registry's other writes, that commits
// when it returns a nil error and rolls back on an error, a panic or a
// cancelled context.
type WriteCtx struct {
	ReadCtx
}

// callState is shared by the contexts of one call.
type callState struct {
	reg         *Registry
	tool        *Tool
	done        atomic.Bool
	afterCommit []func()
	content     []Content // parts of a Rich result
}

func (c *ReadCtx) late(op string) error {
	c.call.reg.lateUse(c.call.tool.spec.Name, op)
	return fmt.Errorf("llmtool: tool %s: %s after its handler returned (finish all work before returning; start no goroutine that outlives the handler): %w", c.call.tool.spec.Name, op, ErrTxDone)
}

// Query runs a query in the call's transaction.
func (c *ReadCtx) Query(query string, args ...any) (*sql.Rows, error) {
	return c.QueryContext(c.Context, query, args...)
}

// QueryRow runs a query that returns at most one row in the call's
// transaction.
func (c *ReadCtx) QueryRow(query string, args ...any) *sql.Row {
	return c.QueryRowContext(c.Context, query, args...)
}

// QueryContext is Query with an explicit context, so a *ReadCtx satisfies
// the query interfaces of database/sql-style data layers (as *sql.Tx does).
func (c *ReadCtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if c.call.done.Load() {
		return nil, c.late("Query")
	}
	return c.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext is QueryRow with an explicit context. After the handler
// returned, the row's Scan reports ErrTxDone.
func (c *ReadCtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if c.call.done.Load() {
		_ = c.late("QueryRow")
	}
	return c.tx.QueryRowContext(ctx, query, args...)
}

// ToolName returns the name of the tool being called.
func (c *ReadCtx) ToolName() string { return c.call.tool.spec.Name }

// Principal returns the authenticated user the call runs as, or nil.
func (c *ReadCtx) Principal() *Principal { return PrincipalFrom(c.Context) }

// Scope returns the scope (tenant, workspace, chat) the call runs in.
func (c *ReadCtx) Scope() string { return ScopeFrom(c.Context) }

// Logger returns the registry's logger with the tool's name attached.
func (c *ReadCtx) Logger() *slog.Logger {
	return c.call.reg.logger().With("tool", c.call.tool.spec.Name)
}

// Progress reports progress to the client, if it asked for it: done of
// total units (total 0 if unknown), with an optional message. Over MCP it
// becomes notifications/progress; elsewhere it goes to the Reporter in the
// call's context, if any.
func (c *ReadCtx) Progress(done, total float64, message string) {
	if r := reporterFrom(c.Context); r != nil {
		r.Progress(c.Context, done, total, message)
	}
}

// Log sends a log message to the client (MCP notifications/message, subject
// to the client's logging level) and to the registry's logger.
func (c *ReadCtx) Log(level slog.Level, message string) {
	c.Logger().Log(c.Context, level, message)
	if r := reporterFrom(c.Context); r != nil {
		r.Log(c.Context, level, message)
	}
}

// Exec runs a statement in the call's write transaction.
func (c *WriteCtx) Exec(query string, args ...any) (sql.Result, error) {
	return c.ExecContext(c.Context, query, args...)
}

// ExecContext is Exec with an explicit context, so a *WriteCtx satisfies the
// DBTX-style interfaces of generated data layers.
func (c *WriteCtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if c.call.done.Load() {
		return nil, c.late("Exec")
	}
	return c.tx.ExecContext(ctx, query, args...)
}

// Tx returns the call's write transaction, for code that wants a *sql.Tx
// (sqlc's New(tx), for instance). Do not commit or roll it back: the
// registry does, when the handler returns.
func (c *WriteCtx) Tx() *sql.Tx {
	if c.call.done.Load() {
		_ = c.late("Tx")
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

// txer begins the transactions of a registry's calls.
type txer struct {
	db     *sql.DB
	sqlite bool          // enforce read-only with PRAGMA query_only
	writes chan struct{} // one token: writes are serialized per registry
}

func newTxer(db *sql.DB) *txer {
	t := &txer{db: db, writes: make(chan struct{}, 1)}
	if db != nil {
		t.sqlite = strings.Contains(strings.ToLower(fmt.Sprintf("%T", db.Driver())), "sqlite")
	}
	return t
}

// readTx is a read-only transaction and, for SQLite, the connection whose
// query_only flag it set.
type readTx struct {
	conn *sql.Conn
	tx   *sql.Tx
}

// beginRead starts a read-only transaction: a consistent snapshot in which
// the database itself refuses writes.
func (t *txer) beginRead(ctx context.Context) (readTx, error) {
	if !t.sqlite {
		tx, err := t.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		return readTx{tx: tx}, err
	}
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return readTx{}, err
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		conn.Close()
		return readTx{}, err
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.release(conn)
		return readTx{}, err
	}
	return readTx{conn: conn, tx: tx}, nil
}

// endRead rolls back a read transaction and hands its connection back to
// the pool with writes allowed again.
func (t *txer) endRead(r readTx) {
	_ = r.tx.Rollback()
	if r.conn != nil {
		t.release(r.conn)
	}
}

// release resets query_only; a connection that cannot be reset is
// discarded, never handed back read-only to the host.
func (t *txer) release(conn *sql.Conn) {
	if _, err := conn.ExecContext(context.Background(), "PRAGMA query_only = 0"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	conn.Close()
}

// beginWrite waits for the registry's write token, then starts a write
// transaction. For SQLite, open the database with _txlock=immediate (as
// OpenSQLite does) so the transaction takes the write lock at BEGIN.
func (t *txer) beginWrite(ctx context.Context) (*sql.Tx, error) {
	select {
	case t.writes <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		<-t.writes
		return nil, err
	}
	return tx, nil
}

func (t *txer) endWrite() { <-t.writes }

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
