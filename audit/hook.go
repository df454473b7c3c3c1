package audit

import (
	"context"
	"database/sql"
	"time"
)

// Record describes one call for the audit log. It never holds the
// arguments.
type Record struct {
	Time      time.Time     // when the call started
	Tool      string        // the tool's name as called
	Module    string        // the module of the tool, "" if unknown
	Principal string        // principal ID, "" if none
	Tenant    string        // the call's tenant
	Outcome   string        // OutcomeOK, OutcomeRefused, OutcomePanic, OutcomeInputRequired or an error kind such as "not_found"
	Duration  time.Duration // from the start of Invoke to the record
	Write     bool          // a write tool
	Committed bool          // its transaction committed
	// Attempts counts the runs of a write call's handler: 1, or more when
	// a run lost to other writes (PostgreSQL's serialization failure or
	// deadlock, SQLite's write lock held by another process) and the
	// registry ran it again on a fresh transaction. 0 for a read call or
	// a call that did not run.
	Attempts int
	// RetryWait is the time a write call lost to other writes: from the
	// start of its first run to the start of its last, the runs that
	// rolled back and the pauses between them. 0 when it ran once.
	RetryWait time.Duration
	// Approval is the call's approval step, "" for a call without one:
	// "requested" (it needed a person's approval and saved nothing),
	// "approved" (approved, and the commit matched the approved preview),
	// "changed" (approved, but the data had changed: nothing saved, a new
	// request), "denied", "refused" (an expired, used or foreign token),
	// or "dry_run". Principal is who asked, approved or denied.
	Approval string
	// Changeset is the call's entry in the history of changes
	// (llmtool.Options.Changesets; changeset.List), 0 for a call that
	// stored none.
	Changeset int64
}

// Outcomes of Record besides the error kinds (llmtool.Kind.String).
const (
	// OutcomeOK is a call that succeeded.
	OutcomeOK = "ok"
	// OutcomeRefused is a call the policy refused before it ran: switched
	// off, writes off in the tenant, no principal, or not authorized.
	OutcomeRefused = "refused"
	// OutcomePanic is a call whose handler panicked.
	OutcomePanic = "panic"
	// OutcomeInputRequired is a call that ended to ask its client for
	// input (ask.ErrInputRequired): it changed nothing, and the client's
	// retry with the answers is a call of its own.
	OutcomeInputRequired = "input_required"
)

// Sink receives the audit record of every call. Audit runs
// synchronously at the end of llmtool.Registry.Invoke, so it should be quick; a panic in it
// is recovered and logged.
//
// Every call, refused or run, yields one Record, delivered to the
// registry's audit sinks after the call finished. By default the one sink is
// the registry's logger (an Info line "llmtool call" per call, as Slog writes). Records
// never hold the arguments or the result, which may carry personal data.
//
// This package has the sinks a host lists in llmtool.Options.Audit: Slog,
// the log line of the default, and Table, which keeps a row per
// committed write in the host's database inside the write's own
// transaction (a TxSink). llmtool.Options.Audit replaces the default
// logger sink; list Slog among the sinks to keep it.
type Sink interface {
	Audit(ctx context.Context, rec Record)
}

// Func adapts a function to the Sink interface.
type Func func(ctx context.Context, rec Record)

// Audit calls f.
func (f Func) Audit(ctx context.Context, rec Record) { f(ctx, rec) }

// TxSink is an Sink that also records each write call that is
// about to commit, inside the call's transaction. AuditTx runs after the
// handler succeeded and its changeset was stored, before the commit, with Outcome OutcomeOK and
// Committed true; if it returns an error the call rolls back and fails. The
// same call's record then also reaches Audit, as for every call.
type TxSink interface {
	Sink
	AuditTx(ctx context.Context, tx *sql.Tx, rec Record) error
}
