package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"sync"
	"sync/atomic"
)

// rowDriver is the driver of ErrRower's private *sql.DB. It answers a
// query with the value passed as its only argument: an error, which the
// query fails with, or a *replayed row, which it hands back as the
// query's rows. So QueryRow can give a handler a *sql.Row whose Scan
// reports llmtool's own error (a refusal, a use after the handler
// returned), or the row a read connection already read (see
// readConn.queryRowDirect).
type rowDriver struct{}

func (rowDriver) Connect(context.Context) (driver.Conn, error) { return rowDriver{}, nil }
func (rowDriver) Driver() driver.Driver                        { return rowDriver{} }
func (rowDriver) Open(string) (driver.Conn, error)             { return rowDriver{}, nil }
func (rowDriver) Prepare(string) (driver.Stmt, error)          { return nil, driver.ErrSkip }
func (rowDriver) Close() error                                 { return nil }
func (rowDriver) Begin() (driver.Tx, error)                    { return nil, driver.ErrSkip }
func (rowDriver) CheckNamedValue(*driver.NamedValue) error     { return nil }
func (rowDriver) QueryContext(_ context.Context, _ string, args []driver.NamedValue) (driver.Rows, error) {
	if r, ok := args[0].Value.(*replayed); ok {
		if r.err != nil {
			return nil, r.err
		}
		return r, nil
	}
	return nil, args[0].Value.(error)
}

// replayed is the outcome of a one-row query a read connection ran on its
// driver: the query's error, or its columns, its first row if it had one
// (or the error reading it), and the error closing its rows. As
// driver.Rows it gives database/sql that outcome again.
type replayed struct {
	err      error // the query failed
	cols     []string
	vals     []driver.Value
	row      bool  // vals holds a row not yet handed out
	nextErr  error // reading the first row failed
	closeErr error // closing the driver's rows failed
	closed   bool  // database/sql closed these rows: the row was scanned
	buf      [4]driver.Value
}

func (r *replayed) Columns() []string { return r.cols }
func (r *replayed) Close() error {
	r.closed = true
	return r.closeErr
}

func (r *replayed) Next(dest []driver.Value) error {
	if r.row {
		r.row = false
		copy(dest, r.vals)
		return nil
	}
	if r.nextErr != nil {
		return r.nextErr
	}
	return io.EOF
}

// ErrRower makes *sql.Row values that fail with a given error, or that
// give a row already read.
//
// Its *sql.DB (whose pool database/sql runs a goroutine for) is opened on
// first use and closed with the registry.
type ErrRower struct {
	mu sync.Mutex // serializes opening and closing db
	db atomic.Pointer[sql.DB]
}

func (e *ErrRower) open() *sql.DB {
	if db := e.db.Load(); db != nil {
		return db
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	db := e.db.Load()
	if db == nil {
		db = sql.OpenDB(rowDriver{})
		e.db.Store(db)
	}
	return db
}

// Row returns a *sql.Row whose Scan returns err.
func (e *ErrRower) Row(err error) *sql.Row {
	return e.open().QueryRowContext(context.Background(), "", err)
}

// conn returns a connection of its own for a read connection's replayed
// rows: a *sql.Row from it gives a *replayed passed as the query's
// argument (Scan reports its error, or scans its row as database/sql
// scans a driver's, or reports sql.ErrNoRows), without the pool's lock
// that a query on the *sql.DB takes twice.
func (e *ErrRower) conn() (*sql.Conn, error) {
	return e.open().Conn(context.Background())
}

// Close closes the *sql.DB, if it was opened; a later Row opens another.
func (e *ErrRower) Close() {
	e.mu.Lock()
	db := e.db.Swap(nil)
	e.mu.Unlock()
	if db != nil {
		db.Close()
	}
}
