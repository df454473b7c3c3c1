package llmtool

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// AuditRecord describes one call for the audit log. It never holds the
// arguments.
type AuditRecord struct {
	Time      time.Time     // when the call started
	Tool      string        // the tool's name as called
	Module    string        // the module of the tool, "" if unknown
	Principal string        // principal ID, "" if none
	Scope     string        // the call's scope
	Outcome   string        // OutcomeOK, OutcomeRefused, OutcomePanic or an error Kind such as "not_found"
	Duration  time.Duration // from the start of Invoke to the record
	Write     bool          // a write tool
	Committed bool          // its transaction committed
}

// Outcomes of AuditRecord besides the error kinds (Kind.String).
const (
	// OutcomeOK is a call that succeeded.
	OutcomeOK = "ok"
	// OutcomeRefused is a call the policy refused before it ran: switched
	// off, writes off in the scope, no principal, or not authorized.
	OutcomeRefused = "refused"
	// OutcomePanic is a call whose handler panicked.
	OutcomePanic = "panic"
)

// AuditSink receives the audit record of every call. Audit runs
// synchronously at the end of Invoke, so it should be quick; a panic in it
// is recovered and logged.
//
// Every call, refused or run, yields one AuditRecord, delivered to the
// registry's audit sinks after the call finished. By default the one sink is
// the registry's logger (an Info line "llmtool call" per call). Records
// never hold the arguments or the result, which may carry personal data.
//
// Package audit has the sinks a host lists in Options.Audit: audit.Slog,
// the log line of the default, and audit.Table, which keeps a row per
// committed write in the host's database inside the write's own
// transaction (a TxAuditSink). Options.Audit replaces the default logger
// sink; list audit.Slog among the sinks to keep it.
type AuditSink interface {
	Audit(ctx context.Context, rec AuditRecord)
}

// AuditFunc adapts a function to the AuditSink interface.
type AuditFunc func(ctx context.Context, rec AuditRecord)

// Audit calls f.
func (f AuditFunc) Audit(ctx context.Context, rec AuditRecord) { f(ctx, rec) }

// TxAuditSink is an AuditSink that also records each write call that is
// about to commit, inside the call's transaction. AuditTx runs after the
// handler succeeded and before the commit, with Outcome OutcomeOK and
// Committed true; if it returns an error the call rolls back and fails. The
// same call's record then also reaches Audit, as for every call.
type TxAuditSink interface {
	AuditSink
	AuditTx(ctx context.Context, tx *sql.Tx, rec AuditRecord) error
}

// auditSinks is a registry's sink list, with the transactional ones apart.
type auditSinks struct {
	all []AuditSink
	tx  []TxAuditSink
}

// setAuditSinks replaces the registry's audit sinks, the default logger
// sink included. With no sinks it restores the default.
func (r *Registry) setAuditSinks(sinks ...AuditSink) {
	if len(sinks) == 0 {
		r.audits.Store(nil)
		return
	}
	as := &auditSinks{}
	for _, s := range sinks {
		if s == nil {
			continue
		}
		as.all = append(as.all, s)
		if t, ok := s.(TxAuditSink); ok {
			as.tx = append(as.tx, t)
		}
	}
	r.audits.Store(as)
}

func (r *Registry) sinks() *auditSinks {
	if as := r.audits.Load(); as != nil {
		return as
	}
	return &auditSinks{all: []AuditSink{registrySlog{r}}}
}

// registrySlog is the default sink: the registry's current logger. It
// writes the line audit.Slog writes, which hosts use to keep it beside
// their own sinks.
type registrySlog struct{ r *Registry }

func (s registrySlog) Audit(ctx context.Context, rec AuditRecord) { logRecord(ctx, s.r.logger(), rec) }

func logRecord(ctx context.Context, l *slog.Logger, rec AuditRecord) {
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	l.LogAttrs(ctx, slog.LevelInfo, "llmtool call",
		slog.String("tool", rec.Tool), slog.String("module", rec.Module),
		slog.String("principal", rec.Principal), slog.String("scope", rec.Scope),
		slog.String("outcome", rec.Outcome), slog.Duration("duration", rec.Duration),
		slog.Bool("write", rec.Write), slog.Bool("committed", rec.Committed))
}

func principalID(ctx context.Context) string {
	if p := PrincipalFrom(ctx); p != nil {
		return p.ID
	}
	return ""
}

func outcome(err error, refused bool) string {
	switch {
	case err == nil:
		return OutcomeOK
	case refused:
		return OutcomeRefused
	}
	var p *PanicError
	if errors.As(err, &p) {
		return OutcomePanic
	}
	return KindOf(err).String()
}

// audit hands rec to every sink.
func (r *Registry) audit(ctx context.Context, rec AuditRecord) {
	for _, s := range r.sinks().all {
		func() {
			defer func() {
				if p := recover(); p != nil {
					r.logger().Error("llmtool: audit sink panicked", "tool", rec.Tool, "panic", fmt.Sprint(p))
				}
			}()
			s.Audit(ctx, rec)
		}()
	}
}

type auditStartKey struct{}

// withAuditStart marks ctx with the call's start when a transactional sink
// will need it.
func (r *Registry) withAuditStart(ctx context.Context, start time.Time) context.Context {
	if as := r.audits.Load(); as != nil && len(as.tx) > 0 {
		return context.WithValue(ctx, auditStartKey{}, start)
	}
	return ctx
}

// auditTx records a write call that is about to commit in its own
// transaction, with every transactional sink.
func (r *Registry) auditTx(c *ReadCtx) error {
	as := r.audits.Load()
	if as == nil || len(as.tx) == 0 || c.tx == nil {
		return nil
	}
	start, _ := c.Value(auditStartKey{}).(time.Time)
	if start.IsZero() {
		start = time.Now()
	}
	s := &c.call.tool.spec
	rec := AuditRecord{Time: start, Tool: s.Name, Module: s.Module, Principal: principalID(c), Scope: ScopeFrom(c),
		Outcome: OutcomeOK, Duration: time.Since(start), Write: true, Committed: true}
	for _, t := range as.tx {
		if err := t.AuditTx(c.parent, c.tx, rec); err != nil {
			return fmt.Errorf("llmtool: audit record in the call's transaction: %w", err)
		}
	}
	return nil
}
