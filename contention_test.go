package llmtool_test

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/sqlite"
)

// Writes under contention (issue 26): a write that loses to other writes
// runs again until its deadline, on both engines, and only then tells the
// model the database is busy. These tests run on real SQLite files and a
// real PostgreSQL server (skipped without LLMTOOL_TEST_POSTGRES).

// busyBump is the sentence of a bump that ran out of time to other writes.
const busyBump = "The database is busy, so bump could not finish and changed nothing. Try again in a few seconds; if it is still busy, tell the user."

// counterSchema is a hot row, counter 1, and a row per committed bump.
const counterSchema = `CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
INSERT INTO counter (id, n) VALUES (1, 0);
CREATE TABLE bumps (call TEXT PRIMARY KEY)`

// bumpHooks counts the after-commit hooks of each bump, by its call.
var bumpHooks sync.Map // string -> *atomic.Int64

type BumpIn struct {
	Call string `json:"call" desc:"A name for the call, unique per test."`
}

type BumpOut struct {
	N int `json:"n"`
}

var (
	// bump reads the counter and writes it back plus one: a lost update
	// under READ COMMITTED, a serialization failure under SERIALIZABLE
	// when two bumps overlap, and a wait for the write lock on SQLite. It
	// records its call in bumps, whose key a second commit would violate.
	bump = llmtool.Write("bump", "Add one to the counter.", func(c *llmtool.WriteCtx, in BumpIn) (BumpOut, error) {
		var n int
		if err := c.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
			return BumpOut{}, fmt.Errorf("read n: %w", err)
		}
		if _, err := c.Exec(`UPDATE counter SET n = ? WHERE id = 1`, n+1); err != nil {
			return BumpOut{}, fmt.Errorf("write n: %w", err)
		}
		if _, err := c.Exec(`INSERT INTO bumps (call) VALUES (?)`, in.Call); err != nil {
			return BumpOut{}, fmt.Errorf("record call: %w", err)
		}
		c.AfterCommit(func() {
			v, _ := bumpHooks.LoadOrStore(in.Call, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
		})
		return BumpOut{N: n + 1}, nil
	})
	// alwaysLoses records its call, then loses a race, every run.
	alwaysLoses = llmtool.Write("always_loses", "Lose every race.", func(c *llmtool.WriteCtx, in BumpIn) (struct{}, error) {
		if _, err := c.Exec(`INSERT INTO bumps (call) VALUES (?)`, in.Call); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, serializationErr{}
	})
	// slowBump waits for its context before it reads: a handler that runs
	// out of time without contention.
	slowBump = llmtool.Write("slow_bump", "Add one, slowly.", func(c *llmtool.WriteCtx, in BumpIn) (struct{}, error) {
		<-c.Done()
		return struct{}{}, c.Err()
	})
	// sleepBump sleeps in a statement (PostgreSQL) until its deadline cuts
	// it: no lock wait.
	sleepBump = llmtool.Write("sleep_bump", "Add one, after a pause on the server.", func(c *llmtool.WriteCtx, in BumpIn) (struct{}, error) {
		_, err := c.Exec(`SELECT pg_sleep(10)`)
		return struct{}{}, err
	})
	// dropUnderRows drops the counter under its own open rows: SQLite's
	// SQLITE_LOCKED, a conflict within the connection, not another's lock.
	dropUnderRows = llmtool.Write("drop_under_rows", "Drop the counter while reading it.", func(c *llmtool.WriteCtx, in BumpIn) (struct{}, error) {
		rows, err := c.Query(`SELECT n FROM counter`)
		if err != nil {
			return struct{}{}, err
		}
		defer rows.Close()
		rows.Next()
		_, err = c.Exec(`DROP TABLE counter`)
		return struct{}{}, err
	})
	counterTools = llmtool.DefineTools("counter", bump, alwaysLoses, slowBump, sleepBump, dropUnderRows)
)

// onMessage is a log handler that closes seen when a record with message
// msg is logged: a test waits on it for something the registry does.
type onMessage struct {
	msg  string
	seen chan struct{}
	once *sync.Once
}

func newOnMessage(msg string) *onMessage {
	return &onMessage{msg: msg, seen: make(chan struct{}), once: new(sync.Once)}
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *onMessage) WithGroup(string) slog.Handler            { return h }
func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}

// ranAgain is the message a registry logs (at Debug) before it runs a
// write again.
const ranAgain = "llmtool: write lost to other writes and runs again"

// counterDB creates the counter schema in db.
func counterDB(t testing.TB, db *sql.DB) *sql.DB {
	t.Helper()
	for q := range strings.SplitSeq(counterSchema, ";") {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	return db
}

// counterRegistry is a registry of counterTools over db with writes on in
// the default tenant, auditing into recs.
func counterRegistry(t testing.TB, db *sql.DB, recs *recorder, opts llmtool.Options) *llmtool.Registry {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	opts.Audit = []audit.Sink{recs}
	reg, err := llmtool.NewRegistry(db, &opts, counterTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	require.NoError(t, reg.Tenants().SetWrites(context.Background(), "", true))
	return reg
}

// counter returns the hot row's value and the number of bumps recorded.
func counter(t testing.TB, db *sql.DB) (n, bumps int) {
	t.Helper()
	require.NoError(t, db.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n))
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM bumps`).Scan(&bumps))
	return n, bumps
}

// hammer makes writers goroutines call bump calls times each, goroutine g
// on regs[g % len(regs)], and checks that every call committed exactly
// once: no failure, the counter and the bumps table at writers·calls, each
// call's after-commit hook run once, and one committed audit record per
// call. It logs the calls' waits.
func hammer(t *testing.T, db *sql.DB, regs []*llmtool.Registry, recs *recorder, writers, calls int) {
	t.Helper()
	prefix := t.Name() + "/"
	latency := make([][]time.Duration, writers)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for g := range writers {
		reg := regs[g%len(regs)]
		wg.Go(func() {
			for i := range calls {
				args := fmt.Sprintf(`{"call": %q}`, fmt.Sprintf("%s%d.%d", prefix, g, i))
				start := time.Now()
				res := invoke(reg, "bump", args)
				latency[g] = append(latency[g], time.Since(start))
				if res.IsError {
					failed.Add(1)
					t.Errorf("call %d.%d: %s (%v)", g, i, res.Text(), res.Err)
				}
			}
		})
	}
	wg.Wait()
	total := writers * calls
	require.Zero(t, failed.Load(), "no call fails under contention")
	n, bumps := counter(t, db)
	require.Equal(t, total, n, "every call's increment is in the row, once")
	require.Equal(t, total, bumps, "every call committed once")
	hooks := 0
	bumpHooks.Range(func(k, v any) bool {
		if strings.HasPrefix(k.(string), prefix) {
			require.Equal(t, int64(1), v.(*atomic.Int64).Load(), "after-commit hooks of %s", k)
			hooks++
		}
		return true
	})
	require.Equal(t, total, hooks, "every call's hook ran once")

	var retries, retried int
	var waits []time.Duration
	rs := recs.all()
	require.Len(t, rs, total)
	for _, r := range rs {
		require.True(t, r.Committed)
		require.Equal(t, audit.OutcomeOK, r.Outcome)
		require.GreaterOrEqual(t, r.Attempts, 1)
		if r.Attempts > 1 {
			require.Positive(t, r.RetryWait, "a call run again lost time")
			retries += r.Attempts - 1
			retried++
		} else {
			require.Zero(t, r.RetryWait)
		}
		waits = append(waits, r.RetryWait)
	}
	all := slices.Concat(latency...)
	t.Logf("%d calls, %d writers on %d registries: 0 failed; %d runs again over %d calls; call time p50 %s p99 %s max %s; retry wait p50 %s p99 %s max %s",
		total, writers, len(regs), retries, retried, pct(all, .5), pct(all, .99), pct(all, 1), pct(waits, .5), pct(waits, .99), pct(waits, 1))
}

// pct returns the p-quantile of ds (p in [0, 1]), rounded for reading.
func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	if len(s) == 0 {
		return 0
	}
	return s[int(p*float64(len(s)-1))].Round(10 * time.Microsecond)
}

// TestContentionPostgresHotRow: two replicas (two registries, each on its
// own pool) on one PostgreSQL database, eight writers, a hundred calls
// each, all on one row. SERIALIZABLE fails the losers of each race; every
// call runs again until it commits, so none fails.
func TestContentionPostgresHotRow(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	db, db2 := counterDB(t, openPGPool(t, dsn)), openPGPool(t, dsn)
	// Connections open before the calls, so that the calls' times are
	// their waits for one another, not for new server processes.
	idleConns(t, db, 8)
	idleConns(t, db2, 8)
	recs := &recorder{}
	regs := []*llmtool.Registry{
		counterRegistry(t, db, recs, llmtool.Options{}),
		counterRegistry(t, db2, recs, llmtool.Options{}),
	}
	hammer(t, db, regs, recs, 8, 100)
}

// idleConns opens n connections in db's pool and leaves them idle there.
func idleConns(t testing.TB, db *sql.DB, n int) {
	t.Helper()
	db.SetMaxIdleConns(n + 2)
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(context.Background())
		require.NoError(t, err)
		conns[i] = c
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
}

// openPGPool opens a pool of its own on the PostgreSQL database at dsn.
func openPGPool(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestContentionSQLiteHotRow: eight writers, a hundred calls each, on one
// registry over a SQLite file: writes take turns, and none fails.
func TestContentionSQLiteHotRow(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	counterDB(t, db)
	recs := &recorder{}
	hammer(t, db, []*llmtool.Registry{counterRegistry(t, db, recs, llmtool.Options{})}, recs, 8, 100)
}

// TestContentionSQLiteOtherProcess: another process (a second *sql.DB on
// the file) holds the write lock past the registry's busy timeout, so the
// call's BEGIN IMMEDIATE meets SQLITE_BUSY; the call runs again until the
// holder commits, and then commits once, on top of the holder's change.
func TestContentionSQLiteOtherProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	// A busy timeout of 5 ms, so BUSY comes at once rather than after
	// sqlite.Open's ten seconds.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5)&_pragma=journal_mode(WAL)&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	counterDB(t, db)
	other, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })

	recs := &recorder{}
	logs := newOnMessage(ranAgain)
	reg := counterRegistry(t, db, recs, llmtool.Options{Logger: slog.New(logs)})

	hold, err := other.Begin() // BEGIN IMMEDIATE: the write lock
	require.NoError(t, err)
	_, err = hold.Exec(`UPDATE counter SET n = n + 10 WHERE id = 1`)
	require.NoError(t, err)
	done := make(chan llmtool.Result, 1)
	go func() { done <- invoke(reg, "bump", `{"call": "after the holder"}`) }()
	<-logs.seen // the call's BEGIN met SQLITE_BUSY and it will run again
	require.NoError(t, hold.Commit())

	res := <-done
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"n": 11}`, string(res.JSON))
	n, bumps := counter(t, db)
	require.Equal(t, 11, n, "the holder's change and the call's, each once")
	require.Equal(t, 1, bumps)
	rs := recs.all()
	require.Len(t, rs, 1)
	require.True(t, rs[0].Committed)
	require.Greater(t, rs[0].Attempts, 1, "the call ran again")
	require.Positive(t, rs[0].RetryWait)
}

// TestContentionLockedWithinTheCall: SQLITE_LOCKED from the call's own
// connection comes back however often the call runs, so it fails at once,
// as an internal error, not as a busy database.
func TestContentionLockedWithinTheCall(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "locked.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	recs := &recorder{}
	reg := counterRegistry(t, counterDB(t, db), recs, llmtool.Options{})
	res := invoke(reg, "drop_under_rows", `{"call": "x"}`)
	require.True(t, res.IsError)
	require.Equal(t, "Internal error in drop_under_rows; the details were logged. Try again once; if it fails again, tell the user the tool is failing.", res.Text())
	require.ErrorContains(t, res.Err, "database table is locked (6)")
	rs := recs.all()
	require.Len(t, rs, 1)
	require.Equal(t, 1, rs[0].Attempts, "run once")
	n, _ := counter(t, db)
	require.Zero(t, n, "the counter is still there")
}

// TestContentionDeadline: a call whose deadline is shorter than the
// contention ends with the busy sentence, and nothing changed; a call that
// runs out of time without contention still "timed out". Each registry
// made one call first (the counter at 1), so that the call under test
// finds its connections open.
func TestContentionDeadline(t *testing.T) {
	t.Parallel()
	const (
		timedOut  = "The call to %s timed out before it finished; nothing was saved. Call it again, with less work if possible."
		cancelled = "The call to always_loses was cancelled before it finished; nothing was saved. Call it again if it is still needed."
	)
	type setup struct {
		db       *sql.DB
		reg      *llmtool.Registry
		ctx      func() context.Context // made just before the call; nil: a timeout
		timeout  time.Duration          // the timeout of a nil ctx; 0: 50 ms
		release  func()                 // ends the contention, after the call
		minRuns  int
		contains string // in the error's text, for the log
	}
	// warm makes a registry over db, with one committed bump.
	warm := func(t *testing.T, db *sql.DB, recs *recorder, opts llmtool.Options) *llmtool.Registry {
		reg := counterRegistry(t, db, recs, opts)
		res := invoke(reg, "bump", `{"call": "warm"}`)
		require.False(t, res.IsError, res.Text())
		recs.mu.Lock()
		recs.recs = nil
		recs.mu.Unlock()
		return reg
	}
	sqliteFile := func(t *testing.T) (*sql.DB, string) {
		path := filepath.Join(t.TempDir(), "deadline.db")
		db, err := sqlite.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return counterDB(t, db), path
	}
	for _, tc := range []struct {
		name, tool string
		want       string
		setup      func(t *testing.T, recs *recorder) setup
	}{
		{
			name: "another process holds SQLite's write lock", tool: "bump", want: busyBump,
			setup: func(t *testing.T, recs *recorder) setup {
				db, path := sqliteFile(t)
				reg := warm(t, db, recs, llmtool.Options{})
				other, err := sqlite.Open(path)
				require.NoError(t, err)
				t.Cleanup(func() { other.Close() })
				hold, err := other.Begin() // BEGIN IMMEDIATE
				require.NoError(t, err)
				_, err = hold.Exec(`UPDATE counter SET n = 10 WHERE id = 1`)
				require.NoError(t, err)
				return setup{db: db, reg: reg, minRuns: 1, release: func() { require.NoError(t, hold.Rollback()) },
					contains: "(llmtool: begin transaction: waited for other transactions until the call's deadline: context deadline exceeded)"}
			},
		},
		{
			name: "another session holds PostgreSQL's row lock", tool: "bump", want: busyBump,
			setup: func(t *testing.T, recs *recorder) setup {
				dsn := pgtest.DSN(t)
				db := counterDB(t, openPGPool(t, dsn))
				reg := warm(t, db, recs, llmtool.Options{})
				idleConns(t, db, 2) // for the registry's question about lock waits
				hold, err := openPGPool(t, dsn).Begin()
				require.NoError(t, err)
				var n int
				require.NoError(t, hold.QueryRow(`SELECT n FROM counter WHERE id = 1 FOR UPDATE`).Scan(&n))
				// The registry asks about lock waits a quarter of the time
				// left before the deadline, at most 100 ms: 400 ms leaves a
				// loaded machine time to ask before pgx cancels.
				return setup{db: db, reg: reg, minRuns: 1, timeout: 400 * time.Millisecond, release: func() { require.NoError(t, hold.Rollback()) },
					contains: "(waited for other transactions until the call's deadline: write n: timeout: context deadline exceeded)"}
			},
		},
		{
			name: "every run loses, until the context's deadline", tool: "always_loses", want: strings.ReplaceAll(busyBump, "bump", "always_loses"),
			setup: func(t *testing.T, recs *recorder) setup {
				db, _ := sqliteFile(t)
				// 500 ms, not the default 50: three runs must fit a
				// loaded CI machine's scheduling.
				return setup{db: db, reg: warm(t, db, recs, llmtool.Options{}), minRuns: 3, timeout: 500 * time.Millisecond,
					contains: "the database stayed busy with other writes until the call's deadline; nothing was saved: could not serialize access due to concurrent update"}
			},
		},
		{
			name: "every run loses, until RetryFor", tool: "always_loses", want: strings.ReplaceAll(busyBump, "bump", "always_loses"),
			setup: func(t *testing.T, recs *recorder) setup {
				db, _ := sqliteFile(t)
				return setup{db: db, reg: warm(t, db, recs, llmtool.Options{RetryFor: 500 * time.Millisecond}), minRuns: 3,
					ctx:      context.Background,
					contains: "the database stayed busy with other writes until the call's deadline; nothing was saved: could not serialize access due to concurrent update"}
			},
		},
		{
			name: "the caller cancels while the call loses", tool: "always_loses", want: cancelled,
			setup: func(t *testing.T, recs *recorder) setup {
				db, _ := sqliteFile(t)
				logs := newOnMessage(ranAgain)
				reg := warm(t, db, recs, llmtool.Options{Logger: slog.New(logs)})
				return setup{db: db, reg: reg, minRuns: 1, contains: "context canceled",
					ctx: func() context.Context {
						ctx, cancel := context.WithCancel(context.Background())
						t.Cleanup(cancel)
						go func() {
							<-logs.seen
							cancel()
						}()
						return ctx
					}}
			},
		},
		{
			name: "a slow handler is no contention", tool: "slow_bump", want: fmt.Sprintf(timedOut, "slow_bump"),
			setup: func(t *testing.T, recs *recorder) setup {
				db, _ := sqliteFile(t)
				return setup{db: db, reg: warm(t, db, recs, llmtool.Options{}), minRuns: 1, contains: "context deadline exceeded"}
			},
		},
		{
			name: "a slow statement is no lock wait", tool: "sleep_bump", want: fmt.Sprintf(timedOut, "sleep_bump"),
			setup: func(t *testing.T, recs *recorder) setup {
				db := counterDB(t, openPGPool(t, pgtest.DSN(t)))
				return setup{db: db, reg: warm(t, db, recs, llmtool.Options{}), minRuns: 1, contains: "timeout: context deadline exceeded"}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			recs := &recorder{}
			s := tc.setup(t, recs)
			ctx := context.Background()
			if s.ctx != nil {
				ctx = s.ctx()
			} else {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, cmp.Or(s.timeout, 50*time.Millisecond))
				defer cancel()
			}
			res := s.reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Args: []byte(`{"call": "late"}`)})
			if s.release != nil {
				s.release()
			}
			require.True(t, res.IsError)
			require.Equal(t, tc.want, res.Text(), "%v", res.Err)
			require.ErrorContains(t, res.Err, s.contains)
			n, bumps := counter(t, s.db)
			require.Equal(t, 1, n, "nothing changed")
			require.Equal(t, 1, bumps, "nothing changed")
			rs := recs.all()
			require.Len(t, rs, 1)
			require.False(t, rs[0].Committed)
			require.GreaterOrEqual(t, rs[0].Attempts, s.minRuns)
			if rs[0].Attempts > 1 {
				require.Positive(t, rs[0].RetryWait)
			}
		})
	}
}
