package llmtool_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/changeset"
)

// What changesets cost, in the same run, on the same database: one write
// tool (cs_bump, an UPDATE of one row of items) and one read tool
// (get_item) through three registries on one *sql.DB, one that tracks
// items, one that tracks another table, one that tracks none:
//
//	go test -run '^$' -bench 'ChangesetRatio' -count 6 .
//
// BenchmarkPGChangesetRatio needs LLMTOOL_TEST_POSTGRES, and reports
// each path's round trips too. Units: "tracked/untracked" is a tracked
// write over the same write untracked (the target: ≤ 1.3×);
// "other/untracked" the write in a registry that tracks another table
// (≤ 1.02×), "read-other/read" a read there (≤ 1.02×); "-p50" the ratio
// of the medians. "B/call" is the changeset a tracked call stores (the
// JSON of its rows in llmtool_changes); on PostgreSQL "rowB/call" is
// the whole history row as stored (pg_column_size).

var csBump = llmtool.Write("cs_bump", "Add one to an item's quantity.",
	func(c *llmtool.WriteCtx, in GetItemIn) (okOut, error) {
		_, err := c.Exec(`UPDATE items SET qty = qty + 1 WHERE id = ?`, in.ID)
		return okOut{OK: true}, err
	})

var csBenchTools = llmtool.DefineTools("csbench", getItem, csBump)

// csBenchPaths are the paths on the databases open returns, each with
// the items table: the write untracked, tracked, and with another table
// tracked; the read untracked and with another table tracked. Each
// registry has a database of its own on SQLite, as a host has: on one
// file, a write connection would find the pages another registry's wrote
// and read them again. On PostgreSQL they share one (open returns it
// each time).
func csBenchPaths(b *testing.B, open func() *sql.DB) ([]benchPath, []*sql.DB) {
	ctx := context.Background()
	var dbs []*sql.DB
	registry := func(tables ...string) *llmtool.Registry {
		db := open()
		if len(dbs) == 0 || dbs[0] != db {
			_, err := db.Exec(`CREATE TABLE others (id BIGINT PRIMARY KEY, v TEXT)`)
			require.NoError(b, err)
		}
		dbs = append(dbs, db)
		reg, err := llmtool.NewRegistry(db, &llmtool.Options{
			Logger:     slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
			Changesets: changeset.Config{Tables: tables},
		}, csBenchTools)
		require.NoError(b, err)
		b.Cleanup(func() { reg.Close() })
		enableWrites(b, reg, ctx)
		return reg
	}
	plain, tracked, other := registry(), registry("items"), registry("others")
	res := tracked.Invoke(ctx, llmtool.Call{Tool: "cs_bump", Args: readArgs})
	require.False(b, res.IsError, res.Text())
	require.Len(b, res.Changeset.Rows, 1)
	return []benchPath{
		{"untracked=Invoke(cs_bump)", invokePath(b, ctx, plain, "cs_bump", readArgs)},
		{"tracked=Invoke(cs_bump),items_tracked", invokePath(b, ctx, tracked, "cs_bump", readArgs)},
		{"other=Invoke(cs_bump),others_tracked", invokePath(b, ctx, other, "cs_bump", readArgs)},
		{"read=Invoke(get_item)", invokePath(b, ctx, plain, "get_item", readArgs)},
		{"read-other=Invoke(get_item),others_tracked", invokePath(b, ctx, other, "get_item", readArgs)},
	}, dbs
}

// reportChangesets reports the ratios of csBenchPaths' timings, and the
// bytes a tracked call stores in db, the tracked registry's.
func reportChangesets(b *testing.B, t *timings, db *sql.DB, pg bool) {
	t.report(b, 1, 0, "tracked/untracked")
	t.report(b, 2, 0, "other/untracked")
	t.report(b, 4, 3, "read-other/read")
	var n float64
	require.NoError(b, db.QueryRow(`SELECT avg(length(rows)) FROM llmtool_changes WHERE not_undoable = ''`).Scan(&n))
	b.ReportMetric(n, "B/call")
	if pg {
		require.NoError(b, db.QueryRow(`SELECT avg(pg_column_size(c.*)) FROM llmtool_changes c WHERE not_undoable = ''`).Scan(&n))
		b.ReportMetric(n, "rowB/call")
	}
}

func BenchmarkChangesetRatio(b *testing.B) {
	paths, dbs := csBenchPaths(b, func() *sql.DB { return benchDB(b) })
	t := shuffled(b, paths)
	reportChangesets(b, t, dbs[1], false)
	t.reportPaths(b, csBenchNames, make([]float64, len(paths)))
}

var csBenchNames = []string{"untracked", "tracked", "other", "read", "read-other"}

func BenchmarkPGChangesetRatio(b *testing.B) {
	p := newPGBench(b)
	paths, _ := csBenchPaths(b, func() *sql.DB { return p.db })
	rts := p.roundTrips(paths)
	t := shuffled(b, paths)
	reportChangesets(b, t, p.db, true)
	t.reportPaths(b, csBenchNames, rts)
}
