package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
)

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

// ErrRower makes *sql.Row values that fail with a given error.
//
// Its *sql.DB (whose pool database/sql runs a goroutine for) is opened on
// first use and closed with the registry.
type ErrRower struct {
	mu sync.Mutex
	db *sql.DB
}

// Row returns a *sql.Row whose Scan returns err.
func (e *ErrRower) Row(err error) *sql.Row {
	e.mu.Lock()
	if e.db == nil {
		e.db = sql.OpenDB(errRows{})
	}
	db := e.db
	e.mu.Unlock()
	return db.QueryRowContext(context.Background(), "", err)
}

// Close closes the *sql.DB, if it was opened; a later Row opens another.
func (e *ErrRower) Close() {
	e.mu.Lock()
	db := e.db
	e.db = nil
	e.mu.Unlock()
	if db != nil {
		db.Close()
	}
}
