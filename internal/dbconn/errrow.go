package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
)

// ErrRower makes *sql.Row values whose Scan reports a given error: a
// refusal, or a use after the handler returned. database/sql has no
// constructor for a failed *sql.Row, so ErrRower keeps a *sql.DB of its
// own on a private driver whose only query fails with the error passed
// as its argument.
//
// The *sql.DB (whose pool database/sql runs a goroutine for) is opened on
// first use and closed by Close; a Row after Close opens another. The
// zero value is ready to use.
type ErrRower struct {
	mu sync.Mutex
	db *sql.DB
}

// Row returns a *sql.Row whose Scan returns err.
func (e *ErrRower) Row(err error) *sql.Row {
	e.mu.Lock()
	if e.db == nil {
		e.db = sql.OpenDB(errDriver{})
	}
	db := e.db
	e.mu.Unlock()
	return db.QueryRowContext(context.Background(), "", err)
}

// Close closes the *sql.DB, if it was opened.
func (e *ErrRower) Close() {
	e.mu.Lock()
	db := e.db
	e.db = nil
	e.mu.Unlock()
	if db != nil {
		db.Close()
	}
}

// errDriver is ErrRower's driver, connector and connection at once: its
// query fails with its argument, an error.
type errDriver struct{}

func (errDriver) Connect(context.Context) (driver.Conn, error) { return errDriver{}, nil }
func (errDriver) Driver() driver.Driver                        { return errDriver{} }
func (errDriver) Open(string) (driver.Conn, error)             { return errDriver{}, nil }
func (errDriver) Prepare(string) (driver.Stmt, error)          { return nil, driver.ErrSkip }
func (errDriver) Close() error                                 { return nil }
func (errDriver) Begin() (driver.Tx, error)                    { return nil, driver.ErrSkip }
func (errDriver) CheckNamedValue(*driver.NamedValue) error     { return nil }
func (errDriver) QueryContext(_ context.Context, _ string, args []driver.NamedValue) (driver.Rows, error) {
	return nil, args[0].Value.(error)
}
