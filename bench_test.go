package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
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

var (
	readArgs   = []byte(`{"id": 1}`)
	insertArgs = []byte(`{"name": "pear", "qty": 1}`)
)

// baselineRead is what a read tool replaces: decode the arguments, one
// autocommit QueryRow, encode the row.
func baselineRead(b *testing.B, ctx context.Context, db *sql.DB) {
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

// baselinePreparedRead is baselineRead on a statement prepared once: what
// the statements a read connection keeps prepared save.
func baselinePreparedRead(b *testing.B, ctx context.Context, st *sql.Stmt) {
	var in GetItemIn
	if err := json.Unmarshal(readArgs, &in); err != nil {
		b.Fatal(err)
	}
	var out ItemOut
	if err := st.QueryRowContext(ctx, in.ID).Scan(&out.ID, &out.Name, &out.Qty); err != nil {
		b.Fatal(err)
	}
	if _, err := json.Marshal(out); err != nil {
		b.Fatal(err)
	}
}

// prepareRead prepares baselinePreparedRead's statement.
func prepareRead(b *testing.B, db *sql.DB) *sql.Stmt {
	st, err := db.Prepare(`SELECT id, name, qty FROM items WHERE id = ?`)
	require.NoError(b, err)
	b.Cleanup(func() { st.Close() })
	return st
}

// baselineTxRead is baselineRead inside a read-only *sql.Tx: what a
// consistent snapshot costs with plain database/sql.
func baselineTxRead(b *testing.B, ctx context.Context, db *sql.DB) {
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

// baselineInsert is what a write tool replaces: BEGIN IMMEDIATE (OpenSQLite
// sets _txlock=immediate), INSERT, COMMIT, encode the row.
func baselineInsert(b *testing.B, ctx context.Context, db *sql.DB) {
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

// invokePath returns a path that calls tool through Invoke.
func invokePath(b *testing.B, ctx context.Context, reg *llmtool.Registry, tool string, args []byte) func() {
	call := llmtool.Call{Tool: tool, Args: args}
	return func() {
		if res := reg.Invoke(ctx, call); res.IsError {
			b.Fatal(res.Text())
		}
	}
}

func BenchmarkRead(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	b.Run("baseline=QueryRow+json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			baselineRead(b, ctx, db)
		}
	})
	b.Run("baseline-prepared=Stmt.QueryRow+json.Marshal", func(b *testing.B) {
		st := prepareRead(b, db)
		b.ReportAllocs()
		for b.Loop() {
			baselinePreparedRead(b, ctx, st)
		}
	})
	b.Run("baseline-tx=BEGIN+QueryRow+ROLLBACK+json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			baselineTxRead(b, ctx, db)
		}
	})
	b.Run("llmtool=Invoke", func(b *testing.B) {
		call := invokePath(b, ctx, benchRegistry(b, db), "get_item", readArgs)
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
	})
}

func BenchmarkInsert(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	b.Run("baseline=BEGIN_IMMEDIATE+INSERT+COMMIT", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			baselineInsert(b, ctx, db)
		}
	})
	b.Run("llmtool=Invoke", func(b *testing.B) {
		call := invokePath(b, ctx, benchRegistry(b, db), "add_item", insertArgs)
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
	})
}

// BenchmarkRatio alternates each llmtool call with its hand-written
// baseline, call by call in rotating order, so both see the same machine
// load, and reports Invoke's time over the baseline's. ns/op is the sum of
// all paths.
func BenchmarkRatio(b *testing.B) {
	db := benchDB(b)
	reg := benchRegistry(b, db)
	ctx := context.Background()
	st := prepareRead(b, db)
	paths := []func(){
		func() { baselineRead(b, ctx, db) },
		func() { baselineTxRead(b, ctx, db) },
		invokePath(b, ctx, reg, "get_item", readArgs),
		func() { baselineInsert(b, ctx, db) },
		invokePath(b, ctx, reg, "add_item", insertArgs),
		func() { baselinePreparedRead(b, ctx, st) },
	}
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
	b.ReportMetric(float64(spent[2])/float64(spent[5]), "read/baseline-prepared")
	b.ReportMetric(float64(spent[4])/float64(spent[3]), "insert/baseline")
}

// enableWrites turns write tools on for the context's scope.
func enableWrites(tb testing.TB, reg *llmtool.Registry, ctx context.Context) {
	require.NoError(tb, reg.EnableWrites(ctx, llmtool.ScopeFrom(ctx)))
}
