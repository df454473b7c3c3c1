package llmtool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/internal/pgtest"
)

// These tests hold on PostgreSQL whatever LLMTOOL_TEST_ENGINE says: they
// are about what differs from SQLite (snapshots, concurrent writers and
// their retries, several replicas, a server that goes away).

// openPG returns a fresh PostgreSQL database with an items table.
func openPG(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO items (name, qty) VALUES ('apple', 3)`)
	require.NoError(t, err)
	return db, dsn
}

// TestPostgresReadSnapshot: a read tool that counts a table twice around
// a concurrent insert sees the same count twice (REPEATABLE READ), where
// READ COMMITTED would show the insert.
func TestPostgresReadSnapshot(t *testing.T) {
	t.Parallel()
	db, _ := openPG(t)
	counted, inserted := make(chan struct{}), make(chan struct{})
	type out struct{ First, Second int }
	twice := llmtool.Read("count_twice", "Count the items twice.", func(c *llmtool.ReadCtx, _ struct{}) (out, error) {
		var o out
		if err := c.QueryRow(`SELECT count(*) FROM items`).Scan(&o.First); err != nil {
			return o, err
		}
		close(counted)
		<-inserted
		err := c.QueryRow(`SELECT count(*) FROM items`).Scan(&o.Second)
		return o, err
	})
	reg := newRegistry(t, db, llmtool.DefineTools("snap", twice))
	go func() {
		<-counted
		_, err := db.Exec(`INSERT INTO items (name) VALUES ('pear')`)
		if err != nil {
			t.Error(err)
		}
		close(inserted)
	}()
	res := invoke(reg, "count_twice", `{}`)
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"First":1,"Second":1}`, string(res.JSON))
	require.Equal(t, 2, countItems(t, db), "the insert committed")
}

// TestPostgresConcurrentWritesRetry: eight clients increment one row by
// read-modify-write. SERIALIZABLE fails the losers of each race (40001);
// the registry runs them again until they commit (none runs out of time
// here: see TestContentionDeadline), so every increment is in the row
// exactly once, after-commit hooks run once per commit, and the audit
// records count the attempts.
func TestPostgresConcurrentWritesRetry(t *testing.T) {
	t.Parallel()
	db, _ := openPG(t)
	var hooks atomic.Int64
	type in struct{}
	type out struct{ Qty int }
	bump := llmtool.Write("bump", "Add one to the apples.", func(c *llmtool.WriteCtx, _ in) (out, error) {
		var q int
		if err := c.QueryRow(`SELECT qty FROM items WHERE id = 1`).Scan(&q); err != nil {
			return out{}, fmt.Errorf("read qty: %w", err)
		}
		if _, err := c.Exec(`UPDATE items SET qty = ? WHERE id = 1`, q+1); err != nil {
			return out{}, fmt.Errorf("write qty: %w", err)
		}
		c.AfterCommit(func() { hooks.Add(1) })
		return out{Qty: q + 1}, nil
	})
	var mu sync.Mutex
	var records []audit.Record
	sink := audit.Func(func(_ context.Context, r audit.Record) {
		mu.Lock()
		records = append(records, r)
		mu.Unlock()
	})
	reg := newRegistryOpts(t, db, &llmtool.Options{Audit: []audit.Sink{sink}, Logger: quietLogger()}, llmtool.DefineTools("bump", bump))
	const clients, calls = 8, 10
	var ok, busy atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range calls {
				res := invoke(reg, "bump", `{}`)
				switch {
				case !res.IsError:
					ok.Add(1)
				case res.Text() == "The database is busy, so bump could not finish and changed nothing. Try again in a few seconds; if it is still busy, tell the user.":
					busy.Add(1)
				default:
					t.Errorf("unexpected result: %s", res.Text())
				}
			}
		})
	}
	wg.Wait()
	var qty int
	require.NoError(t, db.QueryRow(`SELECT qty FROM items WHERE id = 1`).Scan(&qty))
	require.Equal(t, 3+int(ok.Load()), qty, "every acknowledged increment is in the row exactly once")
	require.Equal(t, int64(clients*calls), ok.Load()+busy.Load())
	require.Zero(t, busy.Load(), "a write runs again until its deadline, not a number of times")
	require.Equal(t, ok.Load(), hooks.Load(), "AfterCommit runs once per committed call")
	retried := 0
	mu.Lock()
	defer mu.Unlock()
	for _, r := range records {
		if r.Committed {
			require.GreaterOrEqual(t, r.Attempts, 1)
		}
		if r.Attempts > 1 {
			retried++
		}
	}
	require.Positive(t, retried, "eight clients on one row collide, and the losers are run again")
	t.Logf("%d calls: %d committed, %d busy, %d retried", clients*calls, ok.Load(), busy.Load(), retried)
}

// TestPostgresReplicasSeeTenantChanges: two registries on one database, as
// two replicas behind a load balancer. Writes turned on through one are
// on in the other, and its subscribers hear of it within one
// TenantCacheTTL, without any call on it.
func TestPostgresReplicasSeeTenantChanges(t *testing.T) {
	t.Parallel()
	db1, dsn := openPG(t)
	db2, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db2.Close() })
	opts := &llmtool.Options{TenantCacheTTL: 200 * time.Millisecond, Logger: quietLogger()}
	reg1, err := llmtool.NewRegistry(db1, opts, itemTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg1.Close() })
	reg2, err := llmtool.NewRegistry(db2, opts, itemTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg2.Close() })

	ctx := llmtool.WithTenant(context.Background(), "team")
	heard := make(chan string, 4)
	cancel := reg2.Tenants().Subscribe(func(tenant string) { heard <- tenant })
	defer cancel()
	res := reg2.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)})
	require.Equal(t, `Tool "add_item" changes data, and write tools are off in tenant "team". Ask the user to enable write tools for this tenant, then call add_item again.`, res.Text())

	changed := time.Now()
	require.NoError(t, reg1.Tenants().SetWrites(context.Background(), "team", true))
	select {
	case tenant := <-heard:
		require.Equal(t, "team", tenant)
		t.Logf("the other replica heard of the change after %v", time.Since(changed).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("the other replica's subscribers did not hear of the change")
	}
	res = reg2.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"pear"}`)})
	require.False(t, res.IsError, res.Text())
}

// TestPostgresEngine: the engine is detected by asking the database, can
// be declared, and an engine llmtool does not run on is refused.
func TestPostgresEngine(t *testing.T) {
	t.Parallel()
	db, _ := openPG(t)
	engineOf := llmtool.Read("engine", "Say the engine.", func(c *llmtool.ReadCtx, _ struct{}) (map[string]string, error) {
		return map[string]string{"engine": c.Engine()}, nil
	})
	for _, declared := range []string{"", "postgres"} {
		reg := newRegistryOpts(t, db, &llmtool.Options{Engine: declared}, llmtool.DefineTools("e", engineOf))
		res := invoke(reg, "engine", `{}`)
		require.JSONEq(t, `{"engine":"postgres"}`, string(res.JSON), "declared %q", declared)
	}
	_, err := llmtool.NewRegistry(db, &llmtool.Options{Engine: "mysql"})
	require.EqualError(t, err, `llmtool: unknown engine "mysql": llmtool runs on "sqlite" and "postgres"`)
}

// clusterRegistry starts a private cluster (which the test may stop and
// start) whose items table holds "apple", and a registry over it.
func clusterRegistry(t *testing.T) (*pgtest.Cluster, *sql.DB, *llmtool.Registry) {
	t.Helper()
	cluster := pgtest.StartCluster(t)
	db, err := sql.Open("pgx", cluster.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO items (name) VALUES ('apple')`)
	require.NoError(t, err)
	return cluster, db, newRegistryOpts(t, db, &llmtool.Options{Logger: quietLogger()}, itemTools)
}

// TestPostgresServerGoesAway: calls made while the server is down get a
// clear sentence (and nothing half-written); once it is back, calls work
// again without restarting anything.
func TestPostgresServerGoesAway(t *testing.T) {
	t.Parallel()
	cluster, db, reg := clusterRegistry(t)

	cluster.Stop()
	for _, call := range [][2]string{{"add_item", `{"name":"pear"}`}, {"get_item", `{"id":1}`}} {
		res := invoke(reg, call[0], call[1])
		require.True(t, res.IsError)
		require.Equal(t, "The database cannot be reached right now, so "+call[0]+" could not finish. Try again in a few seconds; if it keeps failing, tell the user the database is down.", res.Text())
	}

	cluster.Start()
	require.Eventually(t, func() bool { return !invoke(reg, "add_item", `{"name":"plum"}`).IsError }, 30*time.Second, 100*time.Millisecond)
	var names []string
	rows, err := db.Query(`SELECT name FROM items ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.Equal(t, []string{"apple", "plum"}, names, "nothing of the failed call was saved")
}

// TestPostgresCommitGuardDropped: the commit guard that WriteCtx.Tx
// needed (a table, its deferred trigger and the trigger's function) is
// dropped by a later migration step, on a new database as on one that
// had it.
func TestPostgresCommitGuardDropped(t *testing.T) {
	t.Parallel()
	db, _ := openPG(t)
	_ = newRegistryOpts(t, db, &llmtool.Options{Logger: quietLogger()}, itemTools)
	var table, function sql.NullString
	require.NoError(t, db.QueryRow(`SELECT to_regclass('llmtool_commit_guard')::text, to_regprocedure('llmtool_commit_guard_check()')::text`).Scan(&table, &function))
	require.False(t, table.Valid, "the guard's table is gone")
	require.False(t, function.Valid, "the guard's function is gone")
	var version int
	require.NoError(t, db.QueryRow(`SELECT version FROM llmtool_migrations WHERE subject = 'llmtool'`).Scan(&version))
	require.Equal(t, 5, version)
}

// TestPostgresReadsInSnapshot: every read call runs in a REPEATABLE READ
// snapshot, its handler once, however many statements it runs; its writes
// are refused by the server.
func TestPostgresReadsInSnapshot(t *testing.T) {
	t.Parallel()
	db, _ := openPG(t)
	var runs atomic.Int64
	type in struct {
		Twice bool `json:"twice,omitempty"`
	}
	type out struct {
		Isolation []string `json:"isolation"`
	}
	probe := llmtool.Read("probe", "Report the isolation of each statement.", func(c *llmtool.ReadCtx, in in) (out, error) {
		runs.Add(1)
		var o out
		n := 1
		if in.Twice {
			n = 2
		}
		for range n {
			var iso string
			if err := c.QueryRow(`SELECT current_setting('transaction_isolation')`).Scan(&iso); err != nil {
				return o, err
			}
			o.Isolation = append(o.Isolation, iso)
		}
		return o, nil
	})
	reg := newRegistryOpts(t, db, &llmtool.Options{Logger: quietLogger()}, llmtool.DefineTools("probe", probe))
	for _, tc := range []struct {
		args string
		want string
	}{
		{`{}`, `{"isolation":["repeatable read"]}`},
		{`{}`, `{"isolation":["repeatable read"]}`},
		{`{"twice":true}`, `{"isolation":["repeatable read","repeatable read"]}`},
		{`{}`, `{"isolation":["repeatable read"]}`},
	} {
		before := runs.Load()
		res := invoke(reg, "probe", tc.args)
		require.False(t, res.IsError, res.Text())
		require.JSONEq(t, tc.want, string(res.JSON), tc.args)
		require.Equal(t, int64(1), runs.Load()-before, "handler runs for %s", tc.args)
	}

	fresh := newRegistryOpts(t, db, &llmtool.Options{Logger: quietLogger()}, llmtool.DefineTools("probe2", llmtool.Read("probe2", "Insert from a read tool.",
		func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
			_, err := c.Query(`INSERT INTO items (name) VALUES ('sneaky')`)
			return struct{}{}, err
		})))
	for range 2 {
		res := invoke(fresh, "probe2", `{}`)
		require.EqualError(t, res.Err, "llmtool: tool probe2 is a read tool, so the database refuses its writes; declare it with llmtool.Write to change data: ERROR: cannot execute INSERT in a read-only transaction (SQLSTATE 25006)")
	}
	require.Equal(t, 1, countItems(t, db))
}

// TestPostgresReadAfterTerminate: the registry's reserved read
// connections lose their server sessions (as in a restart, or an
// administrator's pg_terminate_backend); the next reads begin on fresh
// connections and succeed, rather than fail on the dead ones.
func TestPostgresReadAfterTerminate(t *testing.T) {
	t.Parallel()
	db, dsn := openPG(t)
	entered, release := make(chan struct{}), make(chan struct{})
	hold := llmtool.Read("hold", "Read, and wait.", func(c *llmtool.ReadCtx, _ struct{}) (okOut, error) {
		var n int
		err := c.QueryRow(`SELECT count(*) FROM items`).Scan(&n)
		entered <- struct{}{}
		<-release
		return okOut{OK: true}, err
	})
	reg := newRegistry(t, db, itemTools, llmtool.DefineTools("held", hold))
	const readers = 3 // each holds a reserved read connection at once
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			if res := invoke(reg, "hold", `{}`); res.IsError {
				t.Error(res.Text())
			}
		})
	}
	for range readers {
		<-entered
	}
	close(release)
	wg.Wait()

	admin, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer admin.Close()
	var ended int
	require.NoError(t, admin.QueryRow(`SELECT count(*) FROM (SELECT pid FROM pg_stat_activity
	WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' OFFSET 0) s
WHERE pg_terminate_backend(s.pid, 5000)`).Scan(&ended))
	require.GreaterOrEqual(t, ended, readers, "the reserved connections' sessions ended")
	for range readers + 1 {
		res := invoke(reg, "get_item", `{"id": 1}`)
		require.False(t, res.IsError, res.Text())
	}
}

// TestPostgresRestartUnderLoad: four clients keep calling while the
// server is stopped and started again. Every answer is a result or the
// "cannot be reached" sentence, every acknowledged write is in the table
// exactly once, no write is there twice, and calls work again after the
// restart without restarting the registry.
func TestPostgresRestartUnderLoad(t *testing.T) {
	t.Parallel()
	cluster, db, reg := clusterRegistry(t)

	var (
		stop        atomic.Bool
		mu          sync.Mutex
		acked       []string
		ok, refused atomic.Int64
		wg          sync.WaitGroup
	)
	unreachable := func(tool string) string {
		return "The database cannot be reached right now, so " + tool + " could not finish. Try again in a few seconds; if it keeps failing, tell the user the database is down."
	}
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				for _, call := range [][2]string{{"add_item", `{"name":"` + name + `"}`}, {"get_item", `{"id":1}`}} {
					res := invoke(reg, call[0], call[1])
					switch {
					case !res.IsError:
						ok.Add(1)
						if call[0] == "add_item" {
							mu.Lock()
							acked = append(acked, name)
							mu.Unlock()
						}
					case res.Text() == unreachable(call[0]):
						refused.Add(1)
					default:
						t.Errorf("%s: unexpected answer: %s (%v)", call[0], res.Text(), res.Err)
					}
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	cluster.Stop()
	time.Sleep(500 * time.Millisecond)
	cluster.Start()
	require.Eventually(t, func() bool { return !invoke(reg, "get_item", `{"id":1}`).IsError }, 30*time.Second, 100*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	require.Positive(t, refused.Load(), "some calls met the stopped server")

	count := map[string]int{}
	rows, err := db.Query(`SELECT name FROM items WHERE name <> 'apple'`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		count[n]++
	}
	require.NoError(t, rows.Err())
	for n, c := range count {
		require.Equal(t, 1, c, "%s saved once", n)
	}
	for _, n := range acked {
		require.Equal(t, 1, count[n], "acknowledged %s is saved", n)
	}
	t.Logf("%d results, %d answered 'cannot be reached', %d acknowledged writes, %d rows", ok.Load(), refused.Load(), len(acked), len(count))
}

// wrappedDriver hides the SQLite driver's type behind another, as a
// tracing or metrics wrapper does.
type wrappedDriver struct{ driver.Driver }

func init() { sql.Register("llmtool-test-wrapped-sqlite", wrappedDriver{(&sqlite.Driver{})}) }

// TestWrappedDriverKeepsReadOnly: the engine is asked of the database, not
// guessed from the driver's type, so a SQLite driver behind a wrapper is
// still SQLite, and a read tool's write is still refused.
func TestWrappedDriverKeepsReadOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "wrapped.db")
	db, err := sql.Open("llmtool-test-wrapped-sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	sneaky := llmtool.Read("sneaky", "Try to write from a read tool.", func(c *llmtool.ReadCtx, _ struct{}) (map[string]string, error) {
		_, err := c.Query(`INSERT INTO items (name) VALUES ('x')`)
		return map[string]string{"engine": c.Engine()}, err
	})
	reg := newRegistryOpts(t, db, &llmtool.Options{Logger: quietLogger()}, llmtool.DefineTools("w", sneaky))
	res := invoke(reg, "sneaky", `{}`)
	require.EqualError(t, res.Err, "llmtool: statement refused: tool sneaky ran statement `INSERT INTO items (name) VALUES ('x')` inserts into items in a read tool; declare the tool with llmtool.Write to change data.")
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM items`).Scan(&n))
	require.Zero(t, n)
}

// wrappedConnDriver wraps the SQLite driver's connections too, as some
// tracing wrappers do: they no longer offer the driver's authorizer.
type wrappedConnDriver struct{ d driver.Driver }

type wrappedConn struct{ driver.Conn }

func (w wrappedConnDriver) Open(name string) (driver.Conn, error) {
	c, err := w.d.Open(name)
	if err != nil {
		return nil, err
	}
	return wrappedConn{c}, nil
}

func init() {
	sql.Register("llmtool-test-wrapped-sqlite-conns", wrappedConnDriver{&sqlite.Driver{}})
}

// TestSQLiteWithoutAuthorizer: a SQLite database whose connections do not
// offer modernc.org/sqlite's authorizer gets no registry, and the error
// says how to open it.
func TestSQLiteWithoutAuthorizer(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("llmtool-test-wrapped-sqlite-conns", "file:"+filepath.Join(t.TempDir(), "wrapped.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, nil, itemTools)
	require.Nil(t, reg)
	require.EqualError(t, err, `llmtool: this SQLite connection does not offer modernc.org/sqlite's authorizer (sqlite.AuthorizerRegisterer), which llmtool installs on the connections it runs calls on to keep each tool's SQL inside its call; open the database with modernc.org/sqlite v1.62 or later (sqlite.Open in package github.com/llmtool/llmtool/sqlite does), not with another SQLite driver or a wrapper around its connections (its connection is a llmtool_test.wrappedConn)`)
}
