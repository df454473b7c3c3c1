package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool/internal/engine"
)

// upper is a named type, which database/sql converts by reflection: the
// direct path leaves it to database/sql.
type upper string

// valuer converts itself: the direct path leaves it to database/sql.
type valuer struct{}

func (valuer) Value() (driver.Value, error) { return "from Value", nil }

// TestQueryRowDirect: a one-row query on a reserved SQLite read
// connection gives what database/sql gives for the same query and
// arguments (values, NULLs, blobs, no row, errors at prepare and at
// step), whether or not it took the direct path; and it takes the direct
// path for arguments of the builtin types.
func TestQueryRowDirect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "d.db")+"?_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB, at TEXT, r REAL)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO t VALUES (1, 'apple', x'00ff10', '2026-12-01T10:00:00Z', 0.5), (2, NULL, NULL, NULL, NULL)`)
	require.NoError(t, err)
	p := New(db, engine.SQLite)
	t.Cleanup(p.Close)

	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		query  string
		args   []any
		cols   int
		direct bool
	}{
		{"int", `SELECT id, name, data, at, r FROM t WHERE id = ?`, []any{1}, 5, true},
		{"int64 NULLs", `SELECT id, name, data, at, r FROM t WHERE id = ?`, []any{int64(2)}, 5, true},
		{"uint8 and int16", `SELECT ? + ?`, []any{uint8(200), int16(-3)}, 1, true},
		{"float32", `SELECT ?`, []any{float32(0.25)}, 1, true},
		{"string", `SELECT id FROM t WHERE name = ?`, []any{"apple"}, 1, true},
		{"bytes", `SELECT id, data FROM t WHERE data = ?`, []any{[]byte{0, 0xff, 0x10}}, 2, true},
		{"nil", `SELECT coalesce(?, 'none')`, []any{nil}, 1, true},
		{"bool", `SELECT ?`, []any{true}, 1, true},
		{"time", `SELECT ?`, []any{at}, 1, true},
		{"no row", `SELECT id FROM t WHERE id = ?`, []any{99}, 1, true},
		{"no arguments", `SELECT count(*) FROM t`, nil, 1, true},
		{"many columns", `SELECT 1, 2, 3, 4, 5, 6, 'seven'`, nil, 7, true},
		{"error at step", `SELECT abs(?)`, []any{int64(-9223372036854775808)}, 1, true},
		{"error at prepare", `SELECT nope FROM t WHERE id = ?`, []any{1}, 1, false},
		{"named type", `SELECT ? AS named`, []any{upper("x")}, 1, false},
		{"valuer", `SELECT ? AS valued`, []any{valuer{}}, 1, false},
		{"sql.Named", `SELECT :v`, []any{sql.Named("v", 3)}, 1, false},
		{"too many arguments for the direct path", `SELECT ?1`, []any{1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := scanAll(db.QueryRowContext(ctx, tc.query, tc.args...), tc.cols)
			r, err := p.BeginRead(ctx, false)
			require.NoError(t, err)
			got, gotErr := scanAll(r.rc.QueryRowContext(ctx, tc.query, tc.args...), tc.cols)
			s := r.rc.stmts[tc.query]
			p.EndRead(r, false)
			if wantErr != nil {
				require.EqualError(t, gotErr, wantErr.Error())
			} else {
				require.NoError(t, gotErr)
				require.Equal(t, want, got)
			}
			require.Equal(t, tc.direct, s != nil && s.ds != nil, "took the direct path")
		})
	}
}

// scanAll scans a row of n columns into any values.
func scanAll(row *sql.Row, n int) ([]any, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := row.Scan(ptrs...); err != nil {
		return nil, err
	}
	return vals, nil
}
