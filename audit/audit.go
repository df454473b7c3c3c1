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

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/migrate"
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
	attrs := []slog.Attr{
		slog.String("tool", rec.Tool), slog.String("module", rec.Module),
		slog.String("principal", rec.Principal), slog.String("tenant", rec.Tenant),
		slog.String("outcome", rec.Outcome), slog.Duration("duration", rec.Duration),
		slog.Bool("write", rec.Write), slog.Bool("committed", rec.Committed),
	}
	if rec.Attempts > 1 {
		attrs = append(attrs, slog.Int("attempts", rec.Attempts), slog.Duration("retry_wait", rec.RetryWait))
	}
	if rec.Approval != "" {
		attrs = append(attrs, slog.String("approval", rec.Approval))
	}
	l.LogAttrs(ctx, slog.LevelInfo, "llmtool call", attrs...)
}

// Table is an [TxSink] that keeps one row per committed write
// call in a table of the host's database. Create it with [NewTable] and
// list it in Options.Audit. Only committed writes get a row; reads,
// refusals and failed calls go to the other sinks.
//
// The table's columns are at (RFC 3339 UTC text), tool, module, principal,
// scope, outcome, duration_us, committed (1), attempts (the runs of the
// handler; more than 1 after PostgreSQL asked for a retry), approval
// ("approved" for a change a person approved, "" for one without
// approval) and changeset (the call's entry in the history of changes,
// 0 for none).
type Table struct {
	insert string // the INSERT of a record into the table NewTable named
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// NewTable creates the audit table name in db, or brings it to the current
// version, and returns the sink that writes it; name "" means
// "llmtool_audit". db is the registry's database (SQLite or PostgreSQL),
// since rows are written in its calls' transactions. The table's versions
// are recorded in llmtool_migrations; creating or migrating it is
// idempotent and safe from several replicas at once.
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
	e, err := engine.Detect(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("llmtool: audit table %s: %w", name, err)
	}
	if err := migrate.Apply(ctx, db, e, name, tableMigrations(name)); err != nil {
		return nil, err
	}
	return &Table{
		insert: `INSERT INTO ` + name + ` (at, tool, module, principal, scope, outcome, duration_us, committed, attempts, approval, changeset) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`}, nil
}

// tableMigrations are the versions of an audit table. Append a step to
// change it; never edit a released one.
func tableMigrations(name string) []migrate.Step {
	create := func(bigint string) string {
		return `CREATE TABLE IF NOT EXISTS ` + name + ` (
	at TEXT NOT NULL,
	tool TEXT NOT NULL,
	module TEXT NOT NULL,
	principal TEXT NOT NULL,
	scope TEXT NOT NULL,
	outcome TEXT NOT NULL,
	duration_us ` + bigint + ` NOT NULL,
	committed INTEGER NOT NULL
)`
	}
	attempts := `ALTER TABLE ` + name + ` ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1`
	approval := `ALTER TABLE ` + name + ` ADD COLUMN approval TEXT NOT NULL DEFAULT ''`
	changeset := func(bigint string) string {
		return `ALTER TABLE ` + name + ` ADD COLUMN changeset ` + bigint + ` NOT NULL DEFAULT 0`
	}
	return []migrate.Step{
		{SQLite: []string{create("INTEGER")}, Postgres: []string{create("BIGINT")}},
		{SQLite: []string{attempts}, Postgres: []string{attempts}},
		{SQLite: []string{approval}, Postgres: []string{approval}},
		{SQLite: []string{changeset("INTEGER")}, Postgres: []string{changeset("BIGINT")}},
	}
}

// Audit does nothing: the table holds committed write calls only, written
// by AuditTx.
func (t *Table) Audit(context.Context, Record) {}

// AuditTx inserts the record in the call's transaction.
func (t *Table) AuditTx(ctx context.Context, tx *sql.Tx, rec Record) error {
	committed := 0
	if rec.Committed {
		committed = 1
	}
	_, err := tx.ExecContext(ctx, t.insert, rec.Time.UTC().Format(time.RFC3339Nano), rec.Tool, rec.Module,
		rec.Principal, rec.Tenant, rec.Outcome, rec.Duration.Microseconds(), committed, max(rec.Attempts, 1), rec.Approval, rec.Changeset)
	return err
}
