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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/internal/sqlcheck"
	"github.com/llmtool/llmtool/tenant"
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
// back: the registry's settings and nothing a call left behind. Each
// engine reports the fields it has; the others stay zero.
type connState struct {
	// ReadOnly: SQLite's PRAGMA query_only; PostgreSQL's
	// transaction_read_only.
	ReadOnly int `json:"readOnly"`
	// ForeignKeys: SQLite's PRAGMA foreign_keys; on PostgreSQL,
	// session_replication_role is origin, so foreign keys' triggers fire.
	ForeignKeys int `json:"foreignKeys"`
	// Attached counts SQLite's databases besides main and temp.
	Attached int `json:"attached"`
	// TempObjects counts the objects in the connection's temp schema.
	TempObjects int `json:"tempObjects"`
	// Session counts what a PostgreSQL session keeps past a transaction:
	// settings changed with SET or set_config, statements prepared with
	// PREPARE, holdable cursors, channels listened to and advisory locks.
	Session int `json:"session"`
	// Isolation is PostgreSQL's transaction_isolation.
	Isolation string `json:"isolation"`
}

// connStateSQL reads a connection's state, on the engine under test, as
// host code sees it.
func connStateSQL() string {
	if pgtest.FromEnv() {
		return `SELECT CASE WHEN current_setting('transaction_read_only') = 'on' THEN 1 ELSE 0 END,
	CASE WHEN current_setting('session_replication_role') = 'origin' THEN 1 ELSE 0 END, 0,
	(SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()),
	(SELECT count(*) FROM pg_settings WHERE source = 'session' AND name NOT IN ('transaction_isolation', 'transaction_read_only', 'transaction_deferrable'))
		+ (SELECT count(*) FROM pg_prepared_statements WHERE from_sql)
		+ (SELECT count(*) FROM pg_cursors WHERE is_holdable)
		+ (SELECT count(*) FROM pg_listening_channels())
		+ (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
	current_setting('transaction_isolation')`
	}
	return `SELECT (SELECT query_only FROM pragma_query_only()), (SELECT foreign_keys FROM pragma_foreign_keys()),
	(SELECT count(*) FROM pragma_database_list() WHERE name NOT IN ('main', 'temp')), (SELECT count(*) FROM temp.sqlite_master), 0, ''`
}

// handlerStateSQL reads a connection's state as a handler may: on
// SQLite, whose authorizer lets a handler run only the pragmas that read
// whatever their argument, the attached databases and temp tables that
// pragma_table_list shows; on PostgreSQL, what connStateSQL reads.
func handlerStateSQL() string {
	if pgtest.FromEnv() {
		return connStateSQL()
	}
	return `SELECT 0, 0, (SELECT count(DISTINCT schema) FROM pragma_table_list WHERE schema NOT IN ('main', 'temp')),
	(SELECT count(*) FROM pragma_table_list WHERE schema = 'temp' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'), 0, ''`
}

// The states the registry sets: for a read call's connection and a write
// call's, as their handlers see them, and one in the host's pool.
var (
	readConnState = map[string]connState{
		"sqlite": {},
		// Session 1: the registry's own default_transaction_read_only
		// on its reserved read connections (RESET when handed back).
		"postgres": {ReadOnly: 1, ForeignKeys: 1, Session: 1, Isolation: "repeatable read"},
	}
	writeConnState = map[string]connState{
		"sqlite":   {},
		"postgres": {ForeignKeys: 1, Isolation: "serializable"},
	}
	pooledConnState = map[string]connState{
		"sqlite":   {ForeignKeys: 1},
		"postgres": {ForeignKeys: 1, Isolation: "read committed"},
	}
)

func scanConnState(row *sql.Row) (connState, error) {
	var s connState
	err := row.Scan(&s.ReadOnly, &s.ForeignKeys, &s.Attached, &s.TempObjects, &s.Session, &s.Isolation)
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
			return scanConnState(c.QueryRow(handlerStateSQL()))
		})
	writeState := llmtool.Write("write_state", "Report the write connection's state.",
		func(c *llmtool.WriteCtx, _ struct{}) (connState, error) {
			return scanConnState(c.QueryRow(handlerStateSQL()))
		})
	// Two statements, in one snapshot like read_state's one.
	readStateSnapshot := llmtool.Read("read_state_snapshot", "Report the read connection's state in a snapshot.",
		func(c *llmtool.ReadCtx, _ struct{}) (connState, error) {
			var one int
			if err := c.QueryRow(`SELECT 1`).Scan(&one); err != nil {
				return connState{}, err
			}
			return scanConnState(c.QueryRow(handlerStateSQL()))
		})
	readInsert := llmtool.Read("read_insert", "Try to insert from a read tool.",
		func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
			rows, err := c.Query(`INSERT INTO items (name) VALUES ('escaped') RETURNING id`)
			if err == nil {
				err = rows.Close()
			}
			return struct{}{}, err
		})
	f.reg = newRegistryOpts(t, f.db, &llmtool.Options{
		Logger:         slog.New(slog.NewTextHandler(f.log, nil)),
		ValidateOutput: true,
	}, llmtool.DefineTools("escape", append(tools, readState, readStateSnapshot, writeState, readInsert)...))
	return f
}

// requireClean checks that the database holds only its seed row and that
// every connection the registry hands out, and every connection in the
// host's pool afterwards, has the state the registry set.
func (f *escapeFixture) requireClean(t *testing.T) {
	t.Helper()
	require.Equal(t, 1, countItems(t, f.db), "the database is unchanged")
	for range 3 {
		want := readConnState[testEngine()]
		res := invoke(f.reg, "read_state_snapshot", "")
		require.False(t, res.IsError, res.Text())
		require.Equal(t, want, decodeConnState(t, res.JSON), "a read call's connection, in a snapshot")
		res = invoke(f.reg, "read_state", "")
		require.False(t, res.IsError, res.Text())
		require.Equal(t, want, decodeConnState(t, res.JSON), "a read call's connection")
		res = invoke(f.reg, "write_state", "")
		require.False(t, res.IsError, res.Text())
		require.Equal(t, writeConnState[testEngine()], decodeConnState(t, res.JSON), "a write call's connection")
	}
	// A read tool's INSERT is still refused by the database.
	res := invoke(f.reg, "read_insert", "")
	require.True(t, res.IsError)
	require.EqualError(t, res.Err, readToolWriteErr("read_insert", "INSERT INTO items (name) VALUES ('escaped') RETURNING id"))
	require.Equal(t, 1, countItems(t, f.db), "the database is unchanged")

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
		s, err := scanConnState(c.QueryRowContext(ctx, connStateSQL()))
		require.NoError(t, err)
		require.Equal(t, pooledConnState[testEngine()], s, "a pooled connection")
		if pgtest.FromEnv() {
			// BEGIN inside a transaction only warns on PostgreSQL: ask
			// the connection itself.
			require.NoError(t, c.Raw(func(dc any) error {
				require.Equal(t, byte('I'), dc.(*stdlib.Conn).Conn().PgConn().TxStatus(), "the connection is in autocommit mode")
				return nil
			}))
		} else {
			tx, err := c.BeginTx(ctx, nil)
			require.NoError(t, err, "the connection is in autocommit mode")
			require.NoError(t, tx.Rollback())
		}
		require.NoError(t, c.Close())
	}
}

func decodeConnState(t *testing.T, b []byte) connState {
	t.Helper()
	var s connState
	require.NoError(t, json.Unmarshal(b, &s), string(b))
	return s
}

type escapeIn struct {
	Other string `json:"other,omitempty" desc:"Another database file."`
}

// The escape suite: each tool tries to change its transaction or its
// connection from inside. Each call fails, nothing is saved, and every
// connection is as the registry set it. Rows hold on both engines unless
// they name one: SQLite's pragmas and attached files, PostgreSQL's
// session state (settings, advisory locks, prepared statements, cursors,
// LISTEN, code blocks).
func TestEscapeAttempts(t *testing.T) {
	t.Parallel()
	const generic = "Internal error in %s; the details were logged. Try again once; if it fails again, tell the user the tool is failing."
	// late is what the goroutine write_from_goroutine leaves behind gets
	// when it writes, once the call ended (release).
	late, release := make(chan error, 1), make(chan struct{})
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
		only string // "sqlite" or "postgres": the engine the row holds on; "" for both
		tool *llmtool.Tool
		log  string // in the log, for the tool's author
		// sqliteLog replaces log on SQLite, whose authorizer words some
		// refusals after the operation it denied.
		sqliteLog string
		err       error // what res.Err wraps
		ok        bool  // the call succeeds
		// after runs once the call returned, before the checks that the
		// database and the connections are clean.
		after func(t *testing.T)
	}{
		// SQLite: pragmas, attached files, temp triggers.
		{only: "sqlite", tool: readTool("read_pragma_then_insert", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "PRAGMA query_only = 0")
			ignore(c, insert)
			return nil
		}), log: "statement=\"PRAGMA query_only = 0\" why=\"runs PRAGMA query_only with the value 0, and a tool may run only the pragmas that read whatever their argument", err: llmtool.ErrStatementRefused},
		{only: "sqlite", tool: readTool("read_pragma_call_form", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "pragma main.query_only(false)")
			ignore(c, insert)
			return nil
		}), log: "statement=\"pragma main.query_only(false)\"", err: llmtool.ErrStatementRefused},
		{only: "sqlite", tool: readTool("read_hidden_second_statement", func(c *llmtool.ReadCtx, _ escapeIn) error {
			rows, err := c.Query("SELECT 1; PRAGMA query_only = 0")
			if err == nil {
				rows.Close()
			}
			ignore(c, insert)
			return nil
		}), log: "statement=\"SELECT 1; PRAGMA query_only = 0\" why=\"runs PRAGMA query_only with the value 0", err: llmtool.ErrStatementRefused},
		{only: "sqlite", tool: readTool("read_explain_pragma", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "EXPLAIN PRAGMA query_only = 0")
			ignore(c, insert)
			return nil
		}), log: "statement=\"EXPLAIN PRAGMA query_only = 0\"", err: llmtool.ErrStatementRefused},
		{only: "sqlite", tool: readTool("read_attach", func(c *llmtool.ReadCtx, in escapeIn) error {
			ignore(c, "ATTACH DATABASE ? AS other", in.Other)
			return nil
		}), log: "statement=\"ATTACH DATABASE ? AS other\" why=\"attaches another database to the connection\"", err: llmtool.ErrStatementRefused},
		{only: "sqlite", tool: writeTool("write_pragma", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("PRAGMA foreign_keys = OFF")
			return nil
		}), log: "statement=\"PRAGMA foreign_keys = OFF\"", err: llmtool.ErrStatementRefused},
		{only: "sqlite", tool: writeTool("write_attach", func(c *llmtool.WriteCtx, in escapeIn) error {
			_, _ = c.Exec("ATTACH ? AS other", in.Other)
			return nil
		}), log: "statement=\"ATTACH ? AS other\"", err: llmtool.ErrStatementRefused},
		{only: "sqlite", tool: writeTool("write_temp_trigger", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec(`CREATE TEMP TRIGGER spy AFTER INSERT ON items BEGIN DELETE FROM items; END`)
			return nil
		}), log: "statement=\"CREATE TEMP TRIGGER spy", err: llmtool.ErrStatementRefused},
		// PostgreSQL: the settings of the session and of the transaction.
		{only: "postgres", tool: readTool("read_set_transaction_then_insert", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "SET TRANSACTION READ WRITE")
			ignore(c, insert)
			return nil
		}), log: "statement=\"SET TRANSACTION READ WRITE\" why=\"changes the settings of the session or of the call's transaction\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: readTool("read_set_session_then_insert", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "set session characteristics as transaction read write")
			ignore(c, "SET default_transaction_read_only = off")
			ignore(c, insert)
			return nil
		}), log: "statement=\"set session characteristics as transaction read write\" why=\"changes the settings of the session or of the call's transaction\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: readTool("read_hidden_set", func(c *llmtool.ReadCtx, _ escapeIn) error {
			rows, err := c.Query("SELECT 1; /* */ SET TRANSACTION READ WRITE")
			if err == nil {
				rows.Close()
			}
			ignore(c, insert)
			return nil
		}), log: "statement=\"SET TRANSACTION READ WRITE\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: readTool("read_set_config_then_insert", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "SELECT set_config('default_transaction_read_only', 'off', false)")
			ignore(c, insert)
			return nil
		}), log: "statement=\"SELECT set_config('default_transaction_read_only', 'off', false)\" why=\"calls set_config, which changes the session's settings\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: readTool("read_set_config_quoted", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, `SELECT pg_catalog."set_config"('transaction_read_only', 'off', true)`)
			ignore(c, insert)
			return nil
		}), log: `why="calls \"set_config\", which changes the session's settings"`, err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: readTool("read_reset_discard", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "RESET ALL")
			ignore(c, "DISCARD ALL")
			return nil
		}), log: "statement=\"RESET ALL\" why=\"changes the session's settings\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: writeTool("write_set_replication_role", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("SET LOCAL session_replication_role = replica")
			_, _ = c.Exec("SELECT set_config('session_replication_role', 'replica', false)")
			return nil
		}), log: "statement=\"SET LOCAL session_replication_role = replica\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: writeTool("write_set_role", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("SET ROLE postgres")
			return nil
		}), log: "statement=\"SET ROLE postgres\"", err: llmtool.ErrStatementRefused},
		// PostgreSQL: what outlives the transaction on the session.
		{only: "postgres", tool: readTool("read_advisory_lock", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "SELECT pg_advisory_lock(1)")
			return nil
		}), log: "statement=\"SELECT pg_advisory_lock(1)\" why=\"calls pg_advisory_lock, which takes a session-level advisory lock, which outlives the call's transaction\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: writeTool("write_advisory_unlock_all", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("SELECT pg_advisory_unlock_all()")
			return nil
		}), log: "statement=\"SELECT pg_advisory_unlock_all()\" why=\"calls pg_advisory_unlock_all, which releases session-level advisory locks, which belong to the host\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: readTool("read_prepare_execute", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "PREPARE sneaky AS INSERT INTO items (name) VALUES ('escaped')")
			ignore(c, "EXECUTE sneaky")
			return nil
		}), log: "statement=\"PREPARE sneaky AS INSERT INTO items (name) VALUES ('escaped')\" why=\"prepares a statement on the session, which outlives the call's transaction\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: readTool("read_cursor_with_hold", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "DECLARE spy CURSOR WITH HOLD FOR SELECT id FROM items")
			return nil
		}), log: "statement=\"DECLARE spy CURSOR WITH HOLD FOR SELECT id FROM items\" why=\"declares or uses a cursor, which can outlive the call's transaction (WITH HOLD)\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: readTool("read_listen", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "LISTEN llmtool")
			return nil
		}), log: "statement=\"LISTEN llmtool\" why=\"changes what the session listens to, which outlives the call\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: writeTool("write_notify", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("SELECT pg_notify('llmtool', 'x')")
			_, _ = c.Exec("NOTIFY llmtool")
			return nil
		}), log: "statement=\"SELECT pg_notify('llmtool', 'x')\" why=\"calls pg_notify, which notifies other sessions on the server\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: readTool("read_pg_temp_table", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "CREATE TABLE pg_temp.scratch (x INTEGER)")
			ignore(c, "SELECT 1 AS x INTO TEMP scratch")
			return nil
		}), log: "statement=\"CREATE TABLE pg_temp.scratch (x INTEGER)\" why=\"names an object in the temp schema, which lives with the connection, not the database\"", err: llmtool.ErrStatementRefused},
		// PostgreSQL: code, files and the server.
		{only: "postgres", tool: readTool("read_do_block", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, `DO $$BEGIN PERFORM set_config('transaction_read_only', 'off', true); INSERT INTO items (name) VALUES ('escaped'); END$$`)
			return nil
		}), log: "why=\"runs an anonymous code block, whose statements llmtool cannot check\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: writeTool("write_copy", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("COPY items (name) FROM PROGRAM 'echo escaped'")
			return nil
		}), log: "statement=\"COPY items (name) FROM PROGRAM 'echo escaped'\" why=\"copies between a table and a file, a program or the client's stream, outside the queries llmtool checks\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: writeTool("write_create_function", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec(`CREATE FUNCTION spy() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN DELETE FROM items; RETURN NULL; END$$`)
			return nil
		}), log: "why=\"defines or changes code that llmtool cannot check\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: writeTool("write_grant", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("GRANT ALL ON items TO PUBLIC")
			return nil
		}), log: "statement=\"GRANT ALL ON items TO PUBLIC\" why=\"changes roles, privileges or security labels\"", err: llmtool.ErrStatementRefused},
		{only: "postgres", tool: writeTool("write_alter_database", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("ALTER DATABASE postgres SET default_transaction_read_only = on")
			return nil
		}), log: "why=\"configures the server or a whole database\"", err: llmtool.ErrStatementRefused},
		// PostgreSQL refuses writes in a read tool's transaction, however
		// they are phrased.
		{only: "postgres", tool: readTool("read_writable_cte", func(c *llmtool.ReadCtx, _ escapeIn) error {
			var id int
			return c.QueryRow(`WITH x AS (INSERT INTO items (name) VALUES ('escaped') RETURNING id) SELECT id FROM x`).Scan(&id)
		}), log: `err="llmtool: tool read_writable_cte is a read tool, so the database refuses its writes; declare it with llmtool.Write to change data: ERROR: cannot execute SELECT in a read-only transaction (SQLSTATE 25006)"`},
		{only: "postgres", tool: readTool("read_nextval", func(c *llmtool.ReadCtx, _ escapeIn) error {
			var id int
			return c.QueryRow(`SELECT nextval('items_id_seq')`).Scan(&id)
		}), log: `err="llmtool: tool read_nextval is a read tool, so the database refuses its writes; declare it with llmtool.Write to change data: ERROR: cannot execute nextval() in a read-only transaction (SQLSTATE 25006)"`},
		// Both engines.
		{tool: readTool("read_commit_then_insert", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "COMMIT")
			ignore(c, insert)
			return nil
		}), log: "statement=COMMIT why=\"controls the transaction", err: llmtool.ErrStatementRefused},
		{tool: readTool("read_rollback_begin", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "ROLLBACK")
			ignore(c, "BEGIN IMMEDIATE")
			ignore(c, "START TRANSACTION READ WRITE")
			ignore(c, insert)
			return nil
		}), log: "statement=ROLLBACK", err: llmtool.ErrStatementRefused},
		{tool: readTool("read_temp_table", func(c *llmtool.ReadCtx, _ escapeIn) error {
			ignore(c, "CREATE TEMP TABLE scratch (x INTEGER)")
			return nil
		}), log: "why=\"creates or changes an object that lives with the connection, not the database\"", sqliteLog: "why=\"inserts into sqlite_temp_master, in the temp schema, whose objects live with the connection, not the database\"", err: llmtool.ErrStatementRefused},
		{ok: true, tool: readTool("read_rows_left_open", func(c *llmtool.ReadCtx, _ escapeIn) error {
			_, err := c.Query("SELECT id FROM items") // never closed
			return err
		})},
		{tool: writeTool("write_exec_commit", func(c *llmtool.WriteCtx, _ escapeIn) error {
			if _, err := c.Exec(`INSERT INTO items (name) VALUES ('partial')`); err != nil {
				return err
			}
			_, _ = c.Exec("COMMIT")
			return errors.New("something failed after the commit")
		}), log: "statement=COMMIT", err: llmtool.ErrStatementRefused},
		{tool: writeTool("write_rollback_then_insert", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("ROLLBACK")
			_, _ = c.Exec(`INSERT INTO items (name) VALUES ('autocommitted')`)
			return nil
		}), log: "statement=ROLLBACK", err: llmtool.ErrStatementRefused},
		{tool: writeTool("write_savepoint_released", func(c *llmtool.WriteCtx, _ escapeIn) error {
			_, _ = c.Exec("SAVEPOINT early")
			_, _ = c.Exec(`INSERT INTO items (name) VALUES ('partial')`)
			_, _ = c.Exec("RELEASE early")
			return errors.New("failed after the release")
		}), log: "statement=\"SAVEPOINT early\"", err: llmtool.ErrStatementRefused},
		{tool: writeTool("write_from_goroutine", func(c *llmtool.WriteCtx, _ escapeIn) error {
			go func() { //llmtoolvet:ignore the escape suite proves the run-time refusal
				<-release
				_, err := c.Exec(`INSERT INTO items (name) VALUES ('late')`)
				late <- err
			}()
			return errors.New("returned before the goroutine wrote")
		}), after: func(t *testing.T) {
			close(release)
			require.ErrorIs(t, <-late, sql.ErrTxDone)
		}},
		{tool: writeTool("write_rows_left_open", func(c *llmtool.WriteCtx, _ escapeIn) error {
			if _, err := c.Query("SELECT id FROM items"); err != nil { // never closed
				return err
			}
			_, err := c.Exec(`INSERT INTO items (name) VALUES ('x')`)
			if err != nil {
				return err
			}
			return errors.New("fail with rows open")
		})},
	}
	for _, tc := range cases {
		if !runsOn(tc.only) {
			continue
		}
		name := tc.tool.Spec().Name
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newEscapeFixture(t, tc.tool)
			res := f.reg.Invoke(context.Background(), llmtool.Call{Tool: name, Args: []byte(`{"other":` + quoteJSON(f.other) + `}`)})
			if tc.ok {
				require.False(t, res.IsError, res.Text())
			} else {
				require.True(t, res.IsError, "the call fails: %s", res.JSON)
				require.Equal(t, fmt.Sprintf(generic, name), res.Text())
			}
			if tc.err != nil {
				require.ErrorIs(t, res.Err, tc.err)
			}
			if tc.sqliteLog != "" && !pgtest.FromEnv() {
				tc.log = tc.sqliteLog
			}
			if tc.log != "" {
				require.Contains(t, f.log.String(), tc.log, f.log.String())
				require.Contains(t, f.log.String(), "tool="+name)
			}
			if tc.after != nil {
				tc.after(t)
			}
			f.requireClean(t)
		})
	}
}

// A refused statement's error says which statement, why and what to do
// instead, to the handler that ran it and in the log.
func TestRefusedStatementMessage(t *testing.T) {
	t.Parallel()
	const txInstead = "llmtool begins each call's transaction, commits it when the handler returns nil and rolls it back when it returns an error: return an error to undo the call's work."
	const pgSetInstead = "configure sessions where the host opens the database (the DSN's options) or with ALTER ROLE/DATABASE ... SET as the administrator; read a setting with SHOW or current_setting()."
	tests := []struct {
		only, stmt, why, instead string
	}{
		{"sqlite", "PRAGMA query_only = 0", "runs PRAGMA query_only with the value 0, and a tool may run only the pragmas that read whatever their argument (table_info, index_list, foreign_key_check, integrity_check, ...)", "read a table's columns with SELECT * FROM pragma_table_info('t') and the schema from sqlite_schema; set pragmas where the host opens the database (in the DSN's _pragma parameters)."},
		{"sqlite", "COMMIT", "controls the transaction (COMMIT)", txInstead},
		{"sqlite", "SELECT * FROM 'llmtool_approvals'", "reads llmtool_approvals, a table llmtool keeps for itself", "llmtool's tables (llmtool_*) are not a tool's to read or change: change llmtool's settings through the Registry (Tenants().SetWrites, SetApproval, ...)."},
		{"postgres", "COMMIT", "controls the transaction", txInstead},
		{"postgres", "SET TRANSACTION READ WRITE", "changes the settings of the session or of the call's transaction", pgSetInstead},
		{"postgres", "SELECT set_config('transaction_read_only', 'off', true)", "calls set_config, which changes the session's settings", pgSetInstead},
		{"postgres", "SELECT pg_advisory_lock(1)", "calls pg_advisory_lock, which takes a session-level advisory lock, which outlives the call's transaction", "use pg_advisory_xact_lock or pg_try_advisory_xact_lock, whose locks end with the call's transaction."},
		{"postgres", "PRAGMA query_only = 0", "is not a statement a tool may run", "a tool may run SELECT, WITH, VALUES, TABLE, INSERT, UPDATE, DELETE, MERGE, TRUNCATE, LOCK, SHOW, CALL, COMMENT, REFRESH MATERIALIZED VIEW, SET CONSTRAINTS, and CREATE, ALTER, DROP, ANALYZE or REINDEX on the host's database."},
	}
	for _, tc := range tests {
		if !runsOn(tc.only) {
			continue
		}
		t.Run(tc.stmt, func(t *testing.T) {
			t.Parallel()
			var seen error
			tool := llmtool.Read("sneaky", "Try to escape.", func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
				var x any
				seen = c.QueryRow(tc.stmt).Scan(&x)
				return struct{}{}, nil
			})
			f := newEscapeFixture(t, tool)
			res := invoke(f.reg, "sneaky", "")
			require.True(t, res.IsError)
			require.EqualError(t, seen, "llmtool: statement refused: tool sneaky ran statement `"+tc.stmt+"` "+tc.why+"; "+tc.instead)
			require.ErrorIs(t, res.Err, llmtool.ErrStatementRefused)
			require.Contains(t, f.log.String(), `level=ERROR msg="llmtool: tool ran a statement that a tool may not run; llmtool refused it" tool=sneaky statement=`+slogQuote(tc.stmt)+` why=`+slogQuote(tc.why)+` instead=`+slogQuote(tc.instead))
			f.requireClean(t)
		})
	}
}

// slogQuote renders s as slog's text handler writes a value: bare when it
// needs no quoting, else quoted.
func slogQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " =\"") && strconv.Quote(s) == `"`+s+`"` {
		return s
	}
	return strconv.Quote(s)
}

// Ordinary SQL, including reading pragmas on SQLite and the statements
// PostgreSQL allows inside a transaction, runs as before.
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
	if pgtest.FromEnv() {
		read = llmtool.Read("introspect", "Read the schema.", func(c *llmtool.ReadCtx, _ struct{}) (out, error) {
			var o out
			// ? outside the literal is rewritten as $1; ?? is jsonb's ?.
			if err := c.QueryRow(`SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND column_name <> '?' AND '{"a":1}'::jsonb ?? 'a'`, "items").Scan(&o.Cols); err != nil {
				return o, err
			}
			var isolation string
			if err := c.QueryRow(`SHOW transaction_isolation`).Scan(&isolation); err != nil || isolation != "repeatable read" {
				return o, fmt.Errorf("isolation %q: %v", isolation, err)
			}
			for _, q := range []string{
				`TABLE items`,
				`(SELECT id FROM items)`,
				`EXPLAIN SELECT * FROM items`,
				`EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM items`,
				`SELECT pg_try_advisory_xact_lock(1)`,
				`LOCK TABLE items IN ACCESS SHARE MODE`,
				`SELECT current_setting('transaction_read_only')`,
			} {
				rows, err := c.Query(q)
				if err != nil {
					return o, fmt.Errorf("%s: %w", q, err)
				}
				if err := rows.Close(); err != nil {
					return o, err
				}
			}
			return o, nil
		})
		write = llmtool.Write("ddl_and_dml", "Change schema and data.", func(c *llmtool.WriteCtx, _ struct{}) (out, error) {
			var o out
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{sql: `CREATE TABLE IF NOT EXISTS tags (id BIGSERIAL PRIMARY KEY, temp TEXT UNIQUE)`},
				{sql: `CREATE UNLOGGED TABLE IF NOT EXISTS scratch (x INTEGER)`},
				{sql: `CREATE INDEX IF NOT EXISTS tags_temp ON tags (temp)`},
				{sql: `COMMENT ON TABLE tags IS 'tags'`},
				{sql: `SET CONSTRAINTS ALL DEFERRED`},
				{sql: `LOCK TABLE tags IN SHARE ROW EXCLUSIVE MODE`},
				{sql: `INSERT INTO tags (temp) VALUES (?) ON CONFLICT (temp) DO NOTHING`, args: []any{"x"}},
				{sql: `MERGE INTO tags t USING (VALUES ($1::text)) AS v (temp) ON t.temp = v.temp WHEN NOT MATCHED THEN INSERT (temp) VALUES (v.temp)`, args: []any{"x"}},
				{sql: `CALL bump_items(?)`, args: []any{1}},
				{sql: `CREATE MATERIALIZED VIEW IF NOT EXISTS tag_counts AS SELECT count(*) AS n FROM tags`},
				{sql: `REFRESH MATERIALIZED VIEW tag_counts`},
				{sql: `TRUNCATE scratch`},
				{sql: `ANALYZE tags`},
				{sql: `REINDEX TABLE tags`},
				{sql: `SELECT pg_advisory_xact_lock(1)`},
			} {
				if _, err := c.Exec(q.sql, q.args...); err != nil {
					return o, fmt.Errorf("%s: %w", q.sql, err)
				}
			}
			return o, c.QueryRow(`SELECT qty FROM items WHERE id = ?`, 1).Scan(&o.ID)
		})
	}
	f := newEscapeFixture(t, read, write)
	if pgtest.FromEnv() {
		// The host's migrations define the procedure a tool calls.
		_, err := f.db.Exec(`CREATE PROCEDURE bump_items(n integer) LANGUAGE sql AS $$UPDATE items SET qty = qty + n WHERE id = 1$$`)
		require.NoError(t, err)
	}
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

// sqlIn is SQL the model wrote, which a careless tool runs as it is.
type sqlIn struct {
	SQL string `json:"sql" desc:"The SQL to run."`
}

type sqlOut struct {
	Rows int `json:"rows"`
}

// ownTables reads llmtool's own tables, as host code sees them.
func ownTables(t *testing.T, db *sql.DB) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for table, q := range map[string]string{
		"tenant settings": `SELECT scope || '|' || tool || '|' || enabled FROM llmtool_scope_settings ORDER BY scope, tool`,
		"tenant version":  `SELECT version FROM llmtool_scope_version`,
		"approvals":       `SELECT nonce FROM llmtool_approvals ORDER BY nonce`,
		"audit":           `SELECT tool || '|' || outcome || '|' || scope FROM llmtool_audit ORDER BY rowid`,
		"migrations":      `SELECT subject || '|' || version FROM llmtool_migrations ORDER BY subject`,
		"schema":          `SELECT type || '|' || name FROM sqlite_schema ORDER BY type, name`,
	} {
		rows, err := db.Query(q)
		require.NoError(t, err, table)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			got[table] = append(got[table], s)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return got
}

// TestSQLiteEscapes: SQLite's authorizer against SQL a model wrote, run by
// a careless write tool of tenant A (and a read tool). Two tenants share the
// database: A, whose writes are on and which has used an approval, and B,
// whose writes are off. Every attack is refused with ErrStatementRefused
// however it names llmtool's tables (quoted, bracketed, qualified, in any
// case), and afterwards B's writes are still off, a tool needing approval
// still asks, the used approval stays used, no trigger fires in a later
// call of another tenant nor in the host's own write, llmtool's tables are
// as they were, and the file passes PRAGMA integrity_check.
func TestSQLiteEscapes(t *testing.T) {
	t.Parallel()
	if pgtest.FromEnv() {
		t.Skip("SQLite's authorizer; PostgreSQL's boundary is TestEscapeAttempts'")
	}
	ctx := context.Background()
	db := openDB(t)
	table, err := audit.NewTable(ctx, db, "")
	require.NoError(t, err)
	runSQL := llmtool.Write("run_sql", "Run the SQL the model wrote.", func(c *llmtool.WriteCtx, in sqlIn) (sqlOut, error) {
		res, err := c.Exec(in.SQL)
		if err != nil {
			return sqlOut{}, err
		}
		n, err := res.RowsAffected()
		return sqlOut{Rows: int(n)}, err
	})
	querySQL := llmtool.Read("query_sql", "Run the query the model wrote.", func(c *llmtool.ReadCtx, in sqlIn) (sqlOut, error) {
		rows, err := c.Query(in.SQL)
		if err != nil {
			return sqlOut{}, err
		}
		defer rows.Close()
		var o sqlOut
		for rows.Next() {
			o.Rows++
		}
		return o, rows.Err()
	})
	addItem := llmtool.Write("add_item", "Add an item.", func(c *llmtool.WriteCtx, in AddItemIn) (sqlOut, error) {
		_, err := c.Exec(`INSERT INTO items (name) VALUES (?)`, in.Name)
		return sqlOut{Rows: 1}, err
	})
	type qtyIn struct {
		ID  int `json:"id"`
		Qty int `json:"qty"`
	}
	setQty := llmtool.Write("set_qty", "Set an item's quantity.", func(c *llmtool.WriteCtx, in qtyIn) (sqlOut, error) {
		res, err := c.Exec(`UPDATE items SET qty = ? WHERE id = ?`, in.Qty, in.ID)
		if err != nil {
			return sqlOut{}, err
		}
		n, err := res.RowsAffected()
		return sqlOut{Rows: int(n)}, err
	}, llmtool.NeedsApproval())
	logs := &lockedBuffer{}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger:         slog.New(slog.NewTextHandler(logs, nil)),
		Audit:          []audit.Sink{table},
		ApprovalKey:    []byte("replicas share this key, so used approvals are kept in llmtool_approvals"),
		TenantCacheTTL: tenant.NoCache,
	}, llmtool.DefineTools("careless", runSQL, querySQL, addItem, setQty))
	require.NoError(t, err)
	a, b, c := llmtool.WithTenant(ctx, "A"), llmtool.WithTenant(ctx, "B"), llmtool.WithTenant(ctx, "C")
	require.NoError(t, reg.Tenants().SetWrites(ctx, "A", true))
	require.NoError(t, reg.Tenants().SetWrites(ctx, "C", true))
	_, err = db.Exec(`INSERT INTO items (name) VALUES ('pear'), ('plum')`)
	require.NoError(t, err)

	// Tenant A approves a change of item 2, once.
	setTwo := []byte(`{"id":2,"qty":7}`)
	res := reg.Invoke(a, llmtool.Call{Tool: "set_qty", Args: setTwo})
	require.ErrorIs(t, res.Err, approval.ErrRequired)
	used := &approval.Answer{Token: res.Approval.Token, Approved: true}
	res = reg.Invoke(a, llmtool.Call{Tool: "set_qty", Args: setTwo, Approval: used})
	require.False(t, res.IsError, res.Text())
	before := ownTables(t, db)
	require.Len(t, before["approvals"], 1)

	attacks := []struct {
		sql  string
		read bool   // run by the read tool
		log  string // in the log, when not the statement: a trigger's body is checked after the handler
		// sqlite is SQLite's own error, for a statement it refuses
		// itself in a transaction, before the authorizer is asked.
		sqlite string
	}{
		// Turn writes on for every tool of every tenant, approvals off,
		// forget the used approval, forge a tenant's settings.
		{sql: `UPDATE 'llmtool_scope_settings' SET enabled = 1 WHERE tool = ''`},
		{sql: `UPDATE 'llmtool_scope_settings' SET enabled = 0 WHERE tool LIKE 'approval:%'`},
		{sql: `DELETE FROM 'llmtool_approvals'`},
		{sql: `UPDATE "llmtool_scope_settings" SET enabled = 1`},
		{sql: `DELETE FROM "llmtool_approvals"`},
		{sql: `UPDATE [llmtool_scope_settings] SET enabled = 1`},
		{sql: "DELETE FROM `llmtool_approvals`"},
		{sql: `UPDATE main.llmtool_scope_settings SET enabled = 1`},
		{sql: `DELETE FROM main."llmtool_approvals"`},
		{sql: `UPDATE LLMTool_Scope_Settings SET enabled = 1`},
		{sql: `DELETE FROM "LLMTOOL_APPROVALS"`},
		{sql: `INSERT INTO llmtool_scope_settings (scope, tool, enabled, updated_at) VALUES ('B', '', 1, '')`},
		{sql: `INSERT OR REPLACE INTO main.[LLMTOOL_SCOPE_VERSION] (id, version) VALUES (1, 0)`},
		{sql: `UPDATE items SET name = (SELECT group_concat(scope) FROM llmtool_scope_settings)`},
		{sql: `WITH gone AS (SELECT nonce FROM llmtool_approvals) DELETE FROM items WHERE id IN (SELECT nonce FROM gone)`},
		{sql: `DROP TABLE llmtool_approvals`},
		{sql: `ALTER TABLE llmtool_audit RENAME TO audit_old`},
		{sql: `CREATE INDEX spy ON llmtool_audit (tool)`},
		{sql: `CREATE TRIGGER spy AFTER INSERT ON llmtool_approvals BEGIN DELETE FROM llmtool_approvals; END`},
		// Read what llmtool keeps for itself.
		{sql: `SELECT * FROM llmtool_audit`, read: true},
		{sql: `SELECT count(*) FROM "llmtool_approvals"`, read: true},
		{sql: `SELECT tool FROM main.[LLMTOOL_SCOPE_SETTINGS] WHERE enabled = 1`, read: true},
		{sql: `SELECT * FROM llmtool_audit`},
		// The file's raw pages.
		{sql: `UPDATE sqlite_dbpage SET data = zeroblob(length(data)) WHERE pgno = 2`},
		{sql: `SELECT data FROM sqlite_dbpage WHERE pgno = 1`, read: true},
		{sql: `SELECT count(*) FROM sqlite_dbpage('main')`},
		// Triggers that would fire in later calls: temp ones, and one in
		// the database whose body writes llmtool's tables.
		{sql: `CREATE TRIGGER 'temp'.spy AFTER INSERT ON items BEGIN UPDATE llmtool_scope_settings SET enabled = 1; END`},
		{sql: `CREATE TEMP TRIGGER spy AFTER INSERT ON items BEGIN DELETE FROM llmtool_approvals; END`},
		{sql: `CREATE TEMPORARY TRIGGER spy AFTER INSERT ON main.items BEGIN DELETE FROM items; END`},
		{sql: `CREATE TRIGGER spy AFTER INSERT ON items BEGIN UPDATE llmtool_scope_settings SET enabled = 1; END`,
			log: `statement="" why="updates llmtool_scope_settings (through spy, a trigger, view or common table expression), a table llmtool keeps for itself"`},
		{sql: `CREATE TRIGGER spy AFTER UPDATE OF qty ON items WHEN (SELECT count(*) FROM llmtool_approvals) > 0 BEGIN SELECT 1; END`,
			log: `statement="" why="reads llmtool_approvals (through spy, a trigger, view or common table expression), a table llmtool keeps for itself"`},
		{sql: `CREATE TEMP TABLE scratch (x)`},
		{sql: `SELECT count(*) FROM temp.sqlite_master`, read: true},
		// The connection and the transaction.
		{sql: `ATTACH DATABASE ':memory:' AS evil`},
		{sql: `ATTACH DATABASE 'file:evil?mode=memory' AS evil`, read: true},
		{sql: `DETACH DATABASE main`},
		{sql: `PRAGMA writable_schema = 1`},
		{sql: `PRAGMA query_only = 0`},
		{sql: `PRAGMA query_only = 0`, read: true},
		{sql: `PRAGMA main.query_only('')`, read: true},
		{sql: `PRAGMA foreign_keys = OFF`},
		{sql: `PRAGMA trusted_schema = 1`},
		{sql: `VACUUM`, sqlite: "cannot VACUUM from within a transaction"},
		{sql: `VACUUM INTO 'copy.db'`, sqlite: "cannot VACUUM from within a transaction"},
		{sql: `BEGIN`},
		{sql: `COMMIT`},
		{sql: `ROLLBACK`},
		{sql: `END TRANSACTION`},
		{sql: `SAVEPOINT s`},
		{sql: `RELEASE s`},
		// A read tool's writes.
		{sql: `INSERT INTO items (name) VALUES ('sneaky') RETURNING id`, read: true},
		{sql: `CREATE TABLE sneaky (x)`, read: true},
	}
	for _, at := range attacks {
		tool := "run_sql"
		if at.read {
			tool = "query_sql"
		}
		args, err := json.Marshal(sqlIn{SQL: at.sql})
		require.NoError(t, err)
		res := reg.Invoke(a, llmtool.Call{Tool: tool, Args: args})
		require.True(t, res.IsError, "%s %s: %s", tool, at.sql, res.JSON)
		if at.sqlite != "" {
			require.ErrorContains(t, res.Err, at.sqlite)
			continue
		}
		require.ErrorIs(t, res.Err, llmtool.ErrStatementRefused, "%s %s", tool, at.sql)
		if at.log == "" {
			at.log = "statement=" + slogQuote(sqlcheck.Short(at.sql))
		}
		require.Contains(t, logs.String(), "tool="+tool+" "+at.log, at.sql)
	}
	require.Equal(t, before, ownTables(t, db), "llmtool's tables and the schema are as they were")
	require.Equal(t, 3, countItems(t, db))

	// B's writes are still off.
	res = reg.Invoke(b, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"b"}`)})
	require.True(t, res.IsError)
	require.Equal(t, `Tool "add_item" changes data, and write tools are off in tenant "B". Ask the user to enable write tools for this tenant, then call add_item again.`, res.Text())
	// A tool needing approval still asks, and the used approval stays used.
	res = reg.Invoke(a, llmtool.Call{Tool: "set_qty", Args: []byte(`{"id":3,"qty":1}`)})
	require.ErrorIs(t, res.Err, approval.ErrRequired)
	res = reg.Invoke(a, llmtool.Call{Tool: "set_qty", Args: setTwo, Approval: used})
	require.ErrorIs(t, res.Err, approval.ErrRefused)
	require.Equal(t, "This approval was already used. Nothing was saved. Call the tool again to get a new preview for the user to approve.", res.Text())
	// Writes in tenant C, and the host's own, fire no trigger.
	res = reg.Invoke(c, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"c"}`)})
	require.False(t, res.IsError, res.Text())
	_, err = db.Exec(`INSERT INTO items (name) VALUES ('host')`)
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE items SET qty = qty + 1`)
	require.NoError(t, err)
	require.Equal(t, 5, countItems(t, db))
	after := ownTables(t, db)
	require.Equal(t, append(before["audit"], "add_item|ok|C"), after["audit"])
	after["audit"] = before["audit"]
	require.Equal(t, before, after, "llmtool's tables are as they were, but for C's audit record")

	var integrity string
	require.NoError(t, db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity))
	require.Equal(t, "ok", integrity)
	// Every connection, back in the host's pool, has no temp object and
	// nothing attached.
	require.NoError(t, reg.Close())
	conns := make([]*sql.Conn, 0, db.Stats().OpenConnections)
	for range db.Stats().OpenConnections {
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		conns = append(conns, conn)
	}
	for _, conn := range conns {
		s, err := scanConnState(conn.QueryRowContext(ctx, connStateSQL()))
		require.NoError(t, err)
		require.Equal(t, pooledConnState["sqlite"], s)
		require.NoError(t, conn.Close())
	}
}
