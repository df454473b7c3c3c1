package dbconn

import (
	"context"
	"database/sql"

	"github.com/llmtool/llmtool/internal/engine"
)

// WriteTx is a write transaction on a connection the call holds, so the
// registry can close the connection rather than hand it back when the
// handler may have changed it.
//
// The transaction does not end with the call's context: database/sql
// would roll it back from a goroutine of its own as soon as the context
// ends, while the handler may still be running statements, and on SQLite
// its ROLLBACK would meet the authorizer in the handler's mode. The
// registry ends it itself, when the handler returns, in ModeOwn.
type WriteTx struct {
	Conn   *sql.Conn
	Tx     *sql.Tx
	Policy *Policy // SQLite's authorizer; nil on PostgreSQL

	cancel context.CancelFunc // ends the transaction's context
}

// BeginWrite starts a write transaction, with the connection's authorizer
// in ModeOwn on SQLite. On SQLite it first waits for the registry's write
// token; open the database with _txlock=immediate (as OpenSQLite does) so
// the transaction takes the write lock at BEGIN. On PostgreSQL the
// transaction is SERIALIZABLE: the server lets writes run side by side and
// fails one that could not have run alone (40001), which the registry
// retries. The wait for the token, a connection and BEGIN end with ctx.
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
	w := &WriteTx{Conn: conn}
	if t.sqlite {
		w.Policy = new(Policy)
		if err := install(conn, w.Policy); err != nil {
			discard(conn)
			t.releaseToken()
			return nil, err
		}
	}
	// BEGIN waits for a lock under ctx; the transaction then lives on a
	// context only EndWrite ends.
	txCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, cancel)
	}
	w.Tx, err = conn.BeginTx(txCtx, opts)
	if !stop() && err == nil {
		// ctx ended during BEGIN, and with it the transaction's context.
		_ = w.Tx.Rollback()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		t.endConn(w, false)
		return nil, err
	}
	w.cancel = cancel
	return w, nil
}

// releaseToken gives the write token back (SQLite).
func (t *Pool) releaseToken() {
	if t.sqlite {
		<-t.writes
	}
}

// EndWrite hands the connection back, without the registry's authorizer,
// or closes it if the call had a statement refused (suspect), and
// releases the write token. The transaction must have ended.
func (t *Pool) EndWrite(w *WriteTx, suspect bool) {
	w.cancel()
	t.endConn(w, suspect)
}

// endConn hands w's connection back or closes it, and releases the token.
func (t *Pool) endConn(w *WriteTx, suspect bool) {
	if !suspect && w.Policy != nil && uninstall(w.Conn) != nil {
		suspect = true
	}
	if suspect {
		discard(w.Conn)
	} else {
		w.Conn.Close()
	}
	t.releaseToken()
}
