package sqlitehook_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool/sqlitehook"
)

func openConn(t *testing.T) *sql.Conn {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "hook.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestInterrupt: on a modernc.org/sqlite connection Interrupt gives a
// function that stops the running statement, and the connection then runs
// the next one; on any other connection it gives nil.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	conn := openConn(t)
	var interrupt func()
	require.NoError(t, conn.Raw(func(dc any) error {
		interrupt = sqlitehook.Interrupt(dc)
		return nil
	}))
	require.NotNil(t, interrupt)

	done := make(chan error, 1)
	go func() {
		var n int64
		done <- conn.QueryRowContext(context.Background(), `WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s)
			SELECT count(*) FROM s WHERE x < 0`).Scan(&n)
	}()
	// SQLite forgets an interrupt that comes before the statement starts:
	// interrupt until it stops.
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		default:
			interrupt()
			time.Sleep(time.Millisecond)
		}
	}
	require.EqualError(t, err, "interrupted (9)")

	var one int
	require.NoError(t, conn.QueryRowContext(context.Background(), `SELECT 1`).Scan(&one))
	require.Equal(t, 1, one)
}

type fakeConn struct{ db uintptr }

func (*fakeConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (*fakeConn) Close() error                        { return nil }
func (*fakeConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }

// TestInterruptOtherDriver: a connection that is not modernc.org/sqlite's
// gives nil, even with a field of the same name and kind.
func TestInterruptOtherDriver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		conn any
	}{
		{"another driver's conn", &fakeConn{db: 1}},
		{"nil", nil},
		{"a string", "sqlite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Nil(t, sqlitehook.Interrupt(tc.conn))
		})
	}
}
