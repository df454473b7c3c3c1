package llmtool_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// connState is what a connection's state must be when a call hands it
// back: the registry's settings, no attached database, no temp objects.
type connState struct {
	QueryOnly   int `json:"queryOnly"`
	ForeignKeys int `json:"foreignKeys"`
	Attached    int `json:"attached"`
	TempObjects int `json:"tempObjects"`
}

const connStateSQL = `SELECT (SELECT query_only FROM pragma_query_only()), (SELECT foreign_keys FROM pragma_foreign_keys()),
	(SELECT count(*) FROM pragma_database_list() WHERE name NOT IN ('main', 'temp')), (SELECT count(*) FROM temp.sqlite_master)`

func scanConnState(row *sql.Row) (connState, error) {
	var s connState
	err := row.Scan(&s.QueryOnly, &s.ForeignKeys, &s.Attached, &s.TempObjects)
	return s, err
}

// escapeFixture is a registry whose tools try to break out of their
// transaction, beside tools that report the connection's state.
type escapeFixture struct {
	db    *sql.DB
	reg   *llmtool.Registry
	log   *lockedBuffer
	other string // another SQLite file, for ATTACH
}

func newEscapeFixture(t *testing.T, tools ...*llmtool.Tool) *escapeFixture {
	t.Helper()
	f := &escapeFixture{db: openDB(t), log: &lockedBuffer{}, other: filepath.Join(t.TempDir(), "other.db")}
	readState := llmtool.Read("read_state", "Report the read connection's state.",
		func(c *llmtool.ReadCtx, _ struct{}) (connState, error) {
			return scanConnState(c.QueryRow(connStateSQL))
		})
	writeState := llmtool.Write("write_state", "Report the write connection's state.",
		func(c *llmtool.WriteCtx, _ struct{}) (connState, error) {
			return scanConnState(c.QueryRow(connStateSQL))
		})
	f.reg = newRegistryOpts(t, f.db, &llmtool.Options{
		Logger:         slog.New(slog.NewTextHandler(f.log, nil)),
		ValidateOutput: true,
	}, llmtool.DefineTools("escape", append(tools, readState, writeState)...))
	return f
}

// requireClean checks that the database holds only its seed row and that
// every connection the registry hands out, and every connection in the
// host's pool afterwards, has the state the registry set.
func (f *escapeFixture) requireClean(t *testing.T) {
	t.Helper()
	require.Equal(t, 1, countItems(t, f.db), "the database is unchanged")
	for range 3 {
		res := invoke(f.reg, "read_state", "")
		require.False(t, res.IsError, res.Text())
		require.JSONEq(t, `{"queryOnly":1,"foreignKeys":1,"attached":0,"tempObjects":0}`, string(res.JSON), "a read call's connection")
		res = invoke(f.reg, "write_state", "")
		require.False(t, res.IsError, res.Text())
		require.JSONEq(t, `{"queryOnly":0,"foreignKeys":1,"attached":0,"tempObjects":0}`, string(res.JSON), "a write call's connection")
	}
	// A read tool's INSERT is still refused by the database.
	require.NoError(t, f.reg.Close())
	ctx := context.Background()
	open := f.db.Stats().OpenConnections
	conns := make([]*sql.Conn, 0, open)
	for range open {
		c, err := f.db.Conn(ctx)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	for _, c := range conns {
		s, err := scanConnState(c.QueryRowContext(ctx, connStateSQL))
		require.NoError(t, err)
		require.Equal(t, connState{QueryOnly: 0, ForeignKeys: 1}, s, "a pooled connection")
		tx, err := c.BeginTx(ctx, nil)
		require.NoError(t, err, "the connection is in autocommit mode")
		require.NoError(t, tx.Rollback())
		require.NoError(t, c.Close())
	}
}

type escapeIn struct {
	Other string `json:"other,omitempty" desc:"Another database file."`
}

// The escape suite: each tool tries to change its transaction or its
// connection from inside. Each call fails, nothing is saved, and every
// connection is as the registry set it.
func TestEscapeAttempts(t *testing.T) {
	t.Parallel()
	const generic = "Internal error in %s; the details were logged. Try again once; if it fails again, tell the user the tool is failing."
	insert := `INSERT INTO items (name) VALUES ('escaped') RETURNING id`
	readTool := func(name string, h func(c *llmtool.ReadCtx, in escapeIn) error) *llmtool.Tool {
		return llmtool.Read(name, "Try to escape.", func(c *llmtool.ReadCtx, in escapeIn) (struct{}, error) {
			return struct{}{}, h(c, in)
		})
	}
	writeTool := func(name string, h func(c *llmtool.WriteCtx, in escapeIn) error) *llmtool.Tool {
		return llmtool.Write(name, "Try to escape.", func(c *llmtool.WriteCtx, in escapeIn) (struct{}, error) {
			return struct{}{}, h(c, in)
		})
	}
	// ignore runs a statement, ignores its error and goes on as if it had
	// worked: a refusal must fail the call all the same.
	ignore := func(c interface {
		QueryRow(string, ...any) *sql.Row
	}, q string, args ...any) {
		var x any
		_ = c.QueryRow(q, args...).Scan(&x)
	}
	cases := []struct {
		tool *llmtool.Tool
		log  string // in the log, for the tool's author
		err  error  // what res.Err wraps
	}{
		{readTool("read_pragma_then_insert", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "PRAGMA query_only = 0")
			ignore(c, insert)
			return nil
		}), "statement=\"PRAGMA query_only = 0\" why=\"sets a pragma, which changes the connection's settings\"", llmtool.ErrStatementRefused},
		{readTool("read_pragma_call_form", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "pragma main.query_only(false)")
			ignore(c, insert)
			return nil
		}), "statement=\"pragma main.query_only(false)\"", llmtool.ErrStatementRefused},
		{readTool("read_hidden_second_statement", func(c *llmtool.ReadCtx, _ escapeIn) error {
			rows, err := c.Query("SELECT 1; PRAGMA query_only = 0")
			if err == nil {
				rows.Close()
			}
			ignore(c, insert)
			return nil
		}), "statement=\"PRAGMA query_only = 0\"", llmtool.ErrStatementRefused},
		{readTool("read_explain_pragma", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "EXPLAIN PRAGMA query_only = 0")
			ignore(c, insert)
			return nil
		}), "statement=\"EXPLAIN PRAGMA query_only = 0\"", llmtool.ErrStatementRefused},
		{readTool("read_commit_then_insert", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "COMMIT")
			ignore(c, insert)
			return nil
		}), "statement=COMMIT why=\"controls the transaction\"", llmtool.ErrStatementRefused},
		{readTool("read_rollback_begin", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "ROLLBACK")
			ignore(c, "BEGIN IMMEDIATE")
			return nil
		}), "statement=ROLLBACK", llmtool.ErrStatementRefused},
		{readTool("read_attach", func(c *llmtool.ReadCtx, in escapeIn) error {
			ignore(c, "ATTACH DATABASE ? AS other", in.Other)
			return nil
		}), "statement=\"ATTACH DATABASE ? AS other\" why=\"attaches another database to the connection\"", llmtool.ErrStatementRefused},
		{readTool("read_temp_table", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "CREATE TEMP TABLE scratch (x)")
			return nil
		}), "why=\"creates or changes an object that lives with the connection, not the database\"", llmtool.ErrStatementRefused},
		{readTool("read_rows_left_open", func(c *llmtool.ReadCtx, _ escapeIn) error {
			_, err := c.Query("SELECT id FROM items") // never closed
			return err
		}), "", nil},
		{writeTool("write_exec_commit", func(c *llmtool.WriteCtx, _ escapeIn) error {
			if _, err := c.Exec(`INSERT INTO items (name) VALUES ('partial')`); err != nil {
				return err
			}
			_, _ = c.Exec("COMMIT")
			return errors.New("something failed after the commit")
		}), "statement=COMMIT", llmtool.ErrStatementRefused},
		{writeTool("write_tx_commit", func(c *llmtool.WriteCtx, _ escapeIn) error {
			if _, err := c.Exec(`INSERT INTO items (name) VALUES ('partial')`); err != nil {
				return err
			}
			_ = c.Tx().Commit() //llmtoolvet:ignore the escape suite proves the run-time refusal
			return errors.New("something failed after the commit")
		}), "write tool ended its transaction itself", nil},
		{writeTool("write_tx_commit_then_nil", func(c *llmtool.WriteCtx, _ escapeIn) error {
			if _, err := c.Exec(`INSERT INTO items (name) VALUES ('partial')`); err != nil {
				return err
			}
			_ = c.Tx().Commit() //llmtoolvet:ignore the escape suite proves the run-time refusal
			return nil
		}), "", sql.ErrTxDone},
		{writeTool("write_tx_exec_commit", func(c *llmtool.WriteCtx, _ escapeIn) error {
			tx := c.Tx()
			if _, err := tx.Exec(`INSERT INTO items (name) VALUES ('partial')`); err != nil {
				return err
			}
			_, _ = tx.Exec("COMMIT")
			_, _ = tx.Exec(`INSERT INTO items (name) VALUES ('after')`)
			return nil
		}), "", nil},
		{writeTool("write_tx_rollback_then_insert", func(c *llmtool.WriteCtx, _ escapeIn) error {
			tx := c.Tx()
			_, _ = tx.Exec("ROLLBACK")
			_, _ = tx.Exec(`INSERT INTO items (name) VALUES ('autocommitted')`)
			return nil
		}), "", nil},
		{writeTool("write_tx_rollback", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_ = c.Tx().Rollback() //llmtoolvet:ignore the escape suite proves the run-time refusal
			return nil
		}), "", sql.ErrTxDone},
		{writeTool("write_pragma", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("PRAGMA foreign_keys = OFF")
			return nil
		}), "statement=\"PRAGMA foreign_keys = OFF\"", llmtool.ErrStatementRefused},
		{writeTool("write_savepoint_released", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("SAVEPOINT early")
			_, _ = c.Exec(`INSERT INTO items (name) VALUES ('partial')`)
			_, _ = c.Exec("RELEASE early")
			return errors.New("failed after the release")
		}), "statement=\"SAVEPOINT early\"", llmtool.ErrStatementRefused},
		{writeTool("write_attach", func(c *llmtool.WriteCtx, in escapeIn) error {
			_, _ = c.Exec("ATTACH ? AS other", in.Other)
			return nil
		}), "statement=\"ATTACH ? AS other\"", llmtool.ErrStatementRefused},
		{writeTool("write_temp_trigger", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec(`CREATE TEMP TRIGGER spy AFTER INSERT ON items BEGIN DELETE FROM items; END`)
			return nil
		}), "statement=\"CREATE TEMP TRIGGER spy", llmtool.ErrStatementRefused},
		// Through the raw *sql.Tx nothing is checked; the connection is
		// closed after the call instead of going back to the pool.
		{writeTool("write_tx_attach_pragma", func(c *llmtool.WriteCtx, in escapeIn) error {
			if _, err := c.Tx().Exec("ATTACH ? AS other", in.Other); err != nil {
				return err
			}
			if _, err := c.Tx().Exec("PRAGMA query_only = 1"); err != nil {
				return err
			}
			return errors.New("done changing the connection")
		}), "", nil},
		{writeTool("write_tx_from_goroutine", func(c *llmtool.WriteCtx, _ escapeIn) error {
			tx, started := c.Tx(), make(chan struct{})
			go func() { //llmtoolvet:ignore the escape suite proves the run-time refusal
				close(started)
				time.Sleep(20 * time.Millisecond)
				_, _ = tx.Exec(`INSERT INTO items (name) VALUES ('late')`)
			}()
			<-started
			return errors.New("returned before the goroutine wrote")
		}), "", nil},
		{writeTool("write_rows_left_open", func(c *llmtool.WriteCtx, _ escapeIn) error {
			if _, err := c.Query("SELECT id FROM items"); err != nil { // never closed
				return err
			}
			_, err := c.Exec(`INSERT INTO items (name) VALUES ('x')`)
			if err != nil {
				return err
			}
			return errors.New("fail with rows open")
		}), "", nil},
	}
	for _, tc := range cases {
		name := tc.tool.Spec().Name
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newEscapeFixture(t, tc.tool)
			res := f.reg.Invoke(context.Background(), llmtool.Call{Tool: name, Args: []byte(`{"other":` + quoteJSON(f.other) + `}`)})
			if name == "read_rows_left_open" {
				require.False(t, res.IsError, res.Text())
			} else {
				require.True(t, res.IsError, "the call fails: %s", res.JSON)
				require.Equal(t, fmt.Sprintf(generic, name), res.Text())
			}
			if tc.err != nil {
				require.ErrorIs(t, res.Err, tc.err)
			}
			if tc.log != "" {
				require.Contains(t, f.log.String(), tc.log)
				require.Contains(t, f.log.String(), "tool="+name)
			}
			time.Sleep(40 * time.Millisecond) // let write_tx_from_goroutine's goroutine try
			f.requireClean(t)
		})
	}
}

// A refused statement's error says which statement, why and what to do
// instead, to the handler that ran it and in the log.
func TestRefusedStatementMessage(t *testing.T) {
	t.Parallel()
	var seen error
	tool := llmtool.Read("sneaky", "Try to escape.", func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
		var x int
		seen = c.QueryRow("PRAGMA query_only = 0").Scan(&x)
		return struct{}{}, nil
	})
	f := newEscapeFixture(t, tool)
	res := invoke(f.reg, "sneaky", "")
	require.True(t, res.IsError)
	require.EqualError(t, seen, "llmtool: statement refused: tool sneaky ran statement `PRAGMA query_only = 0` sets a pragma, which changes the connection's settings; read a pragma with SELECT * FROM pragma_<name>(...); set pragmas where the host opens the database (in the DSN's _pragma parameters).")
	require.ErrorIs(t, res.Err, llmtool.ErrStatementRefused)
	require.Contains(t, f.log.String(), `level=ERROR msg="llmtool: tool ran a statement that would change its transaction or connection; llmtool refused it" tool=sneaky statement="PRAGMA query_only = 0" why="sets a pragma, which changes the connection's settings" instead="read a pragma with SELECT * FROM pragma_<name>(...); set pragmas where the host opens the database (in the DSN's _pragma parameters)."`)
}

// Ordinary SQL, including reading pragmas, runs as before.
func TestAllowedStatements(t *testing.T) {
	t.Parallel()
	type out struct {
		Cols int `json:"cols"`
		ID   int `json:"id"`
	}
	read := llmtool.Read("introspect", "Read the schema.", func(c *llmtool.ReadCtx, _ struct{}) (out, error) {
		var o out
		if err := c.QueryRow(`SELECT count(*) FROM pragma_table_info('items')`).Scan(&o.Cols); err != nil {
			return o, err
		}
		rows, err := c.Query(`PRAGMA table_info(items)`)
		if err != nil {
			return o, err
		}
		return o, rows.Close()
	})
	write := llmtool.Write("ddl_and_dml", "Change schema and data.", func(c *llmtool.WriteCtx, _ struct{}) (out, error) {
		var o out
		for _, q := range []string{
			`CREATE TABLE IF NOT EXISTS tags (id INTEGER PRIMARY KEY, temp TEXT)`,
			`CREATE TRIGGER IF NOT EXISTS tag_items AFTER INSERT ON tags BEGIN UPDATE items SET qty = qty + CASE WHEN new.temp = 'x' THEN 1 ELSE 0 END; END`,
			`INSERT INTO tags (temp) VALUES ('x')`,
		} {
			if _, err := c.Exec(q); err != nil {
				return o, err
			}
		}
		return o, c.QueryRow(`SELECT qty FROM items WHERE id = 1`).Scan(&o.ID)
	})
	f := newEscapeFixture(t, read, write)
	res := invoke(f.reg, "introspect", "")
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"cols":3,"id":0}`, string(res.JSON))
	res = invoke(f.reg, "ddl_and_dml", "")
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"cols":0,"id":4}`, string(res.JSON))
}

// A handler's context is cancelled when it returns: Err, Done, and
// contexts derived from it all say so, and a goroutine waiting on Done is
// released.
func TestHandlerContextEndsWithCall(t *testing.T) {
	t.Parallel()
	type probe struct {
		c       context.Context
		derived context.Context
		cancel  context.CancelFunc
		waited  chan error
	}
	probes := make(chan probe, 2)
	watch := func(c context.Context) error {
		p := probe{c: c, waited: make(chan error, 1)}
		p.derived, p.cancel = context.WithTimeout(c, time.Hour)
		if err := p.derived.Err(); err != nil {
			return err
		}
		select {
		case <-c.Done():
			return errors.New("Done closed while the handler runs")
		default:
		}
		go func() { //llmtoolvet:ignore the test proves that Done closes when the handler returns
			<-c.Done()
			p.waited <- c.Err()
		}()
		probes <- p
		return nil
	}
	read := llmtool.Read("watch_read", "Watch the context.", func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
		return struct{}{}, watch(c)
	})
	write := llmtool.Write("watch_write", "Watch the context.", func(c *llmtool.WriteCtx, _ struct{}) (struct{}, error) {
		return struct{}{}, watch(c)
	})
	f := newEscapeFixture(t, read, write)
	for _, name := range []string{"watch_read", "watch_write"} {
		res := invoke(f.reg, name, "")
		require.False(t, res.IsError, res.Text())
		p := <-probes
		select {
		case err := <-p.waited:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: a goroutine waiting on Done was never released", name)
		}
		<-p.derived.Done()
		require.ErrorIs(t, p.derived.Err(), context.Canceled, "a derived context is cancelled")
		require.ErrorIs(t, p.c.Err(), context.Canceled)
		p.cancel()
	}

	// Cancelled by the caller while the handler waits on Done.
	block := llmtool.Read("wait_caller", "Wait for the caller.", func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
		<-c.Done()
		return struct{}{}, c.Err()
	})
	f = newEscapeFixture(t, block)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := f.reg.Invoke(ctx, llmtool.Call{Tool: "wait_caller"})
	require.True(t, res.IsError)
	require.ErrorIs(t, res.Err, context.DeadlineExceeded)
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
