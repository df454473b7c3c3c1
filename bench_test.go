package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// Benchmarks compare Invoke with the hand-written database/sql code a tool
// replaces, in the same run, on the same SQLite file:
//
//	go test -run '^$' -bench 'Read|Insert' -benchmem -count 6 .
//
// The registry's audit records go to a logger whose level filters them out,
// as a production host that ships audit records elsewhere would configure.

func benchDB(b *testing.B) *sql.DB {
	db, err := llmtool.OpenSQLite("sqlite", filepath.Join(b.TempDir(), "bench.db"))
	require.NoError(b, err)
	b.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(b, err)
	_, err = db.Exec(`INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(b, err)
	return db
}

func benchRegistry(b *testing.B, db *sql.DB) *llmtool.Registry {
	reg, err := llmtool.NewRegistry(db, itemTools)
	require.NoError(b, err)
	reg.SetLogger(slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})))
	enableWrites(b, reg, context.Background())
	return reg
}

func BenchmarkRead(b *testing.B) {
	db := benchDB(b)
	b.Run("baseline=QueryRow+json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		args := []byte(`{"id": 1}`)
		for b.Loop() {
			var in GetItemIn
			if err := json.Unmarshal(args, &in); err != nil {
				b.Fatal(err)
			}
			var out ItemOut
			if err := db.QueryRowContext(ctx, `SELECT id, name, qty FROM items WHERE id = ?`, in.ID).Scan(&out.ID, &out.Name, &out.Qty); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-tx=BEGIN+QueryRow+ROLLBACK+json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		args := []byte(`{"id": 1}`)
		for b.Loop() {
			var in GetItemIn
			if err := json.Unmarshal(args, &in); err != nil {
				b.Fatal(err)
			}
			tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			var out ItemOut
			if err := tx.QueryRowContext(ctx, `SELECT id, name, qty FROM items WHERE id = ?`, in.ID).Scan(&out.ID, &out.Name, &out.Qty); err != nil {
				b.Fatal(err)
			}
			if err := tx.Rollback(); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("llmtool=Invoke", func(b *testing.B) {
		reg := benchRegistry(b, db)
		ctx := context.Background()
		call := llmtool.Call{Tool: "get_item", Args: []byte(`{"id": 1}`)}
		b.ReportAllocs()
		for b.Loop() {
			if res := reg.Invoke(ctx, call); res.IsError {
				b.Fatal(res.Text())
			}
		}
	})
}

func BenchmarkInsert(b *testing.B) {
	db := benchDB(b)
	b.Run("baseline=BEGIN_IMMEDIATE+INSERT+COMMIT", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		args := []byte(`{"name": "pear", "qty": 1}`)
		for b.Loop() {
			var in AddItemIn
			if err := json.Unmarshal(args, &in); err != nil {
				b.Fatal(err)
			}
			tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: OpenSQLite sets _txlock=immediate
			if err != nil {
				b.Fatal(err)
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO items (name, qty) VALUES (?, ?)`, in.Name, in.Qty)
			if err != nil {
				b.Fatal(err)
			}
			id, _ := res.LastInsertId()
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(ItemOut{ID: int(id), Name: in.Name, Qty: in.Qty}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("llmtool=Invoke", func(b *testing.B) {
		reg := benchRegistry(b, db)
		ctx := context.Background()
		call := llmtool.Call{Tool: "add_item", Args: []byte(`{"name": "pear", "qty": 1}`)}
		b.ReportAllocs()
		for b.Loop() {
			if res := reg.Invoke(ctx, call); res.IsError {
				b.Fatal(res.Text())
			}
		}
	})
}

// enableWrites turns writes on for the context's scope where the registry
// has per-scope write switches.
func enableWrites(tb testing.TB, reg *llmtool.Registry, ctx context.Context) {
	if e, ok := any(reg).(interface {
		EnableWrites(context.Context, string) error
	}); ok {
		require.NoError(tb, e.EnableWrites(ctx, llmtool.ScopeFrom(ctx)), fmt.Sprint("enable writes"))
	}
}

// BenchmarkRatio alternates each llmtool call with its hand-written
// baseline, call by call in rotating order, so both see the same machine
// load, and reports Invoke's time over the baseline's. ns/op is the sum of
// both paths.
func BenchmarkRatio(b *testing.B) {
	db := benchDB(b)
	reg := benchRegistry(b, db)
	ctx := context.Background()
	readArgs, insertArgs := []byte(`{"id": 1}`), []byte(`{"name": "pear", "qty": 1}`)
	baselineRead := func() {
		var in GetItemIn
		if err := json.Unmarshal(readArgs, &in); err != nil {
			b.Fatal(err)
		}
		var out ItemOut
		if err := db.QueryRowContext(ctx, `SELECT id, name, qty FROM items WHERE id = ?`, in.ID).Scan(&out.ID, &out.Name, &out.Qty); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(out); err != nil {
			b.Fatal(err)
		}
	}
	baselineTxRead := func() {
		var in GetItemIn
		if err := json.Unmarshal(readArgs, &in); err != nil {
			b.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		var out ItemOut
		if err := tx.QueryRowContext(ctx, `SELECT id, name, qty FROM items WHERE id = ?`, in.ID).Scan(&out.ID, &out.Name, &out.Qty); err != nil {
			b.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(out); err != nil {
			b.Fatal(err)
		}
	}
	baselineInsert := func() {
		var in AddItemIn
		if err := json.Unmarshal(insertArgs, &in); err != nil {
			b.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO items (name, qty) VALUES (?, ?)`, in.Name, in.Qty)
		if err != nil {
			b.Fatal(err)
		}
		id, _ := res.LastInsertId()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(ItemOut{ID: int(id), Name: in.Name, Qty: in.Qty}); err != nil {
			b.Fatal(err)
		}
	}
	call := func(tool string, args []byte) func() {
		c := llmtool.Call{Tool: tool, Args: args}
		return func() {
			if res := reg.Invoke(ctx, c); res.IsError {
				b.Fatal(res.Text())
			}
		}
	}
	paths := []func(){baselineRead, baselineTxRead, call("get_item", readArgs), baselineInsert, call("add_item", insertArgs)}
	spent := make([]time.Duration, len(paths))
	i := 0
	for b.Loop() {
		for k := range paths {
			j := (i + k) % len(paths)
			t0 := time.Now()
			paths[j]()
			spent[j] += time.Since(t0)
		}
		i++
	}
	b.ReportMetric(float64(spent[2])/float64(spent[0]), "read/baseline")
	b.ReportMetric(float64(spent[2])/float64(spent[1]), "read/baseline-tx")
	b.ReportMetric(float64(spent[4])/float64(spent[3]), "insert/baseline")
}
