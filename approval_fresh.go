package llmtool

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// Fresh values: what a tool's run makes anew, which differs from one run
// to the next. An approved value must be the committed value, or the
// person is asked again: a value that differs between the run the person
// was shown and the run that commits is bound like any other, unless it
// cannot carry a decision. Only two kinds cannot:
//
//   - values the host declares generated (changeset.Config.Generated: an
//     id, a timestamp, a random token), bound as "set", not to what;
//   - values the engine makes for an inserted row that did not give one:
//     a PostgreSQL sequence's (a serial or identity column's default),
//     which a rolled-back run does not give back, and SQLite's rowid (an
//     INTEGER PRIMARY KEY), which moves when another write inserts first.
//
// A call that asks for approval therefore runs twice, both runs rolled
// back, with the same data; the second run's preview is the one shown
// and bound, as it is. A column of an inserted row whose value differs
// between the runs is the engine's (a made column) if the catalog says
// the engine makes it and each value is one the engine gave in that run:
// on PostgreSQL, after the highest value the earlier run inserted and no
// later than the sequence's last value; on SQLite, next after the
// table's other rows. The token carries the made columns, the values
// the shown run gave them and the generated columns, in the order of the
// rows, and which columns repeated those values (a new row's id in its
// child's foreign key). The approved run checks its own made values the
// same way, and its digest reads its changeset with its made and
// generated values, and the values of those columns that repeat them,
// put back to the values the person was shown. Every other value, a
// quote read from elsewhere or a random value the tool makes up, is
// bound as shown: the approved run that changes it asks again, showing
// the new value, and commits nothing.
//
// A value the statement gives passes for the engine's only if it falls
// among the values the sequence gave since the shown run (on SQLite,
// only if it is the rowid the engine would have given). What the check
// cannot tell apart otherwise asks again: a sequence with CACHE above 1
// whose sessions hand out values out of order, an AUTOINCREMENT rowid
// after a deleted highest row, a new id repeated inside a text.
//
// The tool's output is not the change: it goes to the model, not into
// the database. When the change is bound row by row (a changeset of
// tracked tables that leaves nothing out, NotUndoable empty), whatever
// the output says of it is bound there, so an output that differs
// between the runs (a new id, the time) stays unbound. Without such a
// changeset the output may be the only place the person sees a value,
// so it is bound.

// fresh is what the two runs of a request found, and what a run's digest
// binds of it.
type fresh struct {
	result  bool            // the output differed and the change is bound row by row: left unbound
	columns map[string]bool // freshKey(table, column): the engine makes these (made columns)
	// shown holds, per made column the engine gave and per generated
	// column, the values of the run the person was shown (during a
	// request's second run, the first run's), in the order of the rows
	// that set them.
	shown map[string][]string
	// refs holds, per column of the shown run that repeats made or
	// generated values (a child's foreign key to a new row), the columns
	// whose values it repeats.
	refs map[string][]string
	// masked is an approved run's changeset as its digest binds it, its
	// made values put back to the shown ones (bindMade); nil to bind the
	// changeset as it is. Not in the token.
	masked *changeset.Set
}

func freshKey(table, column string) string { return table + "\x00" + column }

// revealFresh compares the previews of a request's two runs: a is the
// first, b the second, whose preview is shown.
func (r *Registry) revealFresh(ctx context.Context, tx *sql.Tx, a, b *approval.Preview) (fresh, error) {
	f := fresh{result: !bytes.Equal(a.Result, b.Result) && b.Changeset != nil && b.Changeset.NotUndoable == ""}
	if a.Changeset == nil || b.Changeset == nil {
		return f, nil
	}
	// The n-th row a run inserted into a table is the other run's n-th.
	ins := func(set *changeset.Set) map[string][]changeset.Values {
		m := make(map[string][]changeset.Values)
		for _, row := range set.Rows {
			if row.Op == changeset.Insert {
				m[row.Table] = append(m[row.Table], row.After)
			}
		}
		return m
	}
	ia, ib := ins(a.Changeset), ins(b.Changeset)
	for _, table := range slices.Sorted(maps.Keys(ia)) {
		ra, rb := ia[table], ib[table]
		if len(ra) != len(rb) {
			continue
		}
		made, err := r.madeColumnsOf(ctx, tx, table)
		if err != nil {
			return f, err
		}
		for c := range made {
			k := freshKey(table, c)
			for i := range ra {
				if !bytes.Equal(ra[i][c], rb[i][c]) {
					if f.columns == nil {
						f.columns, f.shown = make(map[string]bool), make(map[string][]string)
					}
					f.columns[k] = true
					f.shown[k] = setValues(a.Changeset, table, c, false)
					break
				}
			}
		}
	}
	return f, nil
}

// setValues returns the values of column in the rows of set that set it
// (inserted rows; and, with updated, updated rows that change it), as
// JSON, in order; null values too.
func setValues(set *changeset.Set, table, column string, updated bool) []string {
	var vals []string
	for _, row := range set.Rows {
		if row.Table == table && sets(row, column, updated) {
			vals = append(vals, string(row.After[column]))
		}
	}
	return vals
}

func sets(row changeset.Row, column string, updated bool) bool {
	return row.Op == changeset.Insert || (updated && row.Op == changeset.Update && !bytes.Equal(row.Before[column], row.After[column]))
}

// bindMade finds, in a run whose digest an approval binds (the shown
// run, the approved run), the made values the engine gave and the
// generated values, and makes them f.shown, for a token that shows this
// run. For an approved run (approved) it sets f.masked to set with those
// values, and the values that repeat them, put back to the shown run's.
func (r *Registry) bindMade(ctx context.Context, tx *sql.Tx, set *changeset.Set, f *fresh, approved bool) error {
	prev, prevRefs := f.shown, f.refs
	f.shown, f.refs, f.masked = nil, nil, nil
	if set == nil {
		return nil
	}
	cur := make(map[string][]string)
	for k := range f.columns {
		table, column, _ := strings.Cut(k, "\x00")
		vals := setValues(set, table, column, false)
		ok, err := r.engineGave(ctx, tx, set, table, column, vals, prev[k])
		if err != nil {
			return err
		}
		if ok {
			cur[k] = vals
		}
	}
	for _, row := range set.Rows {
		for c := range row.After {
			if k := freshKey(row.Table, c); r.tracked.isGenerated(row.Table, c) && cur[k] == nil && sets(row, c, true) {
				cur[k] = setValues(set, row.Table, c, true)
			}
		}
	}
	if len(cur) > 0 {
		f.shown, f.refs = cur, repeats(set, cur)
	}
	if approved {
		f.masked = putBack(set, cur, prev, prevRefs)
	}
	return nil
}

// repeats finds the columns whose values, in the rows of set that set
// them, repeat values of cur's columns (made and generated), and which.
func repeats(set *changeset.Set, cur map[string][]string) map[string][]string {
	in := make(map[string][]string) // a value → the columns of cur that hold it
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		for _, v := range cur[k] {
			if v != "null" && !slices.Contains(in[v], k) {
				in[v] = append(in[v], k)
			}
		}
	}
	var refs map[string][]string
	for _, row := range set.Rows {
		for c, v := range row.After {
			k := freshKey(row.Table, c)
			if _, made := cur[k]; made || !sets(row, c, true) {
				continue
			}
			for _, m := range in[string(v)] {
				if refs == nil {
					refs = make(map[string][]string)
				}
				if !slices.Contains(refs[k], m) {
					refs[k] = append(refs[k], m)
					slices.Sort(refs[k])
				}
			}
		}
	}
	return refs
}

// engineGave reports whether the engine gave vals, the values of column
// in the rows set inserted into table, in this run; prev are the values
// of the run before (PostgreSQL).
func (r *Registry) engineGave(ctx context.Context, tx *sql.Tx, set *changeset.Set, table, column string, vals, prev []string) (bool, error) {
	cols, err := r.madeColumnsOf(ctx, tx, table)
	if err != nil {
		return false, err
	}
	mc, ok := cols[column]
	ints, ok2 := parseInts(vals)
	if !ok || !ok2 || len(ints) == 0 {
		return false, nil
	}
	if r.tx.Engine == engine.Postgres {
		// A sequence only moves on: the run's values come after the run
		// before's, and no later than the last value the sequence gave
		// (any session's: a value given by the statement passes only if
		// it falls among those).
		before, ok := parseInts(prev)
		if !ok || len(before) == 0 {
			return false, nil
		}
		lo := slices.Max(before)
		if mc.down {
			lo = slices.Min(before)
		}
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT CASE WHEN has_sequence_privilege($1::regclass, 'SELECT, USAGE') THEN pg_sequence_last_value($1::regclass) END`, mc.seq).Scan(&last); err != nil {
			return false, fmt.Errorf("llmtool: read sequence %s: %w", mc.seq, err)
		}
		for _, v := range ints {
			if !last.Valid || (!mc.down && (v <= lo || v > last.Int64)) || (mc.down && (v >= lo || v < last.Int64)) {
				return false, nil
			}
		}
		return true, nil
	}
	// SQLite gives a new row the rowid after the table's highest: the
	// run's values come after every other row's, deleted ones included,
	// one each.
	ids, _ := json.Marshal(ints)
	var hi sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(rowid) FROM `+sqlcheck.QuoteIdent(table)+` WHERE rowid NOT IN (SELECT value FROM json_each(?))`, string(ids)).Scan(&hi); err != nil {
		return false, fmt.Errorf("llmtool: read table %s's rowids: %w", table, err)
	}
	for _, row := range set.Rows {
		if row.Table == table && row.Op == changeset.Delete {
			raw, ok := row.Before[column]
			if !ok {
				raw = row.Key[column] // a table without a primary key
			}
			if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil && v > hi.Int64 {
				hi.Int64 = v
			}
		}
	}
	for _, v := range ints {
		if v <= hi.Int64 || v > hi.Int64+int64(len(ints)) {
			return false, nil
		}
	}
	return true, nil
}

func parseInts(vals []string) ([]int64, bool) {
	ints := make([]int64, len(vals))
	for i, s := range vals {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, false
		}
		ints[i] = v
	}
	return ints, true
}

// putBack returns set with its made and generated values (cur, by
// column, in the order of the rows that set them) put back to the shown
// run's (shown), and the values of the columns that repeated them in the
// shown run (refs) put back too where they repeat one; nil when there is
// nothing to put back. A column whose values are not as many as shown
// stays as it is, and so differs.
func putBack(set *changeset.Set, cur, shown, refs map[string][]string) *changeset.Set {
	to := make(map[string]map[string]string) // per column, a value of this run → the shown one
	for k, vals := range cur {
		if len(vals) != len(shown[k]) {
			continue
		}
		to[k] = make(map[string]string, len(vals))
		for i, v := range vals {
			to[k][v] = shown[k][i]
		}
	}
	if len(to) == 0 {
		return nil
	}
	out := &changeset.Set{ID: set.ID, NotUndoable: set.NotUndoable, Rows: make([]changeset.Row, len(set.Rows))}
	at := make(map[string]int) // position of the next value per column
	for i, row := range set.Rows {
		out.Rows[i] = row
		if row.Op == changeset.Delete {
			continue
		}
		after := make(changeset.Values, len(row.After))
		for _, c := range sortedCols(row.After) {
			v := row.After[c]
			k := freshKey(row.Table, c)
			switch vals, made := cur[k]; {
			case made && sets(row, c, true):
				if n := at[k]; len(vals) == len(shown[k]) {
					v = json.RawMessage(shown[k][n])
				}
				at[k]++
			case sets(row, c, true):
				for _, m := range refs[k] {
					if w, ok := to[m][string(v)]; ok {
						v = json.RawMessage(w) // a reference to a made value
						break
					}
				}
			}
			after[c] = v
		}
		out.Rows[i].After = after
		if row.Op == changeset.Insert {
			key := make(changeset.Values, len(row.Key))
			for c, v := range row.Key {
				if a, ok := after[c]; ok {
					v = a
				}
				key[c] = v
			}
			out.Rows[i].Key = key
		}
	}
	return out
}

// madeColumn is a column whose value the engine makes for an inserted
// row that does not give one.
type madeColumn struct {
	seq  string // PostgreSQL: its sequence, as regclass text
	down bool   // PostgreSQL: the sequence counts down
}

// madeColumns are the tables' made columns, read from the catalog once
// per table and registry, as the capture reads the tracked tables.
type madeColumns struct {
	mu     sync.Mutex
	tables map[string]map[string]madeColumn
}

// pgMadeColumns are a table's columns with a sequence's value as their
// default (nextval(...): serial, or a sequence named by hand) or that are
// identity columns, with the sequence and its direction.
const pgMadeColumns = `SELECT a.attname::text, q.seqrelid::regclass::text, q.seqincrement < 0
FROM pg_attribute a
LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND (
	(a.attidentity <> '' AND d.classid = 'pg_class'::regclass AND d.refobjid = a.attrelid AND d.refobjsubid = a.attnum AND d.deptype = 'i')
	OR (ad.oid IS NOT NULL AND pg_get_expr(ad.adbin, ad.adrelid) LIKE 'nextval(%' AND d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid))
JOIN pg_sequence q ON q.seqrelid = CASE WHEN d.classid = 'pg_attrdef'::regclass THEN d.refobjid ELSE d.objid END
WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`

// sqliteMadeColumn is a rowid table's rowid as changesets name it: its
// INTEGER PRIMARY KEY, or "rowid" when no column names it; NULL for a
// WITHOUT ROWID table.
const sqliteMadeColumn = `SELECT CASE WHEN (SELECT wr FROM pragma_table_list(?)) THEN NULL
	ELSE COALESCE((SELECT name FROM pragma_table_info(?) WHERE pk = 1 AND upper(type) = 'INTEGER'
		AND (SELECT count(*) FROM pragma_table_info(?) WHERE pk > 0) = 1), 'rowid') END`

// madeColumnsOf returns table's made columns, from the cache or the
// catalog.
func (r *Registry) madeColumnsOf(ctx context.Context, tx *sql.Tx, table string) (map[string]madeColumn, error) {
	m := &r.approve.made
	m.mu.Lock()
	cols, ok := m.tables[table]
	m.mu.Unlock()
	if ok {
		return cols, nil
	}
	cols, err := readMadeColumns(ctx, tx, r.tx.Engine, table)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.tables == nil {
		m.tables = make(map[string]map[string]madeColumn)
	}
	m.tables[table] = cols
	m.mu.Unlock()
	return cols, nil
}

// readMadeColumns reads table's made columns from the catalog.
func readMadeColumns(ctx context.Context, tx *sql.Tx, e engine.Engine, table string) (map[string]madeColumn, error) {
	cols := make(map[string]madeColumn)
	if e == engine.Postgres {
		rows, err := tx.QueryContext(ctx, pgMadeColumns, sqlcheck.QuoteIdent(table))
		if err != nil {
			return nil, fmt.Errorf("llmtool: read table %s's columns: %w", table, err)
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var mc madeColumn
			if err := rows.Scan(&name, &mc.seq, &mc.down); err != nil {
				return nil, err
			}
			cols[name] = mc
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	} else {
		var name sql.NullString
		if err := tx.QueryRowContext(ctx, sqliteMadeColumn, table, table, table).Scan(&name); err != nil {
			return nil, fmt.Errorf("llmtool: read table %s's columns: %w", table, err)
		}
		if name.Valid {
			cols[name.String] = madeColumn{}
		}
	}
	return cols, nil
}

// encode writes f for a token: "r" or "-" for the output, then a line
// per made column ("table\x00column"), a line per column with shown
// values ("=table\x00column\x00" and their JSON array) and one per
// column that repeats them ("@table\x00column\x00" and the columns'
// JSON array), in order.
func (f *fresh) encode() string {
	lines := make([]string, 0, len(f.columns)+len(f.shown)+len(f.refs))
	for k := range f.columns {
		lines = append(lines, k)
	}
	for prefix, m := range map[string]map[string][]string{"=": f.shown, "@": f.refs} {
		for k, vals := range m {
			b, _ := json.Marshal(vals)
			lines = append(lines, prefix+k+"\x00"+string(b))
		}
	}
	slices.Sort(lines)
	head := "-"
	if f.result {
		head = "r"
	}
	return strings.Join(append([]string{head}, lines...), "\n")
}

// decodeFresh reads what encode wrote; a token is signed, so it holds
// what this server wrote.
func decodeFresh(s string) fresh {
	lines := strings.Split(s, "\n")
	f := fresh{result: lines[0] == "r"}
	for _, line := range lines[1:] {
		if line != "" && (line[0] == '=' || line[0] == '@') {
			table, rest, _ := strings.Cut(line[1:], "\x00")
			column, vals, _ := strings.Cut(rest, "\x00")
			m := &f.shown
			if line[0] == '@' {
				m = &f.refs
			}
			if *m == nil {
				*m = make(map[string][]string)
			}
			var list []string
			_ = json.Unmarshal([]byte(vals), &list)
			(*m)[freshKey(table, column)] = list
			continue
		}
		if f.columns == nil {
			f.columns = make(map[string]bool)
		}
		f.columns[line] = true
	}
	return f
}
