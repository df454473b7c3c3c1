package llmtool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/internal/callinfo"
)

// auditSinks is a registry's sink list, with the transactional ones apart.
type auditSinks struct {
	all []audit.Sink
	tx  []audit.TxSink
}

// setAuditSinks replaces the registry's audit sinks, the default logger
// sink included. With no sinks it restores the default.
func (r *Registry) setAuditSinks(sinks ...audit.Sink) {
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
		if t, ok := s.(audit.TxSink); ok {
			as.tx = append(as.tx, t)
		}
	}
	r.audits.Store(as)
}

func (r *Registry) sinks() *auditSinks {
	if as := r.audits.Load(); as != nil {
		return as
	}
	return &auditSinks{all: []audit.Sink{registrySlog{r}}}
}

// registrySlog is the default sink: the registry's current logger. It
// writes the line audit.Slog writes, which hosts use to keep it beside
// their own sinks.
type registrySlog struct{ r *Registry }

func (s registrySlog) Audit(ctx context.Context, rec audit.Record) {
	audit.Slog(s.r.logger()).Audit(ctx, rec)
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
		return audit.OutcomeOK
	case refused:
		return audit.OutcomeRefused
	}
	var p *panicError
	if errors.As(err, &p) {
		return audit.OutcomePanic
	}
	if errors.Is(err, callinfo.ErrInputRequired) {
		return audit.OutcomeInputRequired
	}
	return KindOf(err).String()
}

// audit hands rec to every sink.
func (r *Registry) audit(ctx context.Context, rec audit.Record) {
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

// auditHooks plug the transactional audit sinks into the write path
// (hooks.go): before commit, last, the record is written in the write's
// transaction, so it commits or rolls back with the write. The sinks can
// change while the registry serves, so the hook asks each time.
var auditHooks = writeHooks{beforeCommit: []func(context.Context, *callState) error{
	func(ctx context.Context, cs *callState) error { return cs.reg.auditTx(ctx, cs) },
}}

// auditTx records a write call that is about to commit in its own
// transaction, with every transactional sink; ctx is the call's.
func (r *Registry) auditTx(ctx context.Context, cs *callState) error {
	as := r.audits.Load()
	if as == nil || len(as.tx) == 0 || cs.wtx == nil {
		return nil
	}
	start, _ := ctx.Value(auditStartKey{}).(time.Time)
	if start.IsZero() {
		start = time.Now()
	}
	s := &cs.tool.spec
	rec := audit.Record{Time: start, Tool: s.Name, Module: s.Module, Principal: principalID(ctx), Tenant: TenantFrom(ctx),
		Outcome: audit.OutcomeOK, Duration: time.Since(start), Write: true, Committed: true,
		Attempts: cs.retry.attempt, RetryWait: cs.retry.wait}
	if p := cs.preview; p != nil && p.mode == previewApprove {
		rec.Approval = "approved" // the approved preview matched
	}
	if set := cs.changes; set != nil {
		rec.Changeset = set.ID
	}
	for _, t := range as.tx {
		if err := t.AuditTx(ctx, cs.wtx.Tx, rec); err != nil {
			return fmt.Errorf("llmtool: audit record in the call's transaction: %w", err)
		}
	}
	return nil
}
