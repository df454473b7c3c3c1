package llmtool_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
)

// The sinks themselves are in package audit, with their tests; these test
// the hook: Options.Audit replaces the default sink, a panicking sink is
// recovered, and the default comes back without Options.Audit.

type recorder struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (r *recorder) Audit(_ context.Context, rec audit.Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

// all returns the records so far.
func (r *recorder) all() []audit.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

func TestAuditSinks(t *testing.T) {
	t.Parallel()
	// Two registries over one database, sharing one logger, each with
	// its own sinks.
	db := openDB(t)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	rec := &recorder{}
	reg, _ := newRegOpts(t, db, &llmtool.Options{
		ValidateOutput: true,
		Logger:         logger,
		Audit: []audit.Sink{rec,
			audit.Func(func(context.Context, audit.Record) { panic("sink bug") })},
	}, itemTools)
	require.False(t, invoke(reg, "get_item", `{"id":1}`).IsError)
	require.Len(t, rec.recs, 1)
	require.NotContains(t, logs.String(), "llmtool call", "the default sink was replaced")
	require.Contains(t, logs.String(), `msg="llmtool: audit sink panicked" tool=get_item panic="sink bug"`)

	reg, _ = newRegOpts(t, db, &llmtool.Options{ValidateOutput: true, Logger: logger}, itemTools) // Audit nil
	require.False(t, invoke(reg, "get_item", `{"id":1}`).IsError)
	require.Contains(t, logs.String(), `msg="llmtool call" tool=get_item`, "the default sink is back")
}
