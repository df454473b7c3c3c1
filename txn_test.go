package llmtool_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

func TestOpenSQLitePragmas(t *testing.T) {
	t.Parallel()
	db, err := llmtool.OpenSQLite("sqlite", filepath.Join(t.TempDir(), "p.db"))
	require.NoError(t, err)
	defer db.Close()
	var mode string
	var fk, busy int
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.NoError(t, db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk))
	require.NoError(t, db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy))
	require.Equal(t, "wal", mode)
	require.Equal(t, 1, fk)
	require.Equal(t, 10000, busy)

	_, err = llmtool.OpenSQLite("sqlite", filepath.Join(t.TempDir(), "missing-dir", "x.db"))
	require.ErrorContains(t, err, "llmtool: open ")
}

// Reads run beside a write in progress (WAL) and see the last committed
// state, not the write's uncommitted rows.
func TestReadsRunBesideWriter(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	slowAdd := llmtool.Write("slow_add", "Add slowly.",
		func(c *llmtool.WriteCtx, in AddItemIn) (struct{}, error) {
			if _, err := c.Exec(`INSERT INTO items (name) VALUES (?)`, in.Name); err != nil {
				return struct{}{}, err
			}
			close(entered)
			<-release
			return struct{}{}, nil
		})
	type countOut struct {
		N int `json:"n"`
	}
	count := llmtool.Read("count_items", "Count items.",
		func(c *llmtool.ReadCtx, _ struct{}) (countOut, error) {
			var out countOut
			return out, c.QueryRow(`SELECT count(*) FROM items`).Scan(&out.N)
		})
	db := openDB(t)
	reg := newRegistry(t, db, llmtool.DefineTools("slow", slowAdd, count))
	ctx := context.Background()
	enableWrites(t, reg, ctx)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		res := reg.Invoke(ctx, llmtool.Call{Tool: "slow_add", Args: []byte(`{"name":"x"}`)})
		require.False(t, res.IsError, res.Text())
	}()
	<-entered
	for range 8 {
		res := reg.Invoke(ctx, llmtool.Call{Tool: "count_items"})
		require.False(t, res.IsError, res.Text())
		require.JSONEq(t, `{"n":1}`, string(res.JSON), "the uncommitted row is invisible")
	}
	close(release)
	wg.Wait()
	res := reg.Invoke(ctx, llmtool.Call{Tool: "count_items"})
	require.JSONEq(t, `{"n":2}`, string(res.JSON))
}

func TestOutputValidatedInTests(t *testing.T) {
	t.Parallel()
	type out struct {
		State string `json:"state" enum:"open|closed"`
	}
	bad := llmtool.Read("bad_output", "Return a value outside the output schema.",
		func(c *llmtool.ReadCtx, _ struct{}) (out, error) { return out{State: "lost"}, nil })
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("bad", bad))
	res := invoke(reg, "bad_output", `{}`)
	require.True(t, res.IsError)
	require.ErrorContains(t, res.Err, "llmtool: tool bad_output: output does not match its output schema:")
	require.Equal(t, llmtool.KindInternal, llmtool.KindOf(res.Err))

	reg.SetValidateOutput(false)
	res = invoke(reg, "bad_output", `{}`)
	require.False(t, res.IsError, "production skips the check")
}

// Close hands the reserved read connections back writable; the registry
// keeps working without them.
func TestRegistryClose(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg := newRegistry(t, db, itemTools)
	for range 3 {
		require.False(t, invoke(reg, "get_item", `{"id":1}`).IsError)
	}
	require.NoError(t, reg.Close())
	for range 3 {
		_, err := db.Exec(`INSERT INTO items (name) VALUES ('host')`)
		require.NoError(t, err)
	}
	require.False(t, invoke(reg, "get_item", `{"id":1}`).IsError)
}
