package engine_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/pgtest"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want engine.Engine
		err  string
	}{
		{"sqlite", engine.SQLite, ""},
		{"SQLite3", engine.SQLite, ""},
		{"postgres", engine.Postgres, ""},
		{"postgresql", engine.Postgres, ""},
		{"pgx", engine.Postgres, ""},
		{"mysql", 0, `llmtool: unknown engine "mysql": llmtool runs on "sqlite" and "postgres"`},
		{"", 0, `llmtool: unknown engine "": llmtool runs on "sqlite" and "postgres"`},
	} {
		e, err := engine.Parse(tc.name)
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, e)
	}
	require.Equal(t, "sqlite", engine.SQLite.String())
	require.Equal(t, "postgres", engine.Postgres.String())
	require.Equal(t, "unknown", engine.Engine(0).String())
}

func TestDetect(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "x.db"))
	require.NoError(t, err)
	defer db.Close()
	e, err := engine.Detect(context.Background(), db)
	require.NoError(t, err)
	require.Equal(t, engine.SQLite, e)

	pg := pgtest.Open(t)
	e, err = engine.Detect(context.Background(), pg)
	require.NoError(t, err)
	require.Equal(t, engine.Postgres, e)
}

func TestDetectUnreachable(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("pgx", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	require.NoError(t, err)
	defer db.Close()
	_, err = engine.Detect(context.Background(), db)
	require.ErrorContains(t, err, "llmtool: cannot reach the database to detect its engine (set Options.Engine to skip detection): ")
	require.True(t, engine.Unavailable(err))
}

func TestErrorClasses(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	for _, tc := range []struct {
		name                                   string
		err                                    error
		retryable, busy, unavailable, readOnly bool
		full, locked, stale                    bool
	}{
		{name: "serialization failure", err: pg("40001"), retryable: true, busy: true},
		{name: "deadlock", err: pg("40P01"), retryable: true, busy: true},
		{name: "lock timeout", err: pg("55P03"), busy: true},
		{name: "read-only transaction", err: pg("25006"), readOnly: true},
		{name: "disk full", err: pg("53100"), full: true},
		{name: "too many connections", err: pg("53300"), unavailable: true},
		{name: "admin shutdown", err: pg("57P01"), unavailable: true},
		{name: "starting up", err: pg("57P03"), unavailable: true},
		{name: "connection failure", err: pg("08006"), unavailable: true},
		{name: "unique violation", err: pg("23505")},
		{name: "connection refused", err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED), unavailable: true},
		{name: "plain", err: errors.New("something else")},
		{name: "SQLITE_BUSY", err: fmt.Errorf("begin: %w", sqliteErr(5)), retryable: true, locked: true},
		{name: "SQLITE_BUSY_SNAPSHOT", err: sqliteErr(517), retryable: true, locked: true},
		{name: "SQLITE_LOCKED, within the connection", err: sqliteErr(6)},
		{name: "SQLITE_LOCKED_SHAREDCACHE", err: sqliteErr(262), retryable: true, locked: true},
		{name: "SQLITE_CONSTRAINT_UNIQUE", err: sqliteErr(2067)},
		{name: "a coded error's text is not read", err: codedText{"database is locked"}},
		// A handler's error, or a not-found message that quotes the
		// model's argument, says what it likes: it is not the database's.
		{name: "busy, said as text", err: errors.New("database is locked")},
		{name: "busy, quoted from the model", err: fmt.Errorf("rename_note: %w", errors.New(`Note "database is locked" not found.`))},
		{name: "locked, said as text", err: errors.New("database table is locked: items")},
		{name: "refused, said as text", err: errors.New(`Note "connection refused" not found.`)},
		{name: "closed, said as text", err: errors.New("conn closed")},
		{name: "EOF, said as text", err: errors.New(`arguments: not valid JSON (unexpected EOF)`)},
		{name: "down, said as text", err: errors.New("FATAL: the database system is shutting down; broken pipe")},
		{name: "stale plan, said as text", err: errors.New("ERROR: cached plan must not change result type (SQLSTATE 0A000)")},
		{name: "stale plan, said around another 0A000", err: fmt.Errorf(`note "cached plan must not change result type": %w`, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "cross-database references are not implemented: a.b.c"})},
		{name: "stale plan, quoted in another 0A000", err: &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "cross-database references are not implemented: a.b.x: cached plan must not change result type"}},
		{name: "stale plan", err: fmt.Errorf("query: %w", &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "cached plan must not change result type"}), stale: true},
		{name: "stale plan, localized severity", err: &pgconn.PgError{Severity: "FEHLER", Code: "0A000", Message: "cached plan must not change result type"}, stale: true},

		{name: "the server closed the connection", err: fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), unavailable: true},
		{name: "broken pipe", err: fmt.Errorf("write: %w", syscall.EPIPE), unavailable: true},
		{name: "a network error", err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, unavailable: true},
		{name: "pgx closed the connection", err: fmt.Errorf("query: %w", closedConn{}), unavailable: true},
		{name: "a dial the deadline ended", err: fmt.Errorf("dial error: %w", context.DeadlineExceeded)},
		{name: "a dial cancelled", err: &net.OpError{Op: "dial", Net: "tcp", Err: context.Canceled}},
		{name: "a ping that got no answer", err: fmt.Errorf("%w; %w: %w", context.Canceled, engine.ErrNoAnswer, context.DeadlineExceeded), unavailable: true},
	} {
		require.Equal(t, tc.locked, engine.Locked(tc.err), tc.name)
		require.Equal(t, tc.retryable, engine.Retryable(tc.err), tc.name)
		require.Equal(t, tc.busy, engine.Busy(tc.err), tc.name)
		require.Equal(t, tc.unavailable, engine.Unavailable(tc.err), tc.name)
		require.Equal(t, tc.readOnly, engine.ReadOnlyViolation(tc.err), tc.name)
		require.Equal(t, tc.full, engine.DiskFull(tc.err), tc.name)
		require.Equal(t, tc.stale, engine.StalePlan(tc.err), tc.name)
	}
	require.False(t, engine.Unavailable(nil))
	require.False(t, engine.Locked(nil))
}

// sqliteErr is an error with SQLite's extended result code, as
// modernc.org/sqlite's *sqlite.Error reports it.
type sqliteErr int

func (e sqliteErr) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e sqliteErr) Code() int     { return int(e) }

// codedText has a result code that is no lock, and a lock's text.
type codedText struct{ msg string }

func (e codedText) Error() string { return e.msg }
func (e codedText) Code() int     { return 1 } // SQLITE_ERROR

// closedConn is pgx's error for a connection it closed: its text, and a
// SafeToRetry method.
type closedConn struct{}

func (closedConn) Error() string     { return "conn closed" }
func (closedConn) SafeToRetry() bool { return true }

func TestBrokenConn(t *testing.T) {
	t.Parallel()
	require.True(t, engine.BrokenConn(fmt.Errorf("query: %w", driver.ErrBadConn)))
	require.True(t, engine.BrokenConn(fmt.Errorf("query: %w", sql.ErrConnDone)))
	require.False(t, engine.BrokenConn(errors.New("driver: bad connection, said as text")))
	require.False(t, engine.Unavailable(driver.ErrBadConn), "a busy connection is not a server that went away: only a ping tells")
}

// TestStalePlanOnPostgres: a real server's stale plan is one; a
// feature_not_supported error (0A000) that quotes a name the statement
// chose, saying the same words, is not.
func TestStalePlanOnPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.Open(t)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `CREATE TABLE t (a int)`)
	require.NoError(t, err)
	rows, err := conn.QueryContext(ctx, `SELECT * FROM t`) // prepared and cached by pgx
	require.NoError(t, err)
	require.NoError(t, rows.Close())
	_, err = conn.ExecContext(ctx, `ALTER TABLE t ADD COLUMN b int`)
	require.NoError(t, err)
	_, err = conn.QueryContext(ctx, `SELECT * FROM t`)
	require.ErrorContains(t, err, "cached plan must not change result type")
	require.True(t, engine.StalePlan(err), "%v", err)

	_, err = conn.ExecContext(ctx, `SELECT * FROM a.b."x: cached plan must not change result type"`)
	require.EqualError(t, err, `ERROR: cross-database references are not implemented: "a.b.x: cached plan must not change result type" (SQLSTATE 0A000)`)
	require.False(t, engine.StalePlan(err))
	require.False(t, engine.StalePlan(fmt.Errorf("note %q: %w", "cached plan must not change result type", err)))
}
