package llmtool

import (
	"context"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
)

// BareRetry is a registry's retry policy (retry.go) for bare write
// transactions, for BenchmarkContention's baseline: runs again with the
// same pauses, the same deadline and the same turns, among the calls of
// one BareRetry as among a registry's.
type BareRetry struct{ turns turns }

// NewBareRetry returns a BareRetry.
func NewBareRetry() *BareRetry { return &BareRetry{turns: newTurns()} }

// Run runs f, one run of a write transaction, as a registry runs a write
// call: again while it fails with an error engine.Retryable reports, until
// ctx's deadline or the default RetryFor. It returns the runs and the
// time lost (audit.Record's Attempts and RetryWait).
func (b *BareRetry) Run(ctx context.Context, f func() error) (runs int, wait time.Duration, err error) {
	p := newRetry(ctx, defaultRetryFor)
	err = p.do(ctx, &b.turns, "bare_write", func() (bool, error) {
		err := f()
		return err != nil && engine.Retryable(err), err
	})
	return p.runs, p.wait(), err
}
