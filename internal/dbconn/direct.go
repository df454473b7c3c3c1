package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"time"
)

// A one-row query on a reserved SQLite read connection runs on the
// driver's connection directly: on a driver statement the connection
// keeps prepared for QueryRow, its row read and the driver's rows closed
// before QueryRow returns. The handler still gets a *sql.Row: the pool's
// ErrRower hands the row to database/sql, whose Scan converts the values
// as it converts any driver's. What this saves per query is database/sql's
// statement bookkeeping (the *sql.Stmt's dependency map under the
// database's lock, a goroutine watching a cancellable context), about a
// third of what database/sql adds to the driver for a one-row read.
//
// The direct path is taken only where it gives what database/sql would:
// arguments of the builtin types database/sql's default converter turns
// into driver values without a driver's help, a driver whose connection
// and statement do not check or convert values themselves, and the
// statement's argument count matching. Anything else runs through
// database/sql as before, which also reports its errors.

// maxDirectArgs bounds the arguments of a query that takes the direct
// path.
const maxDirectArgs = 8

// directValue converts a query argument as database/sql's
// driver.DefaultParameterConverter does, for the builtin types it
// converts without reflection; ok is false for any other type (a named
// type, a driver.Valuer, a pointer, sql.Named, ...), which database/sql
// converts instead.
func directValue(a any) (v driver.Value, ok bool) {
	switch a := a.(type) {
	case nil, int64, float64, bool, string, []byte, time.Time:
		return a, true
	case int:
		return int64(a), true
	case int32:
		return int64(a), true
	case int16:
		return int64(a), true
	case int8:
		return int64(a), true
	case uint32:
		return int64(a), true
	case uint16:
		return int64(a), true
	case uint8:
		return int64(a), true
	case float32:
		return float64(a), true
	}
	return nil, false
}

// queryRowDirect runs query on the driver's connection and returns its
// first row as a *sql.Row, with the replayed rows it reads, or nil when
// the direct path does not apply (see above); the caller then runs the
// query through database/sql. The caller holds rc.mu.
func (rc *readConn) queryRowDirect(ctx context.Context, query string, args []any) (*sql.Row, *replayed) {
	if !rc.reserved || rc.pg || rc.rows == nil || len(args) > maxDirectArgs {
		return nil, nil
	}
	nv := rc.nv[:len(args)]
	for i, a := range args {
		v, ok := directValue(a)
		if !ok {
			return nil, nil
		}
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	s := rc.directStmt(ctx, query)
	if s == nil || (s.numInput >= 0 && s.numInput != len(args)) {
		return nil, nil
	}
	r := rc.replayed()
	rc.dq = directQuery{ctx: ctx, s: s, nv: nv, r: r}
	if rc.runDirect == nil {
		rc.runDirect = rc.direct // one closure per connection, not per query
	}
	err := rc.conn.Raw(rc.runDirect)
	rc.dq = directQuery{}
	clear(nv)
	if err != nil {
		return nil, nil // the connection is gone: database/sql reports it
	}
	if rc.rowc == nil {
		c, err := rc.rows.conn()
		if err != nil {
			return nil, nil
		}
		rc.rowc = c
	}
	return rc.rowc.QueryRowContext(context.Background(), "", r), r
}

// directQuery is the query direct runs, under rc.mu.
type directQuery struct {
	ctx context.Context
	s   *cachedStmt
	nv  []driver.NamedValue
	r   *replayed
}

// direct runs rc.dq on the driver's connection (rc.conn.Raw calls it):
// the query, its first row, its rows closed.
func (rc *readConn) direct(any) error {
	q := &rc.dq
	r := q.r
	rows, err := q.s.ds.QueryContext(q.ctx, q.nv)
	if err != nil {
		r.err = err
		return nil
	}
	r.cols = rows.Columns()
	if len(r.cols) <= len(r.buf) {
		r.vals = r.buf[:len(r.cols)]
	} else {
		r.vals = make([]driver.Value, len(r.cols))
	}
	switch err := rows.Next(r.vals); err {
	case nil:
		r.row = true
		// The driver may reuse a []byte's memory once its rows close.
		for i, v := range r.vals {
			if b, ok := v.([]byte); ok {
				r.vals[i] = append([]byte(nil), b...)
			}
		}
	case io.EOF:
	default:
		r.nextErr = err
	}
	r.closeErr = rows.Close()
	return nil
}

// replayed returns a *replayed for a query of the current call: one the
// connection's earlier calls used, or a new one. Every row of a call is
// closed when the call ends (closeLent), so none of them reads its
// replayed again, and the next call may use it.
func (rc *readConn) replayed() *replayed {
	if rc.nrep < len(rc.reps) {
		r := rc.reps[rc.nrep]
		rc.nrep++
		*r = replayed{}
		return r
	}
	r := &replayed{}
	if len(rc.reps) < maxKeptReplays {
		rc.reps = append(rc.reps, r)
		rc.nrep++
	}
	return r
}

// maxKeptReplays bounds the replayed rows a connection keeps for reuse.
const maxKeptReplays = 8

// directStmt returns query's entry with its driver statement prepared, or
// nil when the driver cannot run it directly.
func (rc *readConn) directStmt(ctx context.Context, query string) *cachedStmt {
	if s := rc.lastDirect; s != nil && rc.lastQuery == query {
		return s // the same text as the last: no hashing
	}
	s := rc.stmts[query]
	if s != nil && s.ds != nil {
		rc.lastQuery, rc.lastDirect = query, s
		return s
	}
	if s != nil && s.noDirect {
		return nil
	}
	if s == nil && len(rc.stmts) >= maxCachedStmts && !rc.evict() {
		return nil
	}
	var ds driver.StmtQueryContext
	numInput := -1
	noDirect := false
	_ = rc.conn.Raw(func(dc any) error {
		p, ok := dc.(driver.ConnPrepareContext)
		if _, checks := dc.(driver.NamedValueChecker); !ok || checks {
			noDirect = true
			return nil
		}
		st, err := p.PrepareContext(ctx, query)
		if err != nil {
			return nil // database/sql reports the error
		}
		q, ok := st.(driver.StmtQueryContext)
		_, checks := st.(driver.NamedValueChecker)
		//lint:ignore SA1019 database/sql still converts with a statement's ColumnConverter, so the direct path must not
		_, converts := st.(driver.ColumnConverter)
		if !ok || checks || converts {
			st.Close()
			noDirect = true
			return nil
		}
		ds, numInput = q, st.NumInput()
		return nil
	})
	if ds == nil && !noDirect {
		return nil
	}
	if s == nil {
		s = &cachedStmt{}
		if rc.stmts == nil {
			rc.stmts = make(map[string]*cachedStmt)
		}
		rc.stmts[query] = s
	}
	s.ds, s.numInput, s.noDirect = ds, numInput, noDirect
	if noDirect {
		return nil
	}
	return s
}
