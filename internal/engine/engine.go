// Package engine tells the database engines llmtool runs on apart, and
// reads the errors they report.
//
// The engine is declared by the host (Options.Engine) or detected by
// asking the database itself, never guessed from the driver's type name:
// a wrapped driver (tracing, metrics) must not silently lose the
// read-only enforcement that depends on the engine.
package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// Engine is a database engine llmtool runs on.
type Engine uint8

const (
	// SQLite, through modernc.org/sqlite or another database/sql driver.
	SQLite Engine = iota + 1
	// Postgres is PostgreSQL, through github.com/jackc/pgx/v5/stdlib.
	Postgres
)

// String returns "sqlite" or "postgres", the names Options.Engine takes.
func (e Engine) String() string {
	switch e {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return "unknown"
}

// Parse returns the engine named name ("sqlite", "postgres" or
// "postgresql"), or an error that lists the names.
func Parse(name string) (Engine, error) {
	switch strings.ToLower(name) {
	case "sqlite", "sqlite3":
		return SQLite, nil
	case "postgres", "postgresql", "pgx":
		return Postgres, nil
	}
	return 0, fmt.Errorf("llmtool: unknown engine %q: llmtool runs on \"sqlite\" and \"postgres\"", name)
}

// Detect asks db which engine it is: PostgreSQL answers SELECT version()
// with "PostgreSQL ...", SQLite answers SELECT sqlite_version(). Anything
// else is an error that says what llmtool runs on and how to declare the
// engine.
func Detect(ctx context.Context, db *sql.DB) (Engine, error) {
	var v string
	err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v)
	if err == nil {
		return SQLite, nil
	}
	first := err
	err = db.QueryRowContext(ctx, "SELECT version()").Scan(&v)
	if err == nil {
		if strings.HasPrefix(v, "PostgreSQL ") {
			return Postgres, nil
		}
		return 0, fmt.Errorf("llmtool: the database answers SELECT version() with %q: llmtool runs on SQLite and PostgreSQL", v)
	}
	if Unavailable(first) || Unavailable(err) {
		return 0, fmt.Errorf("llmtool: cannot reach the database to detect its engine (set Options.Engine to skip detection): %w", err)
	}
	return 0, fmt.Errorf("llmtool: cannot tell the database's engine (SELECT sqlite_version(): %v; SELECT version(): %w): llmtool runs on SQLite and PostgreSQL", first, err)
}

// sqlState returns the SQLSTATE of the first error in err's chain that
// reports one (pgx's *pgconn.PgError has SQLState), or "".
func sqlState(err error) string {
	var s interface{ SQLState() string }
	if errors.As(err, &s) {
		return s.SQLState()
	}
	return ""
}

// Retryable reports whether err is the database giving up a write
// transaction that would succeed if run again once other transactions
// ended: PostgreSQL's serialization failure (40001) or deadlock (40P01),
// or SQLite's lock held by another connection (Locked).
func Retryable(err error) bool {
	switch sqlState(err) {
	case "40001", "40P01":
		return true
	}
	return Locked(err)
}

// CaptureUntaken is the SQLSTATE llmtool's capture check raises at commit
// when a write call's triggers recorded rows that the call did not read
// (PostgreSQL; see dbconn's capture).
const CaptureUntaken = "LT001"

// Untaken reports whether err is the capture check failing a commit.
func Untaken(err error) bool { return sqlState(err) == CaptureUntaken }

// SQLite's result codes for a lock another connection holds: SQLITE_BUSY
// is the low byte of its extended codes (SQLITE_BUSY_SNAPSHOT, 517, ...);
// of SQLITE_LOCKED's, only SQLITE_LOCKED_SHAREDCACHE is another
// connection's.
const (
	sqliteBusy              = 5
	sqliteLockedSharedCache = 262
)

// Locked reports whether err is SQLite refusing a lock another connection
// holds, which it may get once that connection's transaction ends:
// SQLITE_BUSY (the write lock, past the busy timeout, or at a BEGIN
// IMMEDIATE refused at once) and SQLITE_LOCKED_SHAREDCACHE (a table lock
// in shared-cache mode), by SQLite's extended result code (a Code() int
// method, as modernc.org/sqlite's errors have; NewRegistry refuses other
// SQLite drivers). A plain SQLITE_LOCKED is not: it is a conflict within
// the connection (a DROP TABLE under the statement's own open rows),
// which comes back however often the transaction runs. The message is
// never read: a handler's error may say "database is locked" (a
// not-found message quoting the model's argument, say), and taking it
// for a lock would run the call again until its deadline.
func Locked(err error) bool {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return false
	}
	c := coded.Code()
	return c&0xff == sqliteBusy || c == sqliteLockedSharedCache
}

// StalePlan reports whether err is PostgreSQL refusing a statement the
// driver prepared before a schema change altered its result (0A000,
// "cached plan must not change result type"). The driver forgets the
// statement, so running the transaction again succeeds. 0A000 is every
// feature_not_supported, whose messages may quote the statement's names
// (cross-database references are not implemented: "a.b.c"), so the
// server's error must say exactly that and nothing more: its own text,
// as pgx gives it ("ERROR: ... (SQLSTATE 0A000)"), not the text of the
// errors around it.
func StalePlan(err error) bool {
	var s interface{ SQLState() string }
	if !errors.As(err, &s) || s.SQLState() != "0A000" {
		return false
	}
	e, ok := s.(error)
	if !ok {
		return false
	}
	severity, msg, ok := strings.Cut(e.Error(), ": ")
	return ok && !strings.ContainsAny(severity, " :") && msg == "cached plan must not change result type (SQLSTATE 0A000)"
}

// Busy reports whether err is PostgreSQL giving up on contention: a write
// still failing a serialization check or deadlocking when the registry
// stopped running it again (40001, 40P01), or a lock timeout (55P03). (No
// connection slot free, 53300, is Unavailable; SQLite's busy and locked
// codes are Locked.)
func Busy(err error) bool {
	switch sqlState(err) {
	case "40001", "40P01", "55P03":
		return true
	}
	return false
}

// DiskFull reports whether err is PostgreSQL out of disk space (53100).
func DiskFull(err error) bool { return sqlState(err) == "53100" }

// BrokenConn reports whether err says the connection under a statement is
// unusable (driver.ErrBadConn, sql.ErrConnDone): the server went away, or
// the driver refused a connection still busy with an open result. Only a
// ping tells which.
func BrokenConn(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}

// ReadOnlyViolation reports whether err is PostgreSQL refusing a write in
// a read-only transaction (25006).
func ReadOnlyViolation(err error) bool { return sqlState(err) == "25006" }

// Unavailable reports whether err says the database cannot be reached or
// is not accepting work right now: PostgreSQL's connection exceptions
// (class 08), a server shutting down or starting up (57P01, 57P02,
// 57P03), too many connections (53300), or the network refusing or
// resetting the connection. A dial or a read that the caller's context
// ended (its deadline passed, or it was cancelled) is not: the call ran
// out of time, and the database may be fine.
//
// Errors are told apart by their types and codes, never by a message
// that a handler or a model could have written. pgx gives one error no
// code or type of its own: "conn closed", for a connection it closed
// after a failure, which it returns as an error with a SafeToRetry
// method; only such an error saying exactly that counts.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNoAnswer) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	switch st := sqlState(err); {
	case strings.HasPrefix(st, "08"), st == "57P01", st == "57P02", st == "57P03", st == "53300":
		return true
	case st != "":
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	return inChain(err, func(e error) bool {
		_, driver := e.(interface{ SafeToRetry() bool })
		return driver && e.Error() == "conn closed"
	})
}

// inChain reports whether f holds for err or an error it wraps.
func inChain(err error, f func(error) bool) bool {
	for err != nil {
		if f(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if inChain(e, f) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// ErrNoAnswer marks a failure after which the database did not answer a
// ping either: it counts as Unavailable whatever the driver's own error
// said (a pool that only reports "driver: bad connection", say).
var ErrNoAnswer = errors.New("the database does not answer")

// ForeignKeyViolation reports whether err is PostgreSQL refusing a
// statement that would break a foreign key (23503).
func ForeignKeyViolation(err error) bool { return sqlState(err) == "23503" }

// UniqueViolation reports whether err is a unique or primary-key
// constraint failing: PostgreSQL's 23505, or SQLite's
// SQLITE_CONSTRAINT_UNIQUE (2067) or SQLITE_CONSTRAINT_PRIMARYKEY (1555)
// from a driver that reports SQLite's extended result code.
func UniqueViolation(err error) bool {
	if sqlState(err) == "23505" {
		return true
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() {
		case 2067, 1555:
			return true
		}
	}
	return false
}

// Aborted reports whether err is PostgreSQL refusing a statement in a
// transaction that an earlier statement's failure ended (25P02).
func Aborted(err error) bool { return sqlState(err) == "25P02" }
