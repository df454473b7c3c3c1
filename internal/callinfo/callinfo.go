// Package callinfo carries what llmtool's own packages share about a call
// without public API for it: ReadCtx.Value answers Key with an Info, and
// the adapters hand the registry a Reporter for the client.
package callinfo

import (
	"context"
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
}

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
