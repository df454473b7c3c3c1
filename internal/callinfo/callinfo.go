// Package callinfo carries what llmtool's own packages share about a call
// without public API for it: ReadCtx.Value answers Key with an Info, and
// the adapters hand the registry a Reporter for the client.
package callinfo

import (
	"context"
	"errors"
	"log/slog"
)

// Key is the context key ReadCtx.Value answers with the call's Info.
type Key struct{}

// Info describes the call a handler context belongs to.
type Info struct {
	Tool  string // the tool's name
	Write bool   // a write tool's call: its transaction holds the writer
	// Late reports a use after the handler returned (logged and counted
	// by the registry) and returns the error to give; nil while the
	// handler runs.
	Late func(op string) error
	// Fail makes err the call's outcome, whatever the handler returns
	// afterwards: the transaction rolls back and nothing commits. An Asker
	// that answers by running the handler again calls it with an error
	// wrapping ErrInputRequired. Nil after the handler returned.
	Fail func(err error)
	// Run is distinct for each run of the handler (the registry may run a
	// handler again within one call, on a fresh transaction), so an Asker
	// that numbers its requests starts again when it changes.
	Run any
}

// ErrInputRequired is ask.ErrInputRequired, here so that the registry can
// tell a call that ended to ask its client from one that failed.
var ErrInputRequired = errors.New("ask: the call ends here and runs again once the client answered")

// Reporter receives a handler's progress and log messages for the client.
// Adapters set one per call with WithReporter: MCP turns them into
// notifications, chat into progress events.
type Reporter interface {
	Progress(ctx context.Context, done, total float64, message string)
	Log(ctx context.Context, level slog.Level, message string)
}

type reporterKey struct{}

// WithReporter returns a context whose calls report progress and log
// messages to r.
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// ReporterFrom returns the Reporter set by WithReporter, or nil.
func ReporterFrom(ctx context.Context) Reporter {
	r, _ := ctx.Value(reporterKey{}).(Reporter)
	return r
}
