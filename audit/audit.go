// Package audit provides the audit sinks a host lists in
// llmtool.Options.Audit: a log line per call ([Slog]) and a table of
// committed writes in the host's own database ([Table]).
//
// # Records and sinks
//
// Every call a registry runs, refused or run, yields one
// [Record], handed to each sink of Options.Audit after the
// call finished. A record never holds the arguments or the result, which
// may carry personal data. With Options.Audit nil the registry logs each
// record through its own logger; a list replaces that default, so a host
// that adds a sink and wants the log lines too lists [Slog] among them:
//
//	table, err := audit.NewTable(ctx, db, "")
//	...
//	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
//		Logger: logger,
//		Audit:  []Sink{audit.Slog(logger), table},
//	}, notes.Tools)
//
// # In the write's transaction
//
// A sink that also implements [TxSink], as [Table] does,
// records each write call that is about to commit inside the call's own
// transaction, so the record and the write commit or roll back together:
// there is no write without its row, and a rolled-back call leaves none
// (the other sinks still record it). Any other sink is written with
// [Func] or a type with an Audit method.
package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
)

// Slog returns a sink that logs each record at level Info, as the message
// "llmtool call" with the record's fields as attributes: the line the
// registry's default sink writes to its logger. A nil logger means
// slog.Default().
func Slog(logger *slog.Logger) Sink { return slogSink{logger} }

type slogSink struct{ l *slog.Logger }

func (s slogSink) Audit(ctx context.Context, rec Record) {
	l := s.l
	if l == nil {
		l = slog.Default()
	}
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	// The registry's default sink writes this line too, through Slog.
	l.LogAttrs(ctx, slog.LevelInfo, "llmtool call",
		slog.String("tool", rec.Tool), slog.String("module", rec.Module),
		slog.String("principal", rec.Principal), slog.String("scope", rec.Scope),
		slog.String("outcome", rec.Outcome), slog.Duration("duration", rec.Duration),
		slog.Bool("write", rec.Write), slog.Bool("committed", rec.Committed))
}

// Table is an [TxSink] that keeps one row per committed write
// call in a table of the host's database. Create it with [NewTable] and
// list it in Options.Audit. Only committed writes get a row; reads,
// refusals and failed calls go to the other sinks.
//
// The table's columns are at (RFC 3339 UTC text), tool, module, principal,
// scope, outcome, duration_us and committed.
type Table struct {
	name   string
	insert string
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// NewTable creates (if it does not exist) the audit table name in db and
// returns the sink that writes it; name "" means "llmtool_audit". The table
// is created with CREATE TABLE IF NOT EXISTS and never altered. db is the
// registry's database, since rows are written in its calls' transactions.
func NewTable(ctx context.Context, db *sql.DB, name string) (*Table, error) {
	if name == "" {
		name = "llmtool_audit"
	}
	if !tableName.MatchString(name) {
		return nil, fmt.Errorf("llmtool: audit table name %q: use letters, digits and underscores, such as \"llmtool_audit\"", name)
	}
	if db == nil {
		return nil, errors.New("llmtool: audit table: no database; pass the registry's *sql.DB")
	}
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+name+` (
	at TEXT NOT NULL,
	tool TEXT NOT NULL,
	module TEXT NOT NULL,
	principal TEXT NOT NULL,
	scope TEXT NOT NULL,
	outcome TEXT NOT NULL,
	duration_us INTEGER NOT NULL,
	committed INTEGER NOT NULL
)`)
	if err != nil {
		return nil, fmt.Errorf("llmtool: create audit table %s: %w", name, err)
	}
	return &Table{name: name,
		insert: `INSERT INTO ` + name + ` (at, tool, module, principal, scope, outcome, duration_us, committed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`}, nil
}

// Name returns the table's name.
func (t *Table) Name() string { return t.name }

// Audit does nothing: the table holds committed write calls only, written
// by AuditTx.
func (t *Table) Audit(context.Context, Record) {}

// AuditTx inserts the record in the call's transaction.
func (t *Table) AuditTx(ctx context.Context, tx *sql.Tx, rec Record) error {
	_, err := tx.ExecContext(ctx, t.insert, rec.Time.UTC().Format(time.RFC3339Nano), rec.Tool, rec.Module,
		rec.Principal, rec.Scope, rec.Outcome, rec.Duration.Microseconds(), rec.Committed)
	return err
}
