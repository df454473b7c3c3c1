package llmtool

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	sqlitedb "github.com/llmtool/llmtool/sqlite"

	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"
)

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

// newSpinRegistry is a registry on a fresh SQLite file with the spinning
// tools.
func newSpinRegistry(t testing.TB) *Registry {
	t.Helper()
	registerSignalFunc()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "spin.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO items VALUES (1, 'apple')`)
	require.NoError(t, err)
	reg, err := NewRegistry(db, &Options{Logger: slog.New(slog.DiscardHandler)}, DefineTools("spin", spin, spinRows, countItems))
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	return reg
}

// TestCancellation: a running query is stopped when the call's context
// ends (the driver watches each statement's context), the call reports
// the cancellation or the timeout, and the connection then serves the
// next call.
func TestCancellation(t *testing.T) {
	t.Parallel()
	cancelled := `{"error":"The call to %s was cancelled before it finished; nothing was saved. Call it again if it is still needed."}`
	timedOut := `{"error":"The call to %s timed out before it finished; nothing was saved. Call it again, with less work if possible."}`
	for _, tool := range []string{"spin", "spin_rows"} {
		for _, deadline := range []bool{false, true} {
			name, want := tool+", cancelled", fmt.Sprintf(cancelled, tool)
			if deadline {
				name, want = tool+", timed out", fmt.Sprintf(timedOut, tool)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				reg := newSpinRegistry(t)
				key, started := registerSignal(t)
				ctx, cancel := context.WithCancelCause(context.Background())
				end := func() { cancel(context.Canceled) }
				if deadline {
					// A deadline far away, cut short once the query runs:
					// the context ends with DeadlineExceeded, as on a
					// timeout.
					end = func() { cancel(context.DeadlineExceeded) }
					ctx = deadlineCtx{ctx}
				}
				defer cancel(nil)
				go func() {
					<-started
					end()
				}()
				args, err := json.Marshal(spinIn{Key: key})
				require.NoError(t, err)
				res := reg.Invoke(ctx, Call{Tool: tool, Args: args})
				require.True(t, res.IsError)
				require.JSONEq(t, want, string(res.JSON), "%v", res.Err)

				next := reg.Invoke(context.Background(), Call{Tool: "count_items", Args: []byte(`{}`)})
				require.False(t, next.IsError, string(next.JSON))
				require.JSONEq(t, `{"n":1}`, string(next.JSON))
			})
		}
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
