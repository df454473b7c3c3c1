package llmtool_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/sqlite"
)

// Benchmarks compare Invoke with the hand-written database/sql code a tool
// replaces, in the same run, on the same SQLite file:
//
//	go test -run '^$' -bench 'Read|Insert' -benchmem -count 6 .
//
// The registry's audit records go to a logger whose level filters them out,
// as a production host that ships audit records elsewhere would configure.

func benchDB(b *testing.B) *sql.DB {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
	require.NoError(b, err)
	b.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(b, err)
	_, err = db.Exec(`INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(b, err)
	return db
}

func benchRegistry(b *testing.B, db *sql.DB) *llmtool.Registry {
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, itemTools)
	require.NoError(b, err)
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

// baselineInsert is what a write tool replaces: BEGIN IMMEDIATE (sqlite.Open
// sets _txlock=immediate), INSERT ... RETURNING id, COMMIT, encode the row.
func baselineInsert(b *testing.B, ctx context.Context, db *sql.DB) {
	var in AddItemIn
	if err := json.Unmarshal(insertArgs, &in); err != nil {
		b.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	// The same statement as add_item's.
	var id int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO items (name, qty) VALUES (?, ?) RETURNING id`, in.Name, in.Qty).Scan(&id); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := json.Marshal(ItemOut{ID: int(id), Name: in.Name, Qty: in.Qty}); err != nil {
		b.Fatal(err)
	}
}

// validatedInsert is baselineInsert that first checks the arguments
// against add_item's published input schema with jsonschema/v6, as a
// hand-written tool that keeps its schema's promise must: the floor of a
// write tool whose arguments come from a model.
func validatedInsert(b *testing.B, reg *llmtool.Registry) func(ctx context.Context, db *sql.DB) {
	spec, ok := reg.Tool(context.Background(), "add_item")
	require.True(b, ok)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec.InputSchema))
	require.NoError(b, err)
	c := jsonschema.NewCompiler()
	require.NoError(b, c.AddResource("mem:///in.json", doc))
	sch, err := c.Compile("mem:///in.json")
	require.NoError(b, err)
	return func(ctx context.Context, db *sql.DB) {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(insertArgs))
		if err != nil {
			b.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			b.Fatal(err)
		}
		baselineInsert(b, ctx, db)
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

// benchPath is one way of doing the same work, named as its sub-benchmark.
type benchPath struct {
	name string
	run  func()
}

// readPaths are the read tool's call and its hand-written baselines.
func readPaths(b *testing.B, ctx context.Context, db *sql.DB, reg *llmtool.Registry) []benchPath {
	st := prepareRead(b, db)
	return []benchPath{
		{"baseline=QueryRow+json.Marshal", func() { baselineRead(b, ctx, db) }},
		{"baseline-prepared=Stmt.QueryRow+json.Marshal", func() { baselinePreparedRead(b, ctx, st) }},
		{"baseline-tx=BEGIN+QueryRow+ROLLBACK+json.Marshal", func() { baselineTxRead(b, ctx, db) }},
		{"llmtool=Invoke", invokePath(b, ctx, reg, "get_item", readArgs)},
	}
}

// insertPaths are the insert tool's call and its hand-written baseline.
func insertPaths(b *testing.B, ctx context.Context, db *sql.DB, reg *llmtool.Registry) []benchPath {
	validated := validatedInsert(b, reg)
	return []benchPath{
		{"baseline=BEGIN_IMMEDIATE+INSERT+COMMIT", func() { baselineInsert(b, ctx, db) }},
		{"baseline-validated=jsonschema+BEGIN_IMMEDIATE+INSERT+COMMIT", func() { validated(ctx, db) }},
		{"llmtool=Invoke", invokePath(b, ctx, reg, "add_item", insertArgs)},
	}
}

// runEach runs each path as its own sub-benchmark.
func runEach(b *testing.B, paths []benchPath) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.run()
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	db := benchDB(b)
	runEach(b, readPaths(b, context.Background(), db, benchRegistry(b, db)))
}

func BenchmarkInsert(b *testing.B) {
	db := benchDB(b)
	runEach(b, insertPaths(b, context.Background(), db, benchRegistry(b, db)))
}

// BenchmarkRatio runs each llmtool call and its hand-written baselines one
// call each per round, in an order shuffled every round by a seeded
// generator (a fixed rotation moved the ratios: the path after a write ran
// slower), so all see the same machine load, and reports Invoke's time
// over each baseline's: the ratio of the totals, and as "-p50" of the
// medians, which a few stalled calls do not move.
//
// It runs three ways. "reads" and "writes" shuffle a read tool with its
// baselines, and a write tool with its baseline: what a call costs. "mixed"
// shuffles them all together, so a read often follows a write: there it
// also pays for reading on a connection other than the one that wrote
// (SQLite drops a connection's page cache when another commits). A
// registry reads on connections of its own, always another than its
// writer's, while a bare read takes the pool's most recent connection,
// which is often the one the bare write just used.
func BenchmarkRatio(b *testing.B) {
	run := func(b *testing.B, reads, writes bool) {
		db := benchDB(b)
		reg := benchRegistry(b, db)
		ctx := context.Background()
		var paths []benchPath
		if reads {
			paths = append(paths, readPaths(b, ctx, db, reg)...)
		}
		if writes {
			paths = append(paths, insertPaths(b, ctx, db, reg)...)
		}
		t := shuffled(b, paths)
		if reads {
			invokeRead := 3 // readPaths: three baselines, then Invoke
			t.report(b, invokeRead, 0, "read/baseline")
			t.report(b, invokeRead, 1, "read/baseline-prepared")
			t.report(b, invokeRead, 2, "read/baseline-tx")
		}
		if writes {
			invokeInsert := len(paths) - 1 // insertPaths: two baselines, then Invoke
			t.report(b, invokeInsert, invokeInsert-2, "insert/baseline")
			t.report(b, invokeInsert, invokeInsert-1, "insert/baseline-validated")
		}
	}
	b.Run("reads", func(b *testing.B) { run(b, true, false) })
	b.Run("writes", func(b *testing.B) { run(b, false, true) })
	b.Run("mixed", func(b *testing.B) { run(b, true, true) })
}

// enableWrites turns write tools on for the context's tenant.
func enableWrites(tb testing.TB, reg *llmtool.Registry, ctx context.Context) {
	require.NoError(tb, reg.Tenants().SetWrites(ctx, llmtool.TenantFrom(ctx), true))
}
