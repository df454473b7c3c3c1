// Package dbconn holds the connections under a registry's calls: the read
// connections it reserves in query_only mode with their statement cache,
// read snapshots (BEGIN ... ROLLBACK), the write token that serializes
// writes, and the write transaction on a held connection.
//
// On SQLite, reads run on reserved query_only connections and writes are
// serialized by a token, as SQLite allows one writer. On PostgreSQL, reads
// run on reserved connections whose transactions are read-only by default
// (default_transaction_read_only), in REPEATABLE READ transactions; writes
// run in SERIALIZABLE transactions, concurrently, with no process-wide
// token: the server decides, and the registry retries a write that lost a
// race.
package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// Querier is what llmtool's own packages read through: a call's reserved
// connection inside BEGIN for read tools, its *sql.Tx for write tools, or
// a *sql.DB (the tenant settings). Hosts pass theirs to changeset.List,
// which takes the public changeset.Queryer.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// Pool begins the transactions of a registry's calls.
type Pool struct {
	DB      *sql.DB          // the host's database
	Engine  engine.Engine    // the database's engine
	Dialect sqlcheck.Dialect // the lexical rules for checking handler SQL (PostgreSQL)
	ErrRow  ErrRower         // rows that fail with llmtool's own errors
	Checked sqlcheck.Cache   // handler SQL already accepted (PostgreSQL)
	sqlite  bool             // enforce read-only with PRAGMA query_only
	Role    string           // PostgreSQL: the role handler SQL runs as (Options.Role, pgsession.go)

	// Track names the tables whose changes write calls capture on SQLite
	// (see Capture), MaxValue the largest value recorded. Set them before
	// the first call. On PostgreSQL, TrackPG sets pg instead.
	Track    []string
	MaxValue int
	pg       *pgTracking // PostgreSQL's tracked tables (TrackPG)

	// version is PRAGMA schema_version, read when tables are tracked on
	// SQLite (see Capture.fresh).
	version Prepared
	text    textStmts // SQLite: the statements that read text again (capture_text.go)

	writes chan struct{} // one token: writes are serialized per registry (SQLite)
	// writer is SQLite's write connection between writes, owned by the
	// token's holder; kept when the host's pool leaves room for it
	// (keepWriter), and until Close.
	writer     *writeConn
	keepWriter bool

	// WriteGrace bounds how long a write whose context ended may keep
	// the write path (see Watch); zero or negative means one second. Set
	// it before the first call.
	WriteGrace time.Duration

	// Read connections reserved from DB and kept read-only, with BEGIN and
	// ROLLBACK prepared once on SQLite, so a read call costs neither
	// PRAGMA statements nor parsing. At most cap(idle) are reserved; none
	// when the host limits DB to very few connections.
	idle     chan *readConn
	reserved atomic.Int32
	closed   atomic.Bool

	// PostgreSQL write connections reserved with the capture on for the
	// session, when tables are tracked (pgsession.go): at most
	// cap(pgWriters), as many as the read connections, and with a limit
	// on the host's pool at most half of what the reads leave.
	pgWriters    chan *sql.Conn
	pgWriterRsvd atomic.Int32
}

// maxReservedReads bounds the read connections a registry keeps. Reads
// beyond it borrow a pooled connection for the call.
const maxReservedReads = 4

// New returns the pool for db's calls. It reserves no connection until the
// first read; a nil db gives a pool that runs nothing (lint-only
// registries).
func New(db *sql.DB, e engine.Engine) *Pool {
	t := &Pool{DB: db, Engine: e, writes: make(chan struct{}, 1), version: Prepared{Query: `PRAGMA schema_version`}}
	if db != nil {
		t.sqlite = e == engine.SQLite
		if e == engine.Postgres {
			t.Dialect = sqlcheck.Postgres
		}
		n := maxReservedReads
		m := db.Stats().MaxOpenConnections
		if m > 0 {
			n = min(n, (m-1)/2) // leave the host and the writer their connections
		}
		t.idle = make(chan *readConn, max(n, 0))
		if e == engine.Postgres {
			w := max(n, 0)
			if m > 0 {
				w = min(w, (m-1-w)/2) // half of what the reads leave the host, at most
			}
			t.pgWriters = make(chan *sql.Conn, max(w, 0))
		}
		t.keepWriter = t.sqlite && (m == 0 || m >= 2)
	}
	return t
}

// Close hands the reserved connections back to the host's pool: the
// write connection now, if no write runs, else when the write ends.
func (t *Pool) Close() {
	t.closed.Store(true)
	t.drain()
	select {
	case t.writes <- struct{}{}:
		if w := t.writer; w != nil {
			t.writer = nil
			t.releaseWriteConn(w.conn, true, false)
		}
		<-t.writes
	default:
	}
	t.ErrRow.Close()
	t.version.Close()
	t.text.Close()
}

func (t *Pool) drain() {
	for {
		select {
		case rc := <-t.idle:
			t.reserved.Add(-1)
			t.release(rc, false)
		case conn := <-t.pgWriters:
			t.pgWriterRsvd.Add(-1)
			t.releasePGWriter(conn, false)
		default:
			return
		}
	}
}

// discard closes conn's physical connection instead of handing it back to
// the pool: its state may differ from what the registry set.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}
