package llmtool_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// The model-facing sentences for a database in trouble (errors.go, render).
const (
	busyAddItem     = "The database is busy, so add_item could not finish and changed nothing. Try again in a few seconds; if it is still busy, tell the user."
	busyGetItem     = "The database is busy, so get_item could not finish and changed nothing. Try again in a few seconds; if it is still busy, tell the user."
	fullPutBlob     = "The database is full, so put_blob could not finish and changed nothing. Tell the user the database or its disk is full."
	readOnlyAddItem = "The database is read-only, so add_item could not finish and changed nothing. Tell the user the database cannot be written."
	corruptGetItem  = "The database file is damaged, so get_item could not finish. Tell the user the database file needs repair."
)

type PutBlobIn struct {
	Bytes int `json:"bytes" desc:"Size of the random blob to store." minimum:"1"`
}

var putBlob = llmtool.Write("put_blob", "Store a random blob as an item.",
	func(c *llmtool.WriteCtx, in PutBlobIn) (struct{}, error) {
		_, err := c.Exec(`INSERT INTO items (name) VALUES (randomblob(?))`, in.Bytes)
		return struct{}{}, err
	})

var blobTools = llmtool.DefineTools("blobs", putBlob)

// openFile opens the SQLite file at path with the given DSN parameters and
// closes it when the test ends.
func openFile(t *testing.T, path, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?"+params)
	require.NoError(t, err)
	require.NoError(t, db.Ping())
	t.Cleanup(func() { db.Close() })
	return db
}

// createItems creates the items table of openDB, with rows extra rows.
func createItems(t *testing.T, db *sql.DB, rows int) {
	t.Helper()
	_, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(t, err)
	if rows == 0 {
		return
	}
	_, err = db.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
INSERT INTO items (name) SELECT ? FROM n`, rows, strings.Repeat("x", 200))
	require.NoError(t, err)
}

// troubleRegistry builds a registry over db that logs to logs, with
// Options.RetryFor retryFor (the default without). With writes, it turns
// write tools on in the default tenant (persistently, in db).
func troubleRegistry(t *testing.T, db *sql.DB, logs *syncBuffer, writes bool, retryFor ...time.Duration) *llmtool.Registry {
	t.Helper()
	o := &llmtool.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if len(retryFor) > 0 {
		o.RetryFor = retryFor[0]
	}
	reg, err := llmtool.NewRegistry(db, o, itemTools, blobTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	if writes {
		require.NoError(t, reg.Tenants().SetWrites(context.Background(), "", true))
	}
	return reg
}

// TestDatabaseTrouble produces each condition on a real SQLite file, or on
// a real PostgreSQL server, and checks the model's message names it with
// the next step, the error keeps the engine's detail for the log, and
// nothing was written.
func TestDatabaseTrouble(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		only string // the engine the row holds on
		// elsewhere says why the row does not run on the other engine.
		elsewhere string
		// setup returns the registry, the database to count items in, the
		// call that meets the condition, and what ends the condition.
		setup      func(t *testing.T, logs *syncBuffer) (reg *llmtool.Registry, db *sql.DB, tool, args string, end func())
		msg        string
		code       int    // SQLite primary result code in the error's chain
		state      string // PostgreSQL's SQLSTATE in the error's chain
		itemsAfter int
	}{
		{
			// Another connection holds the write lock past the busy timeout,
			// and past the runs again until RetryFor.
			name: "busy write", only: "sqlite", elsewhere: "SQLite only: another connection holds the file's write lock past the busy timeout (PostgreSQL's form is \"lock timeout write\")",
			msg: busyAddItem, code: 5, itemsAfter: 1,
			setup: func(t *testing.T, logs *syncBuffer) (*llmtool.Registry, *sql.DB, string, string, func()) {
				path := filepath.Join(t.TempDir(), "busy.db")
				db := openFile(t, path, "_pragma=busy_timeout(50)&_pragma=journal_mode(WAL)&_txlock=immediate")
				createItems(t, db, 0)
				reg := troubleRegistry(t, db, logs, true, 200*time.Millisecond)
				holder := openFile(t, path, "_txlock=immediate")
				tx, err := holder.Begin() // BEGIN IMMEDIATE
				require.NoError(t, err)
				return reg, db, "add_item", `{"name":"pear"}`, func() { require.NoError(t, tx.Rollback()) }
			},
		},
		{
			// In rollback-journal mode an exclusive lock keeps readers out.
			name: "busy read", only: "sqlite", elsewhere: "SQLite only: an exclusive lock on a rollback-journal file keeps readers out (PostgreSQL's form is \"lock timeout read\")",
			msg: busyGetItem, code: 5, itemsAfter: 1,
			setup: func(t *testing.T, logs *syncBuffer) (*llmtool.Registry, *sql.DB, string, string, func()) {
				path := filepath.Join(t.TempDir(), "busy-read.db")
				db := openFile(t, path, "_pragma=busy_timeout(50)&_pragma=journal_mode(DELETE)&_txlock=immediate")
				createItems(t, db, 0)
				reg := troubleRegistry(t, db, logs, true)
				holder := openFile(t, path, "_pragma=journal_mode(DELETE)")
				conn, err := holder.Conn(context.Background())
				require.NoError(t, err)
				_, err = conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE")
				require.NoError(t, err)
				return reg, db, "get_item", `{"id":1}`, func() {
					_, err := conn.ExecContext(context.Background(), "ROLLBACK")
					require.NoError(t, err)
					require.NoError(t, conn.Close())
				}
			},
		},
		{
			// max_page_count caps the file as a full disk would.
			name: "full", only: "sqlite", elsewhere: "SQLite only: max_page_count caps the file as a full disk would; PostgreSQL's disk full (SQLSTATE 53100) cannot be produced in a test",
			msg: fullPutBlob, code: 13, itemsAfter: 1,
			setup: func(t *testing.T, logs *syncBuffer) (*llmtool.Registry, *sql.DB, string, string, func()) {
				path := filepath.Join(t.TempDir(), "full.db")
				db := openFile(t, path, "_pragma=max_page_count(40)&_pragma=busy_timeout(1000)&_pragma=journal_mode(WAL)&_txlock=immediate")
				createItems(t, db, 0)
				return troubleRegistry(t, db, logs, true), db, "put_blob", `{"bytes":1048576}`, nil
			},
		},
		{
			// The file is opened read-only (chmod 0444 would do the same,
			// but not for root, which CI may run as).
			name: "read-only write", only: "sqlite", elsewhere: "SQLite only: the file is opened read-only (PostgreSQL's form is \"read-only session write\")",
			msg: readOnlyAddItem, code: 8, itemsAfter: 1,
			setup: func(t *testing.T, logs *syncBuffer) (*llmtool.Registry, *sql.DB, string, string, func()) {
				path := filepath.Join(t.TempDir(), "ro.db")
				rw, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)&_txlock=immediate")
				require.NoError(t, err)
				createItems(t, rw, 0)
				first, err := llmtool.NewRegistry(rw, nil, itemTools)
				require.NoError(t, err)
				require.NoError(t, first.Tenants().SetWrites(context.Background(), "", true)) // persisted in the file
				require.NoError(t, first.Close())
				require.NoError(t, rw.Close())
				db := openFile(t, path, "mode=ro&_pragma=busy_timeout(1000)&_txlock=immediate")
				return troubleRegistry(t, db, logs, false), db, "add_item", `{"name":"pear"}`, nil
			},
		},
		{
			// The items table's root page is overwritten with garbage.
			name: "corrupt", only: "sqlite", elsewhere: "SQLite only: a damaged database file; PostgreSQL's files are the server's, out of a client's reach",
			msg: corruptGetItem, code: 11, itemsAfter: -1,
			setup: func(t *testing.T, logs *syncBuffer) (*llmtool.Registry, *sql.DB, string, string, func()) {
				path := filepath.Join(t.TempDir(), "corrupt.db")
				rw, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)")
				require.NoError(t, err)
				createItems(t, rw, 200)
				var root, pageSize int64
				require.NoError(t, rw.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'items'`).Scan(&root))
				require.NoError(t, rw.QueryRow(`PRAGMA page_size`).Scan(&pageSize))
				require.NoError(t, rw.Close())
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteAt(bytes.Repeat([]byte{0xff}, int(pageSize)), (root-1)*pageSize)
				require.NoError(t, err)
				require.NoError(t, f.Close())
				db := openFile(t, path, "_pragma=busy_timeout(1000)&_pragma=journal_mode(DELETE)&_txlock=immediate")
				return troubleRegistry(t, db, logs, false), db, "get_item", `{"id":1}`, nil
			},
		},
		{
			// Another session holds an exclusive lock on items past the
			// registry's sessions' lock_timeout (SQLSTATE 55P03).
			name: "lock timeout write", only: "postgres", elsewhere: "PostgreSQL only: a table lock held past lock_timeout (SQLite's form is \"busy write\" and \"busy read\")",
			msg: busyAddItem, state: "55P03", itemsAfter: 1,
			setup: func(t *testing.T, logs *syncBuffer) (*llmtool.Registry, *sql.DB, string, string, func()) {
				admin, dsn := openDBAt(t)
				db := openAgain(t, withRuntimeParam(t, dsn, "lock_timeout", "50ms"))
				reg := troubleRegistry(t, db, logs, true)
				return reg, admin, "add_item", `{"name":"pear"}`, lockItems(t, admin)
			},
		},
		{
			name: "lock timeout read", only: "postgres", elsewhere: "PostgreSQL only: a table lock held past lock_timeout (SQLite's form is \"busy write\" and \"busy read\")",
			msg: busyGetItem, state: "55P03", itemsAfter: 1,
			setup: func(t *testing.T, logs *syncBuffer) (*llmtool.Registry, *sql.DB, string, string, func()) {
				admin, dsn := openDBAt(t)
				db := openAgain(t, withRuntimeParam(t, dsn, "lock_timeout", "50ms"))
				reg := troubleRegistry(t, db, logs, false)
				return reg, admin, "get_item", `{"id":1}`, lockItems(t, admin)
			},
		},
		{
			// The registry's sessions default to read-only transactions,
			// as on a standby server: the write fails with SQLSTATE 25006,
			// which is the database's state, not the tool's fault.
			name: "read-only session write", only: "postgres", elsewhere: "PostgreSQL only: sessions whose transactions default to read-only (SQLite's form is \"read-only write\")",
			msg: readOnlyAddItem, state: "25006", itemsAfter: 1,
			setup: func(t *testing.T, logs *syncBuffer) (*llmtool.Registry, *sql.DB, string, string, func()) {
				admin, dsn := openDBAt(t)
				first := troubleRegistry(t, admin, logs, true) // writes on, persisted in the database
				require.NoError(t, first.Close())
				db := openAgain(t, withRuntimeParam(t, dsn, "default_transaction_read_only", "on"))
				return troubleRegistry(t, db, logs, false), admin, "add_item", `{"name":"pear"}`, nil
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !runsOn(tc.only) {
				t.Skip(tc.elsewhere)
			}
			logs := &syncBuffer{}
			reg, db, tool, args, end := tc.setup(t, logs)
			res := invoke(reg, tool, args)
			if end != nil {
				end()
			}
			require.True(t, res.IsError)
			require.Equal(t, tc.msg, res.Text())
			require.JSONEq(t, fmt.Sprintf(`{"error":%q}`, tc.msg), string(res.JSON))
			require.Equal(t, llmtool.KindInternal, llmtool.KindOf(res.Err))
			// The detail the model does not see is logged in full.
			require.Contains(t, logs.String(), `msg="llmtool: tool failed" tool=`+tool)
			if tc.state != "" {
				var pgErr interface{ SQLState() string }
				require.ErrorAs(t, res.Err, &pgErr)
				require.Equal(t, tc.state, pgErr.SQLState(), res.Err.Error())
				require.Contains(t, logs.String(), "(SQLSTATE "+tc.state+")")
			} else {
				var coded interface{ Code() int }
				require.ErrorAs(t, res.Err, &coded)
				require.Equal(t, tc.code, coded.Code()&0xff, res.Err.Error())
				require.Contains(t, logs.String(), fmt.Sprintf("(%d)", tc.code))
			}
			if tc.itemsAfter >= 0 {
				require.Equal(t, tc.itemsAfter, countItems(t, db), "nothing was saved")
			}
		})
	}
}

// withRuntimeParam returns the PostgreSQL DSN with a setting for its
// sessions, which pgx sends when it connects.
func withRuntimeParam(t *testing.T, dsn, name, value string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// lockItems takes an exclusive lock on items in another session and
// returns what releases it.
func lockItems(t *testing.T, db *sql.DB) func() {
	t.Helper()
	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec(`LOCK TABLE items IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	return func() { require.NoError(t, tx.Rollback()) }
}

// sqliteErr is a driver error carrying a SQLite result code, as
// modernc.org/sqlite's *sqlite.Error does.
type sqliteErr struct {
	code int
	msg  string
}

func (e *sqliteErr) Error() string { return e.msg }
func (e *sqliteErr) Code() int     { return e.code }

type FailWithIn struct {
	Code int    `json:"code,omitempty" desc:"SQLite result code of the error (default 0: an error without a code)."`
	Msg  string `json:"msg" desc:"Message of the error."`
}

var failWith = llmtool.Write("fail_with", "Fail with a database error.",
	func(c *llmtool.WriteCtx, in FailWithIn) (struct{}, error) {
		var err error = &sqliteErr{code: in.Code, msg: in.Msg}
		if in.Code == 0 {
			err = errors.New(in.Msg)
		}
		return struct{}{}, fmt.Errorf("store item: %w", err)
	})

var sneakyWrite = llmtool.Read("sneaky_write", "Try to write from a read tool.",
	func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
		_, err := c.Query(`INSERT INTO items (name) VALUES ('x') RETURNING id`)
		return struct{}{}, err
	})

// TestDatabaseTroubleDetection checks how errors are told apart: by the
// result code on the chain (extended codes included) whatever the message,
// never by the message of an error without one, and that a read tool's
// refused write and other codes stay generic internal errors. A busy or
// locked write runs again until Options.RetryFor (short here), then
// reports the busy sentence.
func TestDatabaseTroubleDetection(t *testing.T) {
	t.Parallel()
	const (
		generic = "Internal error in fail_with; the details were logged. Try again once; if it fails again, tell the user the tool is failing."
		busy    = "The database is busy, so fail_with could not finish and changed nothing. Try again in a few seconds; if it is still busy, tell the user."
		full    = "The database is full, so fail_with could not finish and changed nothing. Tell the user the database or its disk is full."
		ro      = "The database is read-only, so fail_with could not finish and changed nothing. Tell the user the database cannot be written."
		ioerr   = "The database's disk reported an error, so fail_with could not finish. Tell the user the disk or the database file needs checking."
		corrupt = "The database file is damaged, so fail_with could not finish. Tell the user the database file needs repair."
	)
	tests := []struct {
		name, tool, args, msg string
	}{
		{"code busy", "fail_with", `{"code":5,"msg":"lock wait"}`, busy},
		{"code busy snapshot", "fail_with", `{"code":517,"msg":"lock wait"}`, busy},
		{"code locked within the connection", "fail_with", `{"code":6,"msg":"database table is locked"}`, generic},
		{"code locked shared cache", "fail_with", `{"code":262,"msg":"table lock"}`, busy},
		{"code full", "fail_with", `{"code":13,"msg":"no room"}`, full},
		{"code read-only", "fail_with", `{"code":8,"msg":"no write"}`, ro},
		{"code read-only directory", "fail_with", `{"code":1544,"msg":"no write"}`, ro},
		{"code I/O write", "fail_with", `{"code":778,"msg":"write failed"}`, ioerr},
		{"code corrupt", "fail_with", `{"code":11,"msg":"bad page"}`, corrupt},
		{"code not a database", "fail_with", `{"code":26,"msg":"bad header"}`, corrupt},
		{"code other", "fail_with", `{"code":1,"msg":"database is locked"}`, generic},
		{"code constraint", "fail_with", `{"code":2067,"msg":"UNIQUE constraint failed: items.name"}`, generic},
		// An error without a code is the handler's, whatever it says (a
		// not-found message may quote the model's argument).
		{"text busy", "fail_with", `{"msg":"database is locked"}`, generic},
		{"text locked", "fail_with", `{"msg":"database table is locked: items"}`, generic},
		{"text full", "fail_with", `{"msg":"database or disk is full"}`, generic},
		{"text read-only", "fail_with", `{"msg":"attempt to write a readonly database"}`, generic},
		{"text I/O", "fail_with", `{"msg":"disk I/O error"}`, generic},
		{"text corrupt", "fail_with", `{"msg":"database disk image is malformed"}`, generic},
		{"text not a database", "fail_with", `{"msg":"file is not a database"}`, generic},
		{"text other", "fail_with", `{"msg":"disk on fire"}`, generic},
		{"read tool's refused write", "sneaky_write", `{}`,
			"Internal error in sneaky_write; the details were logged. Try again once; if it fails again, tell the user the tool is failing."},
	}
	db := openDB(t)
	reg := newRegistryOpts(t, db, &llmtool.Options{ValidateOutput: true, RetryFor: 50 * time.Millisecond}, llmtool.DefineTools("failing", failWith, sneakyWrite))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := invoke(reg, tc.tool, tc.args)
			require.True(t, res.IsError)
			require.Equal(t, tc.msg, res.Text())
			require.JSONEq(t, fmt.Sprintf(`{"error":%q}`, tc.msg), string(res.JSON))
			require.Equal(t, llmtool.KindInternal, llmtool.KindOf(res.Err))
		})
	}
	require.Equal(t, 1, countItems(t, db))
}
