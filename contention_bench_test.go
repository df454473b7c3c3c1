package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/internal/pgtest"
)

// hotBump reads the counter and writes it back plus one: bump without the
// record of its call, the statements of BenchmarkContention's baseline.
var hotBump = llmtool.Write("hot_bump", "Add one to the counter.", func(c *llmtool.WriteCtx, _ struct{}) (BumpOut, error) {
	var n int
	if err := c.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
		return BumpOut{}, fmt.Errorf("read n: %w", err)
	}
	if _, err := c.Exec(`UPDATE counter SET n = $1 WHERE id = 1`, n+1); err != nil {
		return BumpOut{}, fmt.Errorf("write n: %w", err)
	}
	return BumpOut{N: n + 1}, nil
})

// bareBump is hotBump by hand: BEGIN ISOLATION LEVEL SERIALIZABLE, the
// SELECT, the UPDATE, COMMIT, and the result's JSON.
func bareBump(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("read n: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE counter SET n = $1 WHERE id = 1`, n+1); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("write n: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = json.Marshal(BumpOut{N: n + 1})
	return err
}

// BenchmarkContention: eight writers on one hot row of PostgreSQL, in the
// same run: Invoke of hot_bump against bareBump run again with the
// registry's retry policy (llmtool.BareRetry: the same pauses, deadline
// and turns). Each round, each path makes 8×25 calls from eight
// goroutines, the paths in a shuffled order. It reports Invoke's
// throughput over the bare loop's (tput/bare, the ratio of their total
// times; the target: ≥ 0.9), each path's wait per call (from the
// call to its commit) at p50, p99 and the maximum, in milliseconds, and
// its runs again per call.
//
//	LLMTOOL_TEST_POSTGRES=postgres://... go test -run '^$' -bench '^BenchmarkContention$' -benchtime 20x -count 6 .
func BenchmarkContention(b *testing.B) {
	const clients, perClient = 8, 25
	db := counterDB(b, openPGPool(b, pgtest.DSN(b)))
	db.SetMaxOpenConns(pgConns)
	idleConns(b, db, pgConns)
	var invokeRuns atomic.Int64
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Audit:  []audit.Sink{audit.Func(func(_ context.Context, r audit.Record) { invokeRuns.Add(int64(r.Attempts)) })},
	}, llmtool.DefineTools("hot", hotBump))
	require.NoError(b, err)
	b.Cleanup(func() { reg.Close() })
	enableWrites(b, reg, context.Background())

	ctx := context.Background()
	bare := llmtool.NewBareRetry()
	var bareRuns atomic.Int64
	call := llmtool.Call{Tool: "hot_bump", Args: []byte(`{}`)}
	paths := []func() error{
		func() error {
			runs, _, err := bare.Run(ctx, func() error { return bareBump(ctx, db) })
			bareRuns.Add(int64(runs))
			return err
		},
		func() error {
			if res := reg.Invoke(ctx, call); res.IsError {
				return res.Err
			}
			return nil
		},
	}
	names := []string{"bare", "invoke"}
	waits := make([][]time.Duration, len(paths))
	var mu sync.Mutex
	// concurrently makes clients·perClient calls of path j from clients
	// goroutines, keeping their waits when keep is set.
	concurrently := func(j int, keep bool) {
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				own := make([]time.Duration, 0, perClient)
				for range perClient {
					start := time.Now()
					if err := paths[j](); err != nil {
						b.Error(err) // b.Fatal may not run on the writers' goroutines
					}
					own = append(own, time.Since(start))
				}
				if keep {
					mu.Lock()
					waits[j] = append(waits[j], own...)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	for j := range paths { // warm both paths (pgx prepares statements per connection)
		concurrently(j, false)
	}
	invokeRuns.Store(0)
	bareRuns.Store(0)
	t := shuffledRounds(b, len(paths), func(j int) { concurrently(j, true) })

	t.report(b, 0, 1, "tput/bare") // calls per time: the bare loop's time over Invoke's
	calls := float64(len(t.times[0]) * clients * perClient)
	for j, name := range names {
		s := slices.Sorted(slices.Values(waits[j]))
		ms := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))]) / float64(time.Millisecond) }
		b.ReportMetric(ms(.5), "ms-p50-"+name)
		b.ReportMetric(ms(.99), "ms-p99-"+name)
		b.ReportMetric(ms(1), "ms-max-"+name)
		b.ReportMetric(calls/t.sum(j).Seconds(), "calls/s-"+name)
	}
	b.ReportMetric(float64(bareRuns.Load())/calls-1, "retries/call-bare")
	b.ReportMetric(float64(invokeRuns.Load())/calls-1, "retries/call-invoke")

	var n int
	require.NoError(b, db.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n))
	require.Equal(b, 2*clients*perClient+2*int(calls), n, "every call's increment once, none failed")
}
