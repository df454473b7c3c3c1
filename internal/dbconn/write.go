package dbconn

import (
	"context"
	"database/sql"

	"github.com/llmtool/llmtool/internal/engine"
)

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
// OpenSQLite does) so the transaction takes the write lock at BEGIN. On
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
