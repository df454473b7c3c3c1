package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/pgtest"
)

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
	db := openDB(t)
	reg := newRegistry(t, db, llmtool.DefineTools("bad", bad))
	res := invoke(reg, "bad_output", `{}`)
	require.True(t, res.IsError)
	require.ErrorContains(t, res.Err, "llmtool: tool bad_output: output does not match its output schema:")
	require.Equal(t, llmtool.KindInternal, llmtool.KindOf(res.Err))

	prod := newRegistryOpts(t, db, &llmtool.Options{ValidateOutput: false}, llmtool.DefineTools("bad", bad))
	res = invoke(prod, "bad_output", `{}`)
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

// A read connection keeps the statements its calls run prepared. A query
// whose text is already in use in the same call (nested rows, a row not yet
// scanned) must run on its own statement, not reset the open one.
//
// On PostgreSQL a connection runs one query at a time, so the handler
// reads its outer rows before the inner queries; the promise left is that
// the same texts, run again and again in one call and across calls (on
// the driver's cached statements, with ? rewritten once), give the right
// rows.
func TestPreparedStatementsInOneCall(t *testing.T) {
	t.Parallel()
	const all = `SELECT name FROM items ORDER BY id`
	const byID = `SELECT name FROM items WHERE id = ?`
	type out struct {
		Seen []string `json:"seen"`
	}
	// outerNames runs all and reads its rows, calling inner for each row
	// while the rows are open (SQLite) or after they are closed
	// (PostgreSQL).
	outerNames := func(c *llmtool.ReadCtx, inner func(outer string) error) error {
		rows, err := c.Query(all)
		if err != nil {
			return err
		}
		defer rows.Close()
		var later []string
		for rows.Next() {
			var outer string
			if err := rows.Scan(&outer); err != nil {
				return err
			}
			if c.Engine() == "postgres" {
				later = append(later, outer)
				continue
			}
			if err := inner(outer); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// The closed rows' statement is free again in the same call.
		if err := rows.Close(); err != nil {
			return err
		}
		for _, outer := range later {
			if err := inner(outer); err != nil {
				return err
			}
		}
		return nil
	}
	nested := llmtool.Read("nested", "Run the same queries nested and in loops.",
		func(c *llmtool.ReadCtx, _ struct{}) (out, error) {
			var o out
			err := outerNames(c, func(outer string) error {
				var inner, again string
				if c.Engine() == "postgres" {
					if err := c.QueryRow(byID, 3).Scan(&again); err != nil {
						return err
					}
					if err := c.QueryRow(byID, 1).Scan(&inner); err != nil {
						return err
					}
				} else {
					// Two rows of the same text open at once, scanned in
					// reverse order, while the outer rows are open too.
					r1, r2 := c.QueryRow(byID, 1), c.QueryRow(byID, 3)
					if err := r2.Scan(&again); err != nil {
						return err
					}
					if err := r1.Scan(&inner); err != nil {
						return err
					}
				}
				if err := c.QueryRow(all).Scan(&inner); err != nil {
					return err
				}
				o.Seen = append(o.Seen, outer+"/"+again+"/"+inner)
				return nil
			})
			if err != nil {
				return o, err
			}
			for range 2 {
				again, err := c.Query(all)
				if err != nil {
					return o, err
				}
				n := 0
				for again.Next() {
					n++
				}
				again.Close()
				o.Seen = append(o.Seen, fmt.Sprint(n))
			}
			return o, nil
		})
	db := openDB(t)
	_, err := db.Exec(`INSERT INTO items (id, name) VALUES (2, 'pear'), (3, 'plum')`)
	require.NoError(t, err)
	reg := newRegistry(t, db, llmtool.DefineTools("nested", nested))
	for range 3 { // the second and third calls run on statements the first prepared
		res := invoke(reg, "nested", `{}`)
		require.False(t, res.IsError, res.Text())
		require.JSONEq(t, `{"seen":["apple/plum/apple","pear/plum/apple","plum/plum/apple","3","3"]}`, string(res.JSON))
	}
	if pgtest.FromEnv() {
		t.Skip("SQLite only: results of one text open at once on a reserved read connection's statement cache; PostgreSQL runs one query at a time per connection (the same texts run in sequence above)")
	}
}

// Results a handler leaves open are closed when its call ends, so the next
// call on the connection gets a fresh snapshot and prepared statements that
// are not mid-step, and Close does not wait on them.
//
// On PostgreSQL a connection runs one query at a time, so the handler
// leaves open only its last result: rows from Query.
func TestResultsLeftOpenAreClosed(t *testing.T) {
	t.Parallel()
	type out struct {
		N int `json:"n"`
	}
	left := make(chan *sql.Rows, 4) // the rows each call left open
	leaky := llmtool.Read("leaky", "Count items, leaving results open.",
		func(c *llmtool.ReadCtx, _ struct{}) (out, error) {
			var o out
			if c.Engine() == "postgres" {
				if err := c.QueryRow(`SELECT count(*) FROM items`).Scan(&o.N); err != nil {
					return o, err
				}
				rows, err := c.Query(`SELECT name FROM items`) // left open on purpose
				left <- rows                                   //llmtoolvet:ignore the test checks after the call that the registry closed these rows
				return o, err
			}
			rows, err := c.Query(`SELECT name FROM items`) // left open on purpose
			if err != nil {
				return o, err
			}
			left <- rows                                             //llmtoolvet:ignore the test checks after the call that the registry closed these rows
			_ = c.QueryRow(`SELECT name FROM items WHERE id = ?`, 1) // never scanned
			return o, c.QueryRow(`SELECT count(*) FROM items`).Scan(&o.N)
		})
	db := openDB(t)
	logs := &syncBuffer{}
	reg := newRegistryOpts(t, db, &llmtool.Options{
		Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		ValidateOutput: true,
	}, llmtool.DefineTools("leaky", leaky))
	for want := 1; want <= 4; want++ {
		res := invoke(reg, "leaky", `{}`)
		require.False(t, res.IsError, res.Text())
		require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, want), string(res.JSON), "each call sees the rows committed before it")
		_, err := (<-left).Columns()
		require.EqualError(t, err, "sql: Rows are closed", "the call's end closed the rows its handler left open")
		_, err = db.Exec(`INSERT INTO items (name) VALUES ('more')`)
		require.NoError(t, err)
	}
	require.NoError(t, reg.Close())
	_, err := db.Exec(`INSERT INTO items (name) VALUES ('after close')`)
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(logs.String(), `level=WARN msg="llmtool: read tool returned with query rows open; llmtool closed them (close rows before returning, or defer rows.Close())" tool=leaky rows=1`), logs.String())
}

// Prepared statements follow schema changes, and a connection keeps a
// bounded number of them: more distinct query texts than it keeps still
// run, each with its own result.
func TestPreparedStatementsFollowSchemaAndEvict(t *testing.T) {
	t.Parallel()
	type colsOut struct {
		Columns []string `json:"columns"`
	}
	cols := llmtool.Read("columns", "List the columns of item 1.",
		func(c *llmtool.ReadCtx, _ struct{}) (colsOut, error) {
			rows, err := c.Query(`SELECT * FROM items WHERE id = 1`)
			if err != nil {
				return colsOut{}, err
			}
			defer rows.Close()
			names, err := rows.Columns()
			return colsOut{Columns: names}, err
		})
	addColumn := llmtool.Write("add_column", "Add a column to items.",
		func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) {
			_, err := c.Exec(`ALTER TABLE items ADD COLUMN note TEXT`)
			return struct{}{}, err
		})
	type nIn struct {
		N int `json:"n"`
	}
	type nOut struct {
		V int `json:"v"`
	}
	distinct := llmtool.Read("distinct", "Run a query whose text depends on n.",
		func(c *llmtool.ReadCtx, in nIn) (nOut, error) {
			var o nOut
			return o, c.QueryRow(fmt.Sprintf(`SELECT %d + qty FROM items WHERE id = ?`, in.N), 1).Scan(&o.V)
		})
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("schema", cols, addColumn, distinct))

	for round := range 2 {
		for n := range 150 {
			res := invoke(reg, "distinct", fmt.Sprintf(`{"n":%d}`, n))
			require.JSONEq(t, fmt.Sprintf(`{"v":%d}`, n+3), string(res.JSON), "round %d: %s", round, res.Text())
		}
	}

	res := invoke(reg, "columns", `{}`)
	require.JSONEq(t, `{"columns":["id","name","qty"]}`, string(res.JSON), res.Text())
	require.False(t, invoke(reg, "add_column", `{}`).IsError)
	res = invoke(reg, "columns", `{}`)
	require.JSONEq(t, `{"columns":["id","name","qty","note"]}`, string(res.JSON), res.Text())
}

// Many concurrent read calls, more than the registry reserves connections
// for, each see one snapshot while a writer adds rows: in every snapshot
// the count of items equals the largest ID, since IDs are handed out in
// order and nothing is deleted.
func TestConcurrentReadsSeeOneSnapshot(t *testing.T) {
	t.Parallel()
	type out struct {
		Count int `json:"count"`
		MaxID int `json:"maxId"`
	}
	snapshot := llmtool.Read("snapshot", "Count items and find the largest ID.",
		func(c *llmtool.ReadCtx, _ struct{}) (out, error) {
			var o out
			if err := c.QueryRow(`SELECT count(*) FROM items`).Scan(&o.Count); err != nil {
				return o, err
			}
			runtime.Gosched() // give the writer a chance between the two queries
			return o, c.QueryRow(`SELECT max(id) FROM items`).Scan(&o.MaxID)
		})
	db := openDB(t)
	reg := newRegistry(t, db, itemTools, llmtool.DefineTools("snap", snapshot))
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if res := invoke(reg, "add_item", `{"name":"w"}`); res.IsError {
				t.Errorf("write failed: %v", res.Err)
				return
			}
		}
	})
	var readers sync.WaitGroup
	for range 12 {
		readers.Go(func() {
			for range 60 {
				res := invoke(reg, "snapshot", `{}`)
				if res.IsError {
					t.Errorf("read failed: %v", res.Err)
					return
				}
				var o out
				if err := json.Unmarshal(res.JSON, &o); err != nil || o.Count != o.MaxID {
					t.Errorf("one call saw two states: %s (%v)", res.JSON, err)
					return
				}
			}
		})
	}
	readers.Wait()
	close(stop)
	writer.Wait()
	require.Greater(t, countItems(t, db), 1, "the writer ran beside the readers")
}

// TestReadRunsOnceInOneSnapshot: a read call runs its handler exactly
// once, in one snapshot, however many statements it runs. Between its two
// counts the handler has another connection add an item: the second count
// still sees the first's state. A read tool's INSERT is refused.
func TestReadRunsOnceInOneSnapshot(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	var runs atomic.Int64
	type in struct {
		Twice bool `json:"twice,omitempty"`
	}
	type out struct {
		Counts []int `json:"counts"`
	}
	count := llmtool.Read("count_twice", "Count the items, twice if asked, adding one in between.",
		func(c *llmtool.ReadCtx, in in) (out, error) {
			runs.Add(1)
			var o out
			n := 1
			if in.Twice {
				n = 2
			}
			for i := range n {
				if i > 0 {
					if _, err := db.Exec(`INSERT INTO items (name) VALUES ('between')`); err != nil {
						return o, err
					}
				}
				var k int
				if err := c.QueryRow(`SELECT count(*) FROM items`).Scan(&k); err != nil {
					return o, err
				}
				o.Counts = append(o.Counts, k)
			}
			return o, nil
		})
	reg := newRegistry(t, db, llmtool.DefineTools("count", count))
	for i, tc := range []struct {
		args string
		want string
	}{
		{`{}`, `{"counts":[1]}`},
		{`{}`, `{"counts":[1]}`},
		{`{"twice":true}`, `{"counts":[1,1]}`}, // the insert between is not seen
		{`{"twice":true}`, `{"counts":[2,2]}`},
		{`{}`, `{"counts":[3]}`},
	} {
		before := runs.Load()
		res := invoke(reg, "count_twice", tc.args)
		require.False(t, res.IsError, res.Text())
		require.NotContains(t, decodeObj(t, res.JSON), "error")
		require.JSONEq(t, tc.want, string(res.JSON), "call %d: %s", i, tc.args)
		require.Equal(t, int64(1), runs.Load()-before, "handler runs for call %d", i)
	}

	sneaky := newRegistry(t, db, llmtool.DefineTools("sneaky", llmtool.Read("sneaky", "Insert from a read tool.",
		func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
			rows, err := c.Query(`INSERT INTO items (name) VALUES ('sneaky') RETURNING id`)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			return struct{}{}, err
		})))
	before := countItems(t, db)
	for range 2 {
		res := invoke(sneaky, "sneaky", `{}`)
		require.True(t, res.IsError)
		require.EqualError(t, res.Err, readToolWriteErr("sneaky", "INSERT INTO items (name) VALUES ('sneaky') RETURNING id"))
	}
	require.Equal(t, before, countItems(t, db))
}

// dbtx is sqlc's DBTX: what a generated data layer asks of its database
// handle. A *WriteCtx is one.
type dbtx interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	PrepareContext(context.Context, string) (*sql.Stmt, error)
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

var _ dbtx = (*llmtool.WriteCtx)(nil)

// TestPrepareContext: statements a handler prepares run in the call's
// transaction (a write's commits with it or rolls back with it; a read's
// sees the call's snapshot), are checked as queries are, and die with the
// call. A read whose handler leaves rows of a prepared statement open
// ends all the same.
func TestPrepareContext(t *testing.T) {
	t.Parallel()
	type in struct {
		Names []string `json:"names"`
		Fail  bool     `json:"fail,omitempty"`
	}
	type out struct {
		Count int `json:"count"`
	}
	kept := make(chan *sql.Stmt, 1)
	addAll := llmtool.Write("add_all", "Add items through a prepared statement.", func(c *llmtool.WriteCtx, in in) (out, error) {
		var db dbtx = c
		st, err := db.PrepareContext(c, `INSERT INTO items (name) VALUES (?)`)
		if err != nil {
			return out{}, err
		}
		kept <- st //llmtoolvet:ignore the test checks that the statement dies with the call
		for _, n := range in.Names {
			if _, err := st.ExecContext(c, n); err != nil {
				return out{}, err
			}
		}
		var o out
		if err := db.QueryRowContext(c, `SELECT count(*) FROM items`).Scan(&o.Count); err != nil {
			return o, err
		}
		if in.Fail {
			return o, llmtool.Conflict("No.")
		}
		return o, nil
	})
	leftOpen := make(chan *sql.Rows, 1)
	countPrepared := llmtool.Read("count_prepared", "Count items through a prepared statement.", func(c *llmtool.ReadCtx, _ struct{}) (out, error) {
		st, err := c.PrepareContext(c, `SELECT count(*) FROM items WHERE id > ?`)
		if err != nil {
			return out{}, err
		}
		// Not closed: closing it would pull it from under its open rows.
		var o out
		if err := st.QueryRowContext(c, 0).Scan(&o.Count); err != nil {
			return o, err
		}
		rows, err := st.QueryContext(context.Background(), 0) // never closed by the handler
		leftOpen <- rows                                      //llmtoolvet:ignore the test closes them after the call
		return o, err
	})
	sneaky := llmtool.Write("prepare_own", "Prepare a write to llmtool's own table.", func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) {
		st, err := c.PrepareContext(c, `UPDATE llmtool_scope_settings SET enabled = 1`)
		if err == nil {
			_, err = st.Exec()
		}
		return struct{}{}, err
	})
	db := openDB(t)
	reg := newRegistry(t, db, llmtool.DefineTools("prepared", addAll, countPrepared, sneaky))

	res := invoke(reg, "add_all", `{"names":["pear","plum"]}`)
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"count":3}`, string(res.JSON))
	_, err := (<-kept).Exec("late")
	require.EqualError(t, err, "sql: statement is closed", "the statement died with the call")

	res = invoke(reg, "add_all", `{"names":["fig"],"fail":true}`)
	require.True(t, res.IsError)
	<-kept
	require.Equal(t, 3, countItems(t, db), "a failed call's prepared inserts roll back")

	for range 2 {
		res = invoke(reg, "count_prepared", `{}`)
		require.False(t, res.IsError, res.Text())
		require.JSONEq(t, `{"count":3}`, string(res.JSON))
		require.NoError(t, (<-leftOpen).Close())
	}

	res = invoke(reg, "prepare_own", `{}`)
	require.True(t, res.IsError)
	require.ErrorIs(t, res.Err, llmtool.ErrStatementRefused)
	require.Equal(t, 3, countItems(t, db))
}
