package llmtool

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/callinfo"
	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/engine"
)

// ReadCtx is what a read tool's handler and every guard get: a
// context.Context for the call, queries in the call's read-only transaction,
// the principal and tenant, and progress and log reporting. It has no way to
// write, and the database refuses writes in its transaction too.
//
// A read call runs its guards and handler once, in one read-only
// transaction: every query sees the same snapshot. A ReadCtx is valid only
// until the handler returns; then its context is cancelled (Done closes,
// contexts derived from it are cancelled) and its queries fail with
// sql.ErrTxDone. Results (*sql.Rows, *sql.Row) a read tool's handler leaves
// open are closed when it returns.
//
// A handler's SQL may read data and nothing else: statements that would
// change the transaction or the connection (BEGIN, COMMIT, ROLLBACK, a
// PRAGMA that sets a value, ATTACH, ...) are refused with
// ErrStatementRefused, and the call fails. So are statements, in any tool,
// that change llmtool's own tables (llmtool_*: tenant settings, used
// approvals, the audit). On SQLite the engine refuses them, operation by
// operation, as it compiles each statement (llmtool installs an authorizer
// on the connections it runs calls on), and a tool may not read those
// tables either, nor use sqlite_dbpage or the temp schema, nor run a
// pragma other than those that only read whatever their argument
// (table_info, index_list, ...). On PostgreSQL llmtool reads each
// statement's text; keep a tool module you do not trust from creating
// functions that build SQL, or take the privilege to write those tables
// from the role it runs as.
//
// With SQLite, a read tool's queries run on statements its connection keeps
// prepared, keyed by query text, so a tool's SQL is parsed once per
// connection rather than once per call. Pass values as arguments rather
// than formatting them into the text; a connection keeps at most 64
// statements.
type ReadCtx struct {
	parent context.Context // the caller's context
	call   *callState
	q      dbconn.Querier // the read connection inside BEGIN, or the write transaction
	tx     *sql.Tx        // the write transaction, nil for read tools
	write  *WriteCtx      // set for write tools, so guards run in the same transaction
}

// WriteCtx is what a write tool's handler gets: everything a ReadCtx offers
// plus Exec and AfterCommit. The handler runs in a write transaction that
// commits when it returns a nil error and rolls back on an error, a panic
// or a cancelled context. On SQLite the registry's writes run one at a
// time; on PostgreSQL they run side by side in SERIALIZABLE transactions.
// A run that lost to other writes (a serialization failure, a deadlock, or
// SQLite's write lock held by another process) rolls back and runs again,
// until the call's deadline (see Write). Its SQL may change data
// and schema; statements that would change the transaction or the
// connection are refused as for a ReadCtx.
//
// A *WriteCtx has ExecContext, PrepareContext, QueryContext and
// QueryRowContext, the methods generated data layers ask of a database
// handle (sqlc's DBTX), so pass c itself where they want one: New(c).
// There is no *sql.Tx to take: every statement of the call goes through
// c, where it is checked.
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
	mu   sync.RWMutex
	done atomic.Bool
	// The flags stand together, packed: a read call's state and context
	// are one allocation (execRead), which padding would move up a size
	// class.
	returned     bool // the write handler returned nil: what fails after it is llmtool's own statements
	traced       bool // the call's span is recording: guards and handler get child spans (telemetry.go)
	exact        bool // read the capture whatever the statements named (changesets.go)
	afterCommit  []func()
	content      []Content       // parts of a Rich result
	preview      *previewState   // counts changed rows when the call previews (approval.go)
	summary      string          // WriteCtx.Describe
	out          []byte          // the handler's output, once it returned (a write's before-commit hooks)
	fill         uint64          // top-level defaults to set on In (see schema.Schema.MissingDefaults)
	wtx          *dbconn.WriteTx // the write transaction, nil for read tools
	policy       *dbconn.Policy  // SQLite's authorizer on the call's connection; nil on PostgreSQL
	retry        runRetry        // a write run against other writes (retry.go)
	changes      *changeset.Set  // what a write run changed in tracked tables (changesets.go)
	undid        []int64         // the history entries an undo_changes call undoes
	conversation string          // Call.Conversation
	locale       string          // Call.Locale: the words of changes (words.go)

	// ctxMu guards the call's Done channel, its first refusal and its
	// first failure.
	ctxMu   sync.Mutex
	ctxDone doneSignal // the Done channel (context.go)
	refused error
	failed  error // set through callinfo.Info.Fail: the call fails whatever the handler returns
}

func (c *ReadCtx) late(op string) error {
	c.call.reg.lateUse(c.call.tool.spec.Name, op)
	return fmt.Errorf("llmtool: tool %s: %s after its handler returned (finish all work before returning; start no goroutine that outlives the handler): %w", c.call.tool.spec.Name, op, sql.ErrTxDone)
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
	return statement(c, "Query", query, func(text string) (*sql.Rows, int64, error) {
		rows, err := c.q.QueryContext(ctx, text, args...)
		return rows, -1, err
	}, (*sql.Rows).Close)
}

// statement is the one path of a handler's statements: Exec, Query,
// QueryRow and PrepareContext each send theirs through it, so every
// statement meets the same checks and the same hooks, whichever method
// ran it. op names the method for a use after the handler returned; run
// sends text, the statement as checked, and returns what the method
// returns, the rows it changed (-1 when the method cannot tell) and its
// error; discard releases what run returned when the statement turns
// out refused.
//
// The boundary is not a hook, because no call may go without it: on
// PostgreSQL check reads the text before it is sent, on SQLite the
// authorizer decides as the engine compiles it and denied collects what
// it refused. A write call's statement hooks (hooks.go) see each
// statement after it ran.
func statement[T any](c *ReadCtx, op, query string, run func(text string) (T, int64, error), discard func(T) error) (T, error) {
	var zero T
	cs := c.call
	if !cs.enter() {
		return zero, c.late(op)
	}
	defer cs.mu.RUnlock()
	text, err := cs.check(query)
	if err != nil {
		return zero, err
	}
	v, rows, err := run(text)
	if rerr := cs.denied(text); rerr != nil {
		if err == nil {
			_ = discard(v)
		}
		return zero, rerr
	}
	if c.tx != nil {
		for _, f := range cs.reg.hooks.statement {
			f(cs, text, rows, err)
		}
	}
	return v, err
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
// returned, the row's Scan reports sql.ErrTxDone.
func (c *ReadCtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	row, err := statement(c, "QueryRow", query, func(text string) (*sql.Row, int64, error) {
		row := c.q.QueryRowContext(ctx, text, args...)
		return row, -1, row.Err()
	}, func(*sql.Row) error { return nil })
	if row == nil {
		return c.call.reg.tx.ErrRow.Row(err)
	}
	return row
}

// PrepareContext prepares a statement in the call's transaction, checked
// as the call's queries are, so a *ReadCtx or *WriteCtx serves a data
// layer that prepares its queries (sqlc's emit_prepared_queries). The
// statement belongs to the call: it is closed when the handler returns
// (on a read call, with its connection, which is not reused), and its
// rows must be closed before then, as any rows. Close it when done, as
// any *sql.Stmt. Its statements run as the call's queries do: a preview
// counts the rows they change (see NeedsApproval), and a run that lost to
// another write runs again.
func (c *ReadCtx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return statement(c, "PrepareContext", query, func(text string) (*sql.Stmt, int64, error) {
		st, err := c.q.PrepareContext(ctx, text)
		return st, -1, err
	}, (*sql.Stmt).Close)
}

// Engine returns the database's engine, "sqlite" or "postgres", for the
// rare statement that must differ between them (full-text search, say).
// SQL with $1, $2 placeholders runs unchanged on both; so does SQL with
// SQLite's ? placeholders, which llmtool rewrites for PostgreSQL.
func (c *ReadCtx) Engine() string { return c.call.reg.tx.Engine.String() }

// Logger returns the registry's logger with the tool's name attached.
func (c *ReadCtx) Logger() *slog.Logger {
	return c.call.reg.logger().With("tool", c.call.tool.spec.Name)
}

// Progress reports progress to the client, if it asked for it: done of
// total units (total 0 if unknown), with an optional message. Over MCP it
// becomes notifications/progress; in chat it becomes a progress event.
func (c *ReadCtx) Progress(done, total float64, message string) {
	if r := callinfo.ReporterFrom(c.parent); r != nil {
		r.Progress(c.parent, done, total, message)
	}
}

// Log sends a log message to the client (MCP notifications/message, subject
// to the client's logging level) and to the registry's logger.
func (c *ReadCtx) Log(level slog.Level, message string) {
	c.Logger().Log(c.parent, level, message)
	if r := callinfo.ReporterFrom(c.parent); r != nil {
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
	return statement(&c.ReadCtx, "Exec", query, func(text string) (sql.Result, int64, error) {
		res, err := c.tx.ExecContext(ctx, text, args...)
		if err != nil {
			return nil, -1, err
		}
		n, nerr := res.RowsAffected()
		if nerr != nil {
			n = -1
		}
		return res, n, nil
	}, func(sql.Result) error { return nil })
}

// AfterCommit registers f to run after the transaction commits, in
// registration order. It does not run if the call rolls back, and runs
// once, after the commit, even when the registry ran the handler again
// because a run lost to other writes. Use
// it for side effects outside the database, such as invalidating a cache.
func (c *WriteCtx) AfterCommit(f func()) {
	if c.call.done.Load() {
		_ = c.late("AfterCommit")
		return
	}
	c.call.afterCommit = append(c.call.afterCommit, f)
}

// prepared is what argument preparation hands to the call, and what the
// call hands back for its audit record.
type prepared struct {
	preview   *previewState // a dry run or an approval (approval.go); nil for a plain call
	fill      uint64
	attempts  int           // runs of a write call's handler (more than one after retries)
	retryWait time.Duration // the time a write call lost to other writes (retry.wait)
	traced    bool          // the call's span is recording: add child spans (telemetry.go)
	// conversation is Call.Conversation, recorded with the changeset.
	conversation string
	locale       string // Call.Locale
}

// decodeIn fills in (a pointer to a zero In) from the call's validated
// arguments, then sets the defaults of the top-level fields they lack.
func (cs *callState) decodeIn(args []byte, in any) error {
	if err := decodeArgs(args, in); err != nil {
		return err
	}
	cs.tool.in.SetDefaults(in, cs.fill)
	return nil
}

// Close hands the connections the registry reserved (for reads, and on
// SQLite the one its writes run on) back to the database's pool, in their
// normal state, without llmtool's authorizer, and stops watching for
// other processes' tenant changes (see tenant.Settings.Subscribe); a write
// that runs hands its connection back when it ends. It does not close the
// database, which belongs to the host. Calls made after Close still work,
// without reserved connections.
func (r *Registry) Close() error {
	r.tenants.Close()
	r.approve.close()
	r.tracked.close()
	r.tx.Close()
	return nil
}

// exec runs a prepared call in its transaction. A call that failed on a
// broken connection learns whether the database still answers, so the
// model hears "cannot be reached" only when it does not.
func (r *Registry) exec(ctx context.Context, t *Tool, args []byte, pa *prepared, res *Result) (out []byte, committed bool, err error) {
	out, committed, err = r.execCall(ctx, t, args, pa, res)
	if err != nil && engine.BrokenConn(err) && !engine.Unavailable(err) && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if perr := r.tx.DB.PingContext(pctx); perr != nil {
			err = fmt.Errorf("%w; %w: %w", err, engine.ErrNoAnswer, perr)
		}
		cancel()
	}
	return out, committed, err
}

// execCall is exec without the diagnosis.
func (r *Registry) execCall(ctx context.Context, t *Tool, args []byte, pa *prepared, res *Result) (out []byte, committed bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if r.tx.DB == nil {
		return nil, false, errors.New("llmtool: the registry has no database; pass the host's *sql.DB to NewRegistry to run tools")
	}
	if t.spec.ReadOnly {
		out, err := r.execRead(ctx, t, args, pa, res)
		if err != nil && engine.StalePlan(err) && ctx.Err() == nil {
			// PostgreSQL refused a statement prepared before a schema
			// change; the driver has dropped it, so the call runs again.
			out, err = r.execRead(ctx, t, args, pa, res)
		}
		return out, false, err
	}
	return r.runWrites(ctx, t, args, pa, res) // retry.go
}

// execRead runs a read call: its guards and handler, once, in one
// read-only snapshot.
func (r *Registry) execRead(ctx context.Context, t *Tool, args []byte, pa *prepared, res *Result) (out []byte, err error) {
	rt, err := r.tx.BeginRead(ctx)
	if err != nil {
		return nil, beginErr(ctx, err)
	}
	// One allocation for the call's state and its context.
	rc := &struct {
		cs callState
		c  ReadCtx
	}{cs: callState{reg: r, tool: t, fill: pa.fill, traced: pa.traced, policy: rt.Policy(), conversation: pa.conversation, locale: pa.locale}}
	cs, c := &rc.cs, &rc.c
	*c = ReadCtx{parent: ctx, call: cs, q: rt.Querier()}
	out, err = r.run(t, c, args)
	cs.finish()
	_ = cs.denied("") // what SQLite's authorizer denied while rows were read, say
	if refused := cs.refusal(); refused != nil {
		err = refused
	} else if failed := cs.failure(); failed != nil {
		err = failed
	} else if err == nil {
		err = ctx.Err()
	} else if readOnlyErr(err) {
		err = fmt.Errorf("llmtool: tool %s is a read tool, so the database refuses its writes; declare it with llmtool.Write to change data: %w", t.spec.Name, err)
	}
	// A connection that failed (the server went away) is closed rather
	// than kept for the next read.
	broken := err != nil && (engine.Unavailable(err) || engine.BrokenConn(err))
	if open := r.tx.EndRead(rt, cs.refusal() != nil || broken); open > 0 {
		r.logger().Warn("llmtool: read tool returned with query rows open; llmtool closed them (close rows before returning, or defer rows.Close())", "tool", t.spec.Name, "rows", open)
	}
	if err != nil {
		return nil, err
	}
	res.Content = cs.content
	return out, nil
}

// execWrite is one run of a write call, p its retry policy. It reads
//
//	begin → handler → before commit → commit → after commit
//
// with each feature at the points it registered (hooks.go). again reports
// a run that lost to other writes: nothing was saved, and the handler may
// run again on a fresh transaction; runAgain (retry.go) alone decides it.
// An error wrapping errContended is a run that the call's deadline ended
// while it waited for other transactions.
func (r *Registry) execWrite(ctx context.Context, t *Tool, args []byte, pa *prepared, res *Result, p *retry) (out []byte, committed, again bool, err error) {
	cs := &callState{reg: r, tool: t, fill: pa.fill, preview: pa.preview, traced: pa.traced, conversation: pa.conversation, locale: pa.locale, exact: pa.preview != nil || r.tracked.exactFor(t.spec.Name)}
	cs.retry.attempt, cs.retry.wait = p.runs, p.wait()
	if err := ctx.Err(); err != nil {
		return nil, false, false, p.ended(err, nil) // retry.go
	}
	wt, err := r.beginWrite(ctx, t, pa.traced) // the write lock and BEGIN (telemetry.go)
	if err != nil {
		again, err = r.runAgain(ctx, cs, p, err)
		return nil, false, again, err
	}
	cs.wtx, cs.policy = wt, wt.Policy
	defer func() { r.tx.EndWrite(wt, cs.refusal() != nil) }()
	for _, f := range r.hooks.begin {
		if err := f(ctx, cs); err != nil {
			_ = wt.Tx.Rollback()
			return nil, false, false, beginErr(ctx, err)
		}
	}
	out, abandoned, err := r.runWriteHandler(ctx, cs, args)
	if abandoned {
		return nil, false, false, err
	}
	// From here on only llmtool's own statements run on the connection:
	// the handler returned, its context refuses new statements, and its
	// *sql.Tx waits for any in flight before it commits or rolls back.
	wt.Policy.SetMode(dbconn.ModeOwn)
	cs.out, cs.returned = out, err == nil
	for _, f := range r.hooks.beforeCommit {
		if err != nil {
			break
		}
		err = f(ctx, cs)
	}
	if err == nil {
		err = r.commit(ctx, cs)
	}
	if err != nil {
		_ = wt.Tx.Rollback() // nothing to roll back after a failed commit
		if errors.Is(err, errRolledBack) {
			res.Content = cs.content
			return out, false, false, nil
		}
		again, err = r.runAgain(ctx, cs, p, err) // retry.go
		return nil, false, again, err
	}
	for _, f := range r.hooks.afterCommit {
		f(cs)
	}
	res.Content, res.Changeset = cs.content, cs.changes
	return out, true, false, nil
}

// runWriteHandler runs a write run's guards and handler in cs's
// transaction, and returns what ended it: the handler's error, or the
// call's refusal or failure, which stick whatever the handler returns,
// or the context's end. abandoned reports a handler that ran on past the
// grace after the call's context ended (dbconn.Pool.Watch), whose
// transaction the watch already rolled back.
func (r *Registry) runWriteHandler(ctx context.Context, cs *callState, args []byte) (out []byte, abandoned bool, err error) {
	wt, t := cs.wtx, cs.tool
	w := &WriteCtx{ReadCtx{parent: ctx, call: cs, q: wt.Tx, tx: wt.Tx}}
	w.write = w
	r.tx.Watch(ctx, wt, func() {
		r.logger().Error("llmtool: write handler ran on after its call's context ended; llmtool rolled its transaction back, closed its connection and let other writes go on (return when the handler's context is done)",
			"tool", t.spec.Name, "grace", r.tx.Grace(), "err", context.Cause(ctx))
	})
	wt.Policy.SetMode(dbconn.ModeWrite)
	locks := r.tx.WatchLocks(ctx) // PostgreSQL: a lock wait near the deadline (retry.go)
	out, err = r.run(t, &w.ReadCtx, args)
	cs.retry.lockWait = locks.Stop()
	if !wt.Claim() {
		cs.finish()
		return nil, true, fmt.Errorf("llmtool: tool %s: its handler ran on for more than %s after the call's context ended, so llmtool stopped the write: it rolled the transaction back and let other writes go on; nothing was saved: %w", t.spec.Name, r.tx.Grace(), ctx.Err())
	}
	cs.finish()
	_ = cs.denied("")
	if refused := cs.refusal(); refused != nil {
		return nil, false, refused
	} else if failed := cs.failure(); failed != nil {
		return nil, false, failed
	} else if err == nil {
		err = ctx.Err() // cancelled while the handler ran: roll back
	}
	return out, false, err
}

// commit commits a run, in the span llmtool.commit when traced.
func (r *Registry) commit(ctx context.Context, cs *callState) error {
	_, span := r.startChild(ctx, cs.traced, spanCommit)
	err := cs.wtx.Tx.Commit()
	endChild(span, err)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("llmtool: commit: %w", err)
}

// runAfterCommit runs the handler's AfterCommit functions, the last hook
// of the write path.
func runAfterCommit(cs *callState) {
	for _, f := range cs.afterCommit {
		cs.reg.afterCommit(cs.tool.spec.Name, f)
	}
}

// readOnlyErr reports whether err is the database refusing a write in a
// read-only transaction: PostgreSQL's read_only_sql_transaction (25006),
// SQLITE_READONLY from any driver that reports SQLite's result code, or
// its message.
func readOnlyErr(err error) bool {
	if engine.ReadOnlyViolation(err) {
		return true
	}
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
