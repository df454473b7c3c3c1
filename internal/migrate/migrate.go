// Package migrate brings llmtool's own tables (the tenant settings and
// their version, used approvals, the audit table, the changeset history
// and, on PostgreSQL, the capture table and its function) to their current
// version, per engine.
//
// Each subject (a table or a group of tables) has an ordered list of
// steps; the version applied is recorded in llmtool_migrations. Apply is
// idempotent and safe to run from several processes at once: on
// PostgreSQL the steps run in one transaction under an advisory lock, on
// SQLite in one write transaction, so a second process waits and then
// finds nothing left to do.
package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
)

// Table records the version of each subject.
const Table = "llmtool_migrations"

// Step is one migration: the statements for each engine, run in order.
type Step struct {
	SQLite   []string
	Postgres []string
}

// Apply runs the steps of subject that db has not run yet.
func Apply(ctx context.Context, db *sql.DB, e engine.Engine, subject string, steps []Step) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("llmtool: migrate %s: %w", subject, err)
		}
	}()
	// Up to date, the common case: a read, no lock, and a read-only
	// database (a replica, a file opened read-only) starts fine.
	var version int
	if db.QueryRowContext(ctx, `SELECT version FROM `+Table+` WHERE subject = $1`, subject).Scan(&version) == nil && version == len(steps) {
		return nil
	}
	create := `CREATE TABLE IF NOT EXISTS ` + Table + ` (
	subject TEXT PRIMARY KEY,
	version INTEGER NOT NULL,
	updated_at TEXT NOT NULL
)`
	if e == engine.Postgres {
		// CREATE TABLE IF NOT EXISTS races with itself on PostgreSQL (a
		// unique violation on pg_type): take the lock first.
		return Locked(ctx, db, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, create); err != nil {
				return err
			}
			return apply(ctx, tx, e, subject, steps)
		})
	}
	if _, err := db.ExecContext(ctx, create); err != nil {
		return err
	}
	return inTx(ctx, db, func(tx *sql.Tx) error {
		// Take the write lock first, so two processes cannot both read
		// the old version and then both apply the steps.
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+Table+` WHERE 0`); err != nil {
			return err
		}
		return apply(ctx, tx, e, subject, steps)
	})
}

// Locked runs fn in a transaction on PostgreSQL under the advisory lock
// that migrations take, so that what fn installs (beyond a subject's
// steps: the capture triggers of the tables a host tracks, say) is
// installed once when replicas start together.
func Locked(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	return inTx(ctx, db, func(tx *sql.Tx) error {
		h := fnv.New64a()
		h.Write([]byte("llmtool migrations"))
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(h.Sum64()>>1)); err != nil {
			return err
		}
		return fn(tx)
	})
}

func apply(ctx context.Context, tx *sql.Tx, e engine.Engine, subject string, steps []Step) error {
	var version int
	err := tx.QueryRowContext(ctx, `SELECT version FROM `+Table+` WHERE subject = $1`, subject).Scan(&version)
	if err != nil && err != sql.ErrNoRows {
		return err
	}
	if version > len(steps) {
		return fmt.Errorf("the database is at version %d, newer than this llmtool knows (%d); upgrade llmtool", version, len(steps))
	}
	if version == len(steps) {
		return nil
	}
	for i, s := range steps[version:] {
		stmts := s.SQLite
		if e == engine.Postgres {
			stmts = s.Postgres
		}
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("step %d: %w", version+i+1, err)
			}
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO `+Table+` (subject, version, updated_at) VALUES ($1, $2, $3)
ON CONFLICT (subject) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`,
		subject, len(steps), time.Now().UTC().Format(time.RFC3339Nano))
	return err
}

func inTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
