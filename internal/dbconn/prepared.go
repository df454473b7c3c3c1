package dbconn

import (
	"context"
	"database/sql"
	"sync"
)

// Prepared is a statement of llmtool's own, prepared on a database on
// first use and kept until Close. A transaction runs it through
// Tx.StmtContext, which database/sql keeps prepared on each connection,
// so running it costs no parsing. The zero value with Query set is ready.
type Prepared struct {
	Query string

	mu sync.Mutex
	st *sql.Stmt
}

// In returns the statement for tx, preparing it on db on first use.
func (p *Prepared) In(ctx context.Context, db *sql.DB, tx *sql.Tx) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st == nil {
		st, err := db.PrepareContext(ctx, p.Query)
		if err != nil {
			return nil, err
		}
		p.st = st
	}
	return tx.StmtContext(ctx, p.st), nil
}

// Close closes the statement, if it was prepared.
func (p *Prepared) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st != nil {
		_ = p.st.Close()
		p.st = nil
	}
}
