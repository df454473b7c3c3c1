package llmtool_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/pgtest"
)

// The history records what is stored, byte for byte, and undo writes it
// back: SQLite text with a NUL byte, text that is not valid UTF-8, and
// rows whose UNIQUE values a call swapped through a temporary one.

// stored is notes.title of note 7 as stored: its type and its bytes in
// hex.
func (f *csFixture) stored(t *testing.T) string {
	t.Helper()
	var typ, hex string
	require.NoError(t, f.db.QueryRow(`SELECT typeof(title), hex(title) FROM notes WHERE id = 7`).Scan(&typ, &hex))
	return typ + " " + hex
}

// undo undoes change id and fails the test unless it undid it.
func (f *csFixture) undo(t *testing.T, id int64) llmtool.Result {
	t.Helper()
	res := f.call(t, context.Background(), "undo_changes", fmt.Sprintf(`{"id": %d}`, id))
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, fmt.Sprintf(`{"undone": [%d]}`, id), string(res.JSON))
	return res
}

// TestChangesetExactText: SQLite text with a NUL byte, or whose bytes
// are not valid UTF-8, is recorded as stored (the first as a JSON string,
// the second as {"$text": base64}), and each undo, of an insert, an
// update of another column, an update of the text, and a delete, puts
// back the same bytes, as text. PostgreSQL's text holds neither.
func TestChangesetExactText(t *testing.T) {
	t.Parallel()
	if pgtest.FromEnv() {
		t.Skip("PostgreSQL text holds no NUL byte and only valid UTF-8")
	}
	for _, tc := range []struct {
		name       string
		value, hex string // the title as SQL, and as stored
		json       string // as recorded
		other      string // another title of the same kind, as SQL
		otherJSON  string
	}{
		{"a NUL byte", `'a' || char(0) || 'b'`, "610062", `"a\u0000b"`, `'a' || char(0) || 'c'`, `"a\u0000c"`},
		{"not UTF-8", `CAST(x'c328ff' AS TEXT)`, "C328FF", `{"$text":"wyj/"}`, `CAST(x'c329ff' AS TEXT)`, `{"$text":"wyn/"}`},
		{"both", `CAST(x'c300ff' AS TEXT)`, "C300FF", `{"$text":"wwD/"}`, `CAST(x'c301ff' AS TEXT)`, `{"$text":"wwH/"}`},
		{"a NUL byte first", `char(0) || 'z'`, "007A", `"\u0000z"`, `char(0)`, `"\u0000"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCSFixture(t)
			ctx := context.Background()
			sql := func(q string) llmtool.Result {
				t.Helper()
				res := f.call(t, ctx, "cs_sql", string(mustJSON(t, csSQLIn{SQL: []string{q}})))
				require.False(t, res.IsError, res.Text())
				require.NotNil(t, res.Changeset)
				return res
			}
			want := "text " + tc.hex

			ins := sql(`INSERT INTO notes (id, title) VALUES (7, ` + tc.value + `)`)
			require.Equal(t, want, f.stored(t))
			require.Equal(t, tc.json, string(ins.Changeset.Rows[0].After["title"]), "an insert records the text")

			other := sql(`UPDATE notes SET content = 'changed' WHERE id = 7`)
			require.Equal(t, tc.json, string(other.Changeset.Rows[0].Before["title"]))
			require.Equal(t, tc.json, string(other.Changeset.Rows[0].After["title"]))
			f.undo(t, other.Changeset.ID)
			require.Equal(t, want, f.stored(t))

			retitle := sql(`UPDATE notes SET title = ` + tc.other + ` WHERE id = 7`)
			require.Equal(t, tc.json, string(retitle.Changeset.Rows[0].Before["title"]))
			require.Equal(t, tc.otherJSON, string(retitle.Changeset.Rows[0].After["title"]))
			f.undo(t, retitle.Changeset.ID)
			require.Equal(t, want, f.stored(t), "undo puts back the bytes before")

			del := sql(`DELETE FROM notes WHERE id = 7`)
			require.Equal(t, tc.json, string(del.Changeset.Rows[0].Before["title"]))
			undo := f.undo(t, del.Changeset.ID)
			require.Equal(t, want, f.stored(t), "undo of the delete puts back the bytes")
			require.Equal(t, "notes", undo.Changeset.Rows[1].Table)
			require.Equal(t, tc.json, string(undo.Changeset.Rows[1].After["title"]), "and records them")

			f.undo(t, ins.Changeset.ID)
			require.Zero(t, f.count(t, "notes"))
		})
	}
}

// TestChangesetUndoSwap: a swap of two UNIQUE values through a temporary
// one undoes, whether one call made it or several, and the undo's own
// undo redoes it.
func TestChangesetUndoSwap(t *testing.T) {
	t.Parallel()
	steps := []string{
		`UPDATE uniq SET s = 'tmp' WHERE id = 3`,
		`UPDATE uniq SET s = 'x' WHERE id = 4`,
		`UPDATE uniq SET s = 'y' WHERE id = 3`,
	}
	for _, tc := range []struct {
		name  string
		calls [][]string
		rows  int // the rows the undo changes
	}{
		{"one call", [][]string{steps}, 2},
		{"two calls", [][]string{steps[:2], steps[2:]}, 2},
		{"three calls", [][]string{steps[:1], steps[1:2], steps[2:]}, 2},
		{"one call, swapped back, one changed", [][]string{append(append([]string(nil), steps...),
			`UPDATE uniq SET s = 'tmp' WHERE id = 4`, `UPDATE uniq SET s = 'x' WHERE id = 3`, `UPDATE uniq SET s = 'y' WHERE id = 4`,
			`UPDATE uniq SET s = 'z' WHERE id = 3`)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCSFixture(t)
			ctx := context.Background()
			for _, q := range []string{
				`CREATE TABLE uniq (id INTEGER PRIMARY KEY, s TEXT NOT NULL UNIQUE)`,
				`INSERT INTO uniq VALUES (3, 'x'), (4, 'y')`,
			} {
				_, err := f.db.Exec(q)
				require.NoError(t, err)
			}
			f.opts.Changesets.Tables = append(f.opts.Changesets.Tables, "uniq")
			f.reg = f.registry(t, f.db)
			state := func() string {
				t.Helper()
				var s string
				require.NoError(t, f.db.QueryRow(`SELECT string_agg(s, ',' ORDER BY id) FROM uniq`).Scan(&s))
				return s
			}
			var first int64
			for i, qs := range tc.calls {
				res := f.call(t, ctx, "cs_sql", string(mustJSON(t, csSQLIn{SQL: qs})))
				require.False(t, res.IsError, res.Text())
				if i == 0 {
					first = res.Changeset.ID
				}
				if tc.name == "one call" {
					// The rows keep their steps, since a value moved.
					require.JSONEq(t, `[
						{"table":"uniq","op":"update","key":{"id":3},"before":{"id":3,"s":"x"},"after":{"id":3,"s":"y"},
							"steps":[{"seq":0},{"seq":2,"before":{"id":3,"s":"tmp"}}]},
						{"table":"uniq","op":"update","key":{"id":4},"before":{"id":4,"s":"y"},"after":{"id":4,"s":"x"},"steps":[{"seq":1}]}
					]`, rowsJSON(t, res.Changeset))
				}
			}
			after := state()
			undo := f.call(t, ctx, "undo_changes", fmt.Sprintf(`{"since": %d}`, first-1))
			require.False(t, undo.IsError, undo.Text())
			require.Len(t, undo.Changeset.Rows, tc.rows)
			require.Equal(t, "x,y", state())

			redo := f.undo(t, undo.Changeset.ID)
			require.Equal(t, after, state(), "undoing the undo redoes the swap")
			f.undo(t, redo.Changeset.ID)
			require.Equal(t, "x,y", state())
		})
	}
}

// TestChangesetExactTextNotWAL: in another journal mode no second
// connection reads the state before a write (it could wait for the
// writer), so text before the call that an UPDATE set stays as the
// pre-update hook read it, cut at its NUL byte; the text after it is read
// again, and the call does not wait. Text no UPDATE set is as the call
// left it, read in its transaction.
func TestChangesetExactTextNotWAL(t *testing.T) {
	t.Parallel()
	if pgtest.FromEnv() {
		t.Skip("SQLite's journal modes")
	}
	f := newCSFixture(t)
	require.NoError(t, f.reg.Close())
	require.NoError(t, f.db.Close()) // the fixture's handles keep WAL mode
	db, err := sql.Open("sqlite", "file:"+f.where+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(DELETE)&_pragma=foreign_keys(1)&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "delete", mode)
	f.db, f.reg = db, f.registry(t, db)
	_, err = db.Exec(`INSERT INTO notes (id, title) VALUES (7, 'a' || char(0) || 'b')`)
	require.NoError(t, err)

	res := f.call(t, context.Background(), "cs_sql", `{"sql": ["UPDATE notes SET content = 'changed' WHERE id = 7"]}`)
	require.False(t, res.IsError, res.Text())
	require.Equal(t, `"a\u0000b"`, string(res.Changeset.Rows[0].Before["title"]), "title, which no UPDATE set, is read after the call")
	require.Equal(t, `"a\u0000b"`, string(res.Changeset.Rows[0].After["title"]))

	res = f.call(t, context.Background(), "cs_sql", `{"sql": ["UPDATE notes SET title = 'a' || char(0) || 'c' WHERE id = 7"]}`)
	require.False(t, res.IsError, res.Text())
	require.Equal(t, `"a"`, string(res.Changeset.Rows[0].Before["title"]))
	require.Equal(t, `"a\u0000c"`, string(res.Changeset.Rows[0].After["title"]))
}

// TestChangesetExactTextTableKinds: text is read again by each kind of
// row identity: a hidden rowid (a rowid table keyed by text), the rowid
// (no primary key), the primary key (WITHOUT ROWID).
func TestChangesetExactTextTableKinds(t *testing.T) {
	t.Parallel()
	if pgtest.FromEnv() {
		t.Skip("SQLite's rowid")
	}
	for _, tc := range []struct{ name, ddl, rows string }{
		{"hidden rowid", `CREATE TABLE tk (k TEXT PRIMARY KEY, v TEXT)`,
			`[{"table":"tk","op":"delete","key":{"k":"key"},"before":{"k":"key","rowid":1,"v":"a\u0000b"}}]`},
		{"rowid", `CREATE TABLE tk (k TEXT, v TEXT)`,
			`[{"table":"tk","op":"delete","key":{"rowid":1},"before":{"k":"key","v":"a\u0000b"}}]`},
		{"without rowid", `CREATE TABLE tk (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID`,
			`[{"table":"tk","op":"delete","key":{"k":"key"},"before":{"k":"key","v":"a\u0000b"}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCSFixture(t)
			for _, q := range []string{tc.ddl, `INSERT INTO tk VALUES ('key', 'a' || char(0) || 'b')`} {
				_, err := f.db.Exec(q)
				require.NoError(t, err)
			}
			f.opts.Changesets.Tables = append(f.opts.Changesets.Tables, "tk")
			f.reg = f.registry(t, f.db)
			res := f.call(t, context.Background(), "cs_sql", `{"sql": ["DELETE FROM tk"]}`)
			require.False(t, res.IsError, res.Text())
			require.JSONEq(t, tc.rows, rowsJSON(t, res.Changeset))
			f.undo(t, res.Changeset.ID)
			var stored string
			require.NoError(t, f.db.QueryRow(`SELECT typeof(v) || ' ' || hex(v) FROM tk`).Scan(&stored))
			require.Equal(t, "text 610062", stored)
		})
	}
}

// TestChangesetExactTextSetElsewhere: the text before an UPDATE of a
// row is taken from the text after it, read in the call's transaction,
// only for the columns no UPDATE of the call could set; text set to what
// its cut reads the same, set by a trigger, by an upsert, by a foreign
// key's action, or replaced with its row, is read as it was before the
// call.
func TestChangesetExactTextSetElsewhere(t *testing.T) {
	t.Parallel()
	if pgtest.FromEnv() {
		t.Skip("PostgreSQL text holds no NUL byte")
	}
	for _, tc := range []struct {
		name          string
		setup         []string
		call          string
		table, column string
		before, after string
	}{
		{"set to its cut", nil, `UPDATE notes SET title = 'a' WHERE id = 7`, "notes", "title", `"a\u0000b"`, `"a"`},
		{"by a trigger", []string{`CREATE TRIGGER retitle AFTER UPDATE OF content ON notes BEGIN UPDATE notes SET title = 'a' || char(0) || 'z' WHERE id = new.id; END`},
			`UPDATE notes SET content = 'x' WHERE id = 7`, "notes", "title", `"a\u0000b"`, `"a\u0000z"`},
		{"replaced", nil, `INSERT OR REPLACE INTO notes (id, title) VALUES (7, 'a' || char(0) || 'z')`, "notes", "title", `"a\u0000b"`, `"a\u0000z"`},
		{"by an upsert", nil, `INSERT INTO notes (id, title) VALUES (7, 'x') ON CONFLICT (id) DO UPDATE SET title = 'a' || char(0) || 'z'`, "notes", "title", `"a\u0000b"`, `"a\u0000z"`},
		{"by a foreign key's action", []string{
			`CREATE TABLE labels (name TEXT PRIMARY KEY)`,
			`CREATE TABLE labelled (id INTEGER PRIMARY KEY, label TEXT REFERENCES labels (name) ON UPDATE CASCADE)`,
			`INSERT INTO labels VALUES ('a' || char(0) || 'b')`,
			`INSERT INTO labelled VALUES (1, 'a' || char(0) || 'b')`,
		}, `UPDATE labels SET name = 'a' || char(0) || 'z'`, "labelled", "label", `"a\u0000b"`, `"a\u0000z"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCSFixture(t)
			for _, q := range append([]string{`INSERT INTO notes (id, title) VALUES (7, 'a' || char(0) || 'b')`}, tc.setup...) {
				_, err := f.db.Exec(q)
				require.NoError(t, err, q)
			}
			if tc.table != "notes" {
				f.opts.Changesets.Tables = append(f.opts.Changesets.Tables, tc.table)
				f.reg = f.registry(t, f.db)
			}
			res := f.call(t, context.Background(), "cs_sql", string(mustJSON(t, csSQLIn{SQL: []string{tc.call}})))
			require.False(t, res.IsError, res.Text())
			require.NotNil(t, res.Changeset)
			var row *changeset.Row
			for i, r := range res.Changeset.Rows {
				if r.Table == tc.table && r.Op == changeset.Update {
					row = &res.Changeset.Rows[i]
				}
			}
			require.NotNil(t, row, rowsJSON(t, res.Changeset))
			require.Equal(t, tc.before, string(row.Before[tc.column]))
			require.Equal(t, tc.after, string(row.After[tc.column]))
		})
	}
}
