package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/sqlite"
)

// A read tool returning 10,000 rows (about 390 KB of JSON) against the
// hand-written code it replaces: an autocommit query, the rows scanned into
// a slice, json.Marshal. Same SQLite file, same query.
//
//	go test -run '^$' -bench 'ManyRows' -benchmem -count 6 .

const manyRows = 10_000

type manyRowsIn struct {
	Min int64 `json:"min" desc:"Smallest ID to list."`
}

type manyRow struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Qty  int64  `json:"qty"`
}

type manyRowsOut struct {
	Items []manyRow `json:"items"`
}

const manyRowsQuery = `SELECT id, name, qty FROM items WHERE id >= ? ORDER BY id`

// scanMany reads every row of rows.
func scanMany(rows *sql.Rows) (manyRowsOut, error) {
	defer rows.Close()
	out := manyRowsOut{Items: make([]manyRow, 0, manyRows)}
	for rows.Next() {
		var r manyRow
		if err := rows.Scan(&r.ID, &r.Name, &r.Qty); err != nil {
			return out, err
		}
		out.Items = append(out.Items, r)
	}
	return out, rows.Err()
}

var listMany = llmtool.Read("list_many", "List the items from an ID on.",
	func(c *llmtool.ReadCtx, in manyRowsIn) (manyRowsOut, error) {
		rows, err := c.Query(manyRowsQuery, in.Min)
		if err != nil {
			return manyRowsOut{}, err
		}
		return scanMany(rows)
	})

func newManyRows(b *testing.B) (*sql.DB, *llmtool.Registry) {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "rows.db"))
	require.NoError(b, err)
	b.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(b, err)
	tx, err := db.Begin()
	require.NoError(b, err)
	for i := 1; i <= manyRows; i++ {
		_, err = tx.Exec(`INSERT INTO items (id, name, qty) VALUES (?, ?, ?)`, i, fmt.Sprintf("item number %d", i), i%97)
		require.NoError(b, err)
	}
	require.NoError(b, tx.Commit())
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, llmtool.DefineTools("rows", listMany))
	require.NoError(b, err)
	b.Cleanup(func() { reg.Close() })

	// Both paths give the same JSON.
	res := reg.Invoke(context.Background(), llmtool.Call{Tool: "list_many", Args: manyRowsArgs})
	require.False(b, res.IsError, string(res.JSON))
	require.NotContains(b, string(res.JSON[:100]), `"error"`)
	bare, err := bareManyRows(context.Background(), db)
	require.NoError(b, err)
	require.Equal(b, string(bare), string(res.JSON))
	return db, reg
}

var manyRowsArgs = []byte(`{"min": 1}`)

// bareManyRows is the hand-written path: decode the arguments, query,
// scan, json.Marshal.
func bareManyRows(ctx context.Context, db *sql.DB) ([]byte, error) {
	var in manyRowsIn
	if err := json.Unmarshal(manyRowsArgs, &in); err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, manyRowsQuery, in.Min)
	if err != nil {
		return nil, err
	}
	out, err := scanMany(rows)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// BenchmarkManyRows measures each path on its own (allocations).
func BenchmarkManyRows(b *testing.B) {
	db, reg := newManyRows(b)
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := bareManyRows(ctx, db); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("llmtool=Invoke", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := reg.Invoke(ctx, llmtool.Call{Tool: "list_many", Args: manyRowsArgs}); res.IsError {
				b.Fatal(string(res.JSON))
			}
		}
	})
}

// BenchmarkManyRowsRatio runs both paths one call each per round, in an
// order shuffled every round by a seeded generator, and reports Invoke's
// time over the bare path's: of totals and of median calls (-p50).
func BenchmarkManyRowsRatio(b *testing.B) {
	db, reg := newManyRows(b)
	ctx := context.Background()
	var times [2][]time.Duration // bare, Invoke
	rng := rand.New(rand.NewPCG(2026, 10_000))
	for b.Loop() {
		first := rng.IntN(2)
		for k := range 2 {
			j := (first + k) % 2
			t0 := time.Now()
			if j == 0 {
				if _, err := bareManyRows(ctx, db); err != nil {
					b.Fatal(err)
				}
			} else if res := reg.Invoke(ctx, llmtool.Call{Tool: "list_many", Args: manyRowsArgs}); res.IsError {
				b.Fatal(string(res.JSON))
			}
			times[j] = append(times[j], time.Since(t0))
		}
	}
	sum := func(i int) (s time.Duration) {
		for _, d := range times[i] {
			s += d
		}
		return s
	}
	median := func(i int) float64 {
		s := slices.Clone(times[i])
		slices.Sort(s)
		return float64(s[len(s)/2])
	}
	b.ReportMetric(float64(sum(1))/float64(sum(0)), "invoke/bare")
	b.ReportMetric(median(1)/median(0), "invoke/bare-p50")
	b.ReportMetric(median(0), "ns-p50-bare")
	b.ReportMetric(median(1), "ns-p50-invoke")
}
