package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

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
// (≤ 1.02×: cs_bump_other, on a table no registry tracks, against the
// same call untracked), "read-other/read" a read there (≤ 1.02×); "-p50" the ratio
// of the medians. "floor" is what storing the history in the write's
// transaction costs with no llmtool at all: the same UPDATE by hand
// (prepared, in the same isolation), with and without a prepared INSERT
// of the same history row into llmtool_changes, "floor" the second over
// the first; "tracked/floor" is tracked/untracked over it, the part of a
// tracked write's cost that is llmtool's own. "B/call" is the changeset a tracked call stores (the
// JSON of its rows in llmtool_changes); on PostgreSQL "rowB/call" is
// the whole history row as stored (pg_column_size).

var csBump = llmtool.Write("cs_bump", "Add one to an item's quantity.",
	func(c *llmtool.WriteCtx, in GetItemIn) (okOut, error) {
		_, err := c.Exec(`UPDATE items SET qty = qty + 1 WHERE id = ?`, in.ID)
		return okOut{OK: true}, err
	})

// csBumpOther is cs_bump on a table no registry tracks: on PostgreSQL the
// registries share one database, where items carries the tracking
// registry's triggers.
var csBumpOther = llmtool.Write("cs_bump_other", "Add one to an other item's quantity.",
	func(c *llmtool.WriteCtx, in GetItemIn) (okOut, error) {
		_, err := c.Exec(`UPDATE other_items SET qty = qty + 1 WHERE id = ?`, in.ID)
		return okOut{OK: true}, err
	})

var csBenchTools = llmtool.DefineTools("csbench", getItem, csBump, csBumpOther)

// csBenchPaths are the paths on the databases open returns, each with
// the items table: the write untracked, tracked, and with another table
// tracked; the read untracked and with another table tracked. Each
// registry has a database of its own on SQLite, as a host has: on one
// file, a write connection would find the pages another registry's wrote
// and read them again. On PostgreSQL they share one (open returns it
// each time).
func csBenchPaths(b *testing.B, open func() *sql.DB, pg bool) ([]benchPath, []*sql.DB) {
	ctx := context.Background()
	var dbs []*sql.DB
	registry := func(tables ...string) *llmtool.Registry {
		db := open()
		if len(dbs) == 0 || dbs[0] != db {
			for _, q := range []string{
				`CREATE TABLE others (id BIGINT PRIMARY KEY, v TEXT)`,
				`CREATE TABLE other_items (id BIGINT PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`,
				`INSERT INTO other_items (id, name, qty) VALUES (1, 'pear', 3)`,
			} {
				_, err := db.Exec(q)
				require.NoError(b, err)
			}
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
	rows, err := json.Marshal(res.Changeset.Rows)
	require.NoError(b, err)
	registry("items") // a database with llmtool_changes for the floor
	bare, bareHistory := floorPaths(b, ctx, dbs[len(dbs)-1], string(rows), pg)
	return []benchPath{
		{"untracked=Invoke(cs_bump)", invokePath(b, ctx, plain, "cs_bump", readArgs)},
		{"tracked=Invoke(cs_bump),items_tracked", invokePath(b, ctx, tracked, "cs_bump", readArgs)},
		{"other=Invoke(cs_bump_other),others_tracked", invokePath(b, ctx, other, "cs_bump_other", readArgs)},
		{"read=Invoke(get_item)", invokePath(b, ctx, plain, "get_item", readArgs)},
		{"read-other=Invoke(get_item),others_tracked", invokePath(b, ctx, other, "get_item", readArgs)},
		{"bare=BEGIN+UPDATE+COMMIT", bare},
		{"bare-history=BEGIN+UPDATE+INSERT_history+COMMIT", bareHistory},
		{"untracked-other=Invoke(cs_bump_other)", invokePath(b, ctx, plain, "cs_bump_other", readArgs)},
	}, dbs
}

// floorPaths are cs_bump's UPDATE by hand on db, in a transaction of the
// isolation llmtool's writes use, alone and with an INSERT of rows into
// the history as llmtool stores it: both statements prepared once.
func floorPaths(b *testing.B, ctx context.Context, db *sql.DB, rows string, pg bool) (bare, history func()) {
	var opts *sql.TxOptions
	if pg {
		opts = &sql.TxOptions{Isolation: sql.LevelSerializable}
	}
	up, err := db.PrepareContext(ctx, `UPDATE items SET qty = qty + 1 WHERE id = $1`)
	require.NoError(b, err)
	ins, err := db.PrepareContext(ctx, `INSERT INTO llmtool_changes (tool, principal, tenant, conversation, created_at, rows, not_undoable)
VALUES ($1, '', '', '', $2, $3, '') RETURNING id`)
	require.NoError(b, err)
	b.Cleanup(func() { up.Close(); ins.Close() })
	run := func(withHistory bool) func() {
		return func() {
			tx, err := db.BeginTx(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.StmtContext(ctx, up).ExecContext(ctx, 1); err != nil {
				b.Fatal(err)
			}
			if withHistory {
				var id int64
				if err := tx.StmtContext(ctx, ins).QueryRowContext(ctx, "cs_bump", time.Now().UnixMilli(), rows).Scan(&id); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return run(false), run(true)
}

// reportChangesets reports the ratios of csBenchPaths' timings, and the
// bytes a tracked call stores in db, the tracked registry's.
func reportChangesets(b *testing.B, t *timings, db *sql.DB, pg bool) {
	t.report(b, 1, 0, "tracked/untracked")
	t.report(b, 2, 7, "other/untracked")
	t.report(b, 4, 3, "read-other/read")
	t.report(b, 6, 5, "floor")
	b.ReportMetric(float64(t.median(1))/float64(t.median(0))/(float64(t.median(6))/float64(t.median(5))), "tracked/floor-p50")
	var n float64
	require.NoError(b, db.QueryRow(`SELECT avg(length(rows)) FROM llmtool_changes WHERE not_undoable = ''`).Scan(&n))
	b.ReportMetric(n, "B/call")
	if pg {
		require.NoError(b, db.QueryRow(`SELECT avg(pg_column_size(c.*)) FROM llmtool_changes c WHERE not_undoable = ''`).Scan(&n))
		b.ReportMetric(n, "rowB/call")
	}
}

func BenchmarkChangesetRatio(b *testing.B) {
	paths, dbs := csBenchPaths(b, func() *sql.DB { return benchDB(b) }, false)
	t := shuffled(b, paths)
	reportChangesets(b, t, dbs[1], false)
	t.reportPaths(b, csBenchNames, make([]float64, len(paths)))
}

var csBenchNames = []string{"untracked", "tracked", "other", "read", "read-other", "bare", "bare-history", "untracked-other"}

func BenchmarkPGChangesetRatio(b *testing.B) {
	p := newPGBench(b)
	paths, _ := csBenchPaths(b, func() *sql.DB { return p.db }, true)
	rts := p.roundTrips(paths)
	t := shuffled(b, paths)
	reportChangesets(b, t, p.db, true)
	t.reportPaths(b, csBenchNames, rts)
}
