package llmtool

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"

	sqlitedb "github.com/llmtool/llmtool/sqlite"
	"github.com/llmtool/llmtool/sqlitehook"
)

// countInterrupts wraps sqlitehook.Interrupt, the public option's
// modernc.org/sqlite hook, to count the interrupts it makes.
func countInterrupts(count *atomic.Int32) func(any) func() {
	return func(dc any) func() {
		interrupt := sqlitehook.Interrupt(dc)
		if interrupt == nil {
			return nil
		}
		return func() {
			count.Add(1)
			interrupt()
		}
	}
}

// The signal function tells a test that a statement is running: its first
// call closes the channel registered for the call's argument.
var (
	signalOnce sync.Once
	signals    sync.Map // string -> chan struct{}
)

func registerSignal(t *testing.T) (name string, started chan struct{}) {
	registerSignalFunc()
	started = make(chan struct{})
	signals.Store(t.Name(), started)
	return t.Name(), started
}

// registerSignalFunc registers the signal function with the driver, before
// the connections that use it open.
func registerSignalFunc() {
	signalOnce.Do(func() {
		sqlite.MustRegisterScalarFunction("llmtool_test_signal", 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			if ch, ok := signals.LoadAndDelete(args[0].(string)); ok {
				close(ch.(chan struct{}))
			}
			return args[1], nil
		})
	})
}

type spinIn struct {
	Key string `json:"key"`
}

type countOut struct {
	N int64 `json:"n"`
}

// spin runs a query that never ends unless interrupted: it counts an
// unbounded recursive sequence, signalling once it runs.
var spin = Read("spin", "Count forever.", func(c *ReadCtx, in spinIn) (countOut, error) {
	var out countOut
	err := c.QueryRow(`WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s)
		SELECT count(*) FROM s WHERE llmtool_test_signal(?, x) < 0`, in.Key).Scan(&out.N)
	return out, err
})

// spinRows is spin through Query and rows.Next.
var spinRows = Read("spin_rows", "List forever.", func(c *ReadCtx, in spinIn) (countOut, error) {
	rows, err := c.Query(`WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s)
		SELECT x FROM s WHERE llmtool_test_signal(?, x) < 0`, in.Key)
	if err != nil {
		return countOut{}, err
	}
	defer rows.Close()
	var out countOut
	for rows.Next() {
		out.N++
	}
	return out, rows.Err()
})

var countItems = Read("count_items", "Count the items.", func(c *ReadCtx, _ struct{}) (countOut, error) {
	var out countOut
	err := c.QueryRow(`SELECT count(*) FROM items`).Scan(&out.N)
	return out, err
})

// newHookRegistry is a registry on a fresh SQLite file whose read calls
// are interrupted through Options.Interrupt (nil: the driver's watcher per
// statement).
func newHookRegistry(t testing.TB, interrupt func(any) func()) *Registry {
	t.Helper()
	registerSignalFunc()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "hook.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO items VALUES (1, 'apple')`)
	require.NoError(t, err)
	opts := &Options{Logger: slog.New(slog.DiscardHandler), Interrupt: interrupt}
	reg, err := NewRegistry(db, opts, DefineTools("hook", spin, spinRows, countItems))
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	return reg
}

// TestCancellationHook: a running query is stopped when the call's context
// ends, with the hook's one interrupt (Options.Interrupt), with the
// driver's watcher (no hook, or a hook that declines the connection), and
// the call reports the same cancellation either way; the connection then
// serves the next call.
func TestCancellationHook(t *testing.T) {
	t.Parallel()
	cancelled := `{"error":"The call to %s was cancelled before it finished; nothing was saved. Call it again if it is still needed."}`
	timedOut := `{"error":"The call to %s timed out before it finished; nothing was saved. Call it again, with less work if possible."}`
	const (
		hook     = "hook"
		watcher  = "driver watcher"
		declined = "hook declined" // Interrupt returns nil: not its driver
	)
	var cases []struct {
		name, tool, mode string
		deadline         bool
		want             string
	}
	for _, tool := range []string{"spin", "spin_rows"} {
		for _, mode := range []string{hook, watcher, declined} {
			for _, deadline := range []bool{false, true} {
				name, want := tool+", "+mode+", ", fmt.Sprintf(cancelled, tool)
				if deadline {
					name, want = name+"timed out", fmt.Sprintf(timedOut, tool)
				} else {
					name += "cancelled"
				}
				cases = append(cases, struct {
					name, tool, mode string
					deadline         bool
					want             string
				}{name, tool, mode, deadline, want})
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var fired, asked atomic.Int32
			var in func(any) func()
			switch tc.mode {
			case hook:
				in = countInterrupts(&fired)
			case declined:
				in = func(any) func() { asked.Add(1); return nil }
			}
			reg := newHookRegistry(t, in)
			key, started := registerSignal(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			end := func() { cancel(context.Canceled) }
			if tc.deadline {
				// A deadline far away, cut short once the query runs: the
				// context ends with DeadlineExceeded, as on a timeout.
				dctx, dcancel := context.WithCancelCause(context.Background())
				ctx, cancel = dctx, dcancel
				end = func() { dcancel(context.DeadlineExceeded) }
				ctx = deadlineCtx{ctx}
			}
			defer cancel(nil)
			go func() {
				<-started
				end()
			}()
			args, err := json.Marshal(spinIn{Key: key})
			require.NoError(t, err)
			res := reg.Invoke(ctx, Call{Tool: tc.tool, Args: args})
			require.True(t, res.IsError)
			require.JSONEq(t, tc.want, string(res.JSON), "%v", res.Err)
			switch tc.mode {
			case hook:
				require.EqualValues(t, 1, fired.Load(), "one interrupt, by the call's hook")
			case declined:
				require.EqualValues(t, 1, asked.Load(), "asked once, for the one reserved connection")
			}

			next := reg.Invoke(context.Background(), Call{Tool: "count_items", Args: []byte(`{}`)})
			require.False(t, next.IsError, string(next.JSON))
			require.JSONEq(t, `{"n":1}`, string(next.JSON))
			require.NotContains(t, string(next.JSON), `"error"`)
		})
	}
}

// deadlineCtx reports its cause as its error, so a test can end it with
// DeadlineExceeded without waiting for a clock.
type deadlineCtx struct{ context.Context }

func (c deadlineCtx) Err() error {
	if c.Context.Err() == nil {
		return nil
	}
	return context.Cause(c.Context)
}

// The benchmarks compare a one-row read Invoke under context.Background
// (no cancellation: neither database/sql nor the driver watches it), under
// a cancellable context with the driver's watcher per statement (the
// registry has no Interrupter), and under a cancellable context with the
// call's one hook (Options.Interrupt: sqlitehook.Interrupt).

type hookBenchPath struct {
	name string
	reg  *Registry
	ctx  context.Context
}

func newHookBench(b *testing.B) []hookBenchPath {
	plain := newHookRegistry(b, nil)
	hooked := newHookRegistry(b, sqlitehook.Interrupt)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	paths := []hookBenchPath{
		{"background", plain, context.Background()},
		{"cancellable", plain, ctx},
		{"cancellable+hook", hooked, ctx},
	}
	for _, p := range paths {
		res := p.reg.Invoke(p.ctx, Call{Tool: "count_items", Args: []byte(`{}`)})
		require.False(b, res.IsError, string(res.JSON))
		require.JSONEq(b, `{"n":1}`, string(res.JSON))
	}
	return paths
}

// BenchmarkCancellableRead measures each path on its own (allocations).
func BenchmarkCancellableRead(b *testing.B) {
	for _, p := range newHookBench(b) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res := p.reg.Invoke(p.ctx, Call{Tool: "count_items", Args: []byte(`{}`)}); res.IsError {
					b.Fatal(string(res.JSON))
				}
			}
		})
	}
}

// BenchmarkCancellableReadRatio runs the three paths one call each per
// round, in an order shuffled every round by a seeded generator, and
// reports the ratios of their median call times.
func BenchmarkCancellableReadRatio(b *testing.B) {
	paths := newHookBench(b)
	times := make([][]time.Duration, len(paths))
	rng := rand.New(rand.NewPCG(2026, 14))
	order := []int{0, 1, 2}
	args := []byte(`{}`)
	for b.Loop() {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, j := range order {
			t0 := time.Now()
			res := paths[j].reg.Invoke(paths[j].ctx, Call{Tool: "count_items", Args: args})
			times[j] = append(times[j], time.Since(t0))
			if res.IsError {
				b.Fatal(string(res.JSON))
			}
		}
	}
	median := func(i int) float64 {
		s := slices.Clone(times[i])
		slices.Sort(s)
		return float64(s[len(s)/2])
	}
	b.ReportMetric(median(1)/median(0), "cancellable/background-p50")
	b.ReportMetric(median(2)/median(0), "hook/background-p50")
	b.ReportMetric(median(2)/median(1), "hook/cancellable-p50")
}
