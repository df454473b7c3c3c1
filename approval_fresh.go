package llmtool

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/engine"
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
// and bound. A column of an inserted row whose value differs between
// the runs is the engine's (made) if the catalog says the engine makes
// it and the value is one the engine gave in that run: on PostgreSQL,
// after the highest value the earlier run showed and no later than the
// sequence's last value; on SQLite, next after the table's other rows.
// The token carries the made columns and the highest value shown, so the
// approved run checks its own values the same way. A value that repeats
// a made or generated value of the same run (a new row's id in its
// child's foreign key) is bound as a reference to that value. Every
// other value, a quote read from elsewhere or a random value the tool
// makes up, is bound as shown: the approved run that changes it asks
// again, showing the new value, and commits nothing.
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
	// floors holds, per made column on PostgreSQL, the highest value the
	// shown run inserted: a later run's values come after it.
	floors map[string]string
	// masked is the run's changeset as its digest binds it (bindMade):
	// made values and references to made or generated values replaced
	// by labels; nil to bind the changeset as it is. Not in the token.
	masked *changeset.Set
}

func freshKey(table, column string) string { return table + "\x00" + column }

// revealFresh compares the previews of a request's two runs: a is the
// first, b the second, whose preview is shown.
func (r *Registry) revealFresh(ctx context.Context, tx *sql.Tx, a, b *approval.Preview) (fresh, error) {
	f := fresh{result: !bytes.Equal(a.Result, b.Result) && b.Changeset != nil && b.Changeset.NotUndoable == ""}
	if a.Changeset == nil || b.Changeset == nil || len(a.Changeset.Rows) != len(b.Changeset.Rows) {
		return f, nil
	}
	for i, ra := range a.Changeset.Rows {
		rb := b.Changeset.Rows[i]
		if ra.Op != changeset.Insert || rb.Op != changeset.Insert || ra.Table != rb.Table {
			continue // only an inserted row has values the engine makes
		}
		for c, v := range ra.After {
			k := freshKey(ra.Table, c)
			if bytes.Equal(v, rb.After[c]) || f.columns[k] {
				continue
			}
			made, err := r.madeColumnsOf(ctx, tx, ra.Table)
			if err != nil {
				return f, err
			}
			if _, ok := made[c]; !ok {
				continue // bound as shown
			}
			if f.columns == nil {
				f.columns = make(map[string]bool)
			}
			f.columns[k] = true
			if hi, ok := highest(a.Changeset, ra.Table, c); ok && r.tx.Engine == engine.Postgres {
				if f.floors == nil {
					f.floors = make(map[string]string)
				}
				f.floors[k] = strconv.FormatInt(hi, 10)
			}
		}
	}
	return f, nil
}

// highest is the highest integer value of column in set's inserted rows
// of table; false if one is not an integer, or there are none.
func highest(set *changeset.Set, table, column string) (int64, bool) {
	vals, ok := insertedInts(set, table, column)
	if !ok || len(vals) == 0 {
		return 0, false
	}
	return slices.Max(vals), true
}

// insertedInts returns the values of column in set's inserted rows of
// table; false if one is not an integer.
func insertedInts(set *changeset.Set, table, column string) ([]int64, bool) {
	var vals []int64
	for _, row := range set.Rows {
		if row.Table != table || row.Op != changeset.Insert {
			continue
		}
		v, err := strconv.ParseInt(string(row.After[column]), 10, 64)
		if err != nil {
			return nil, false
		}
		vals = append(vals, v)
	}
	return vals, true
}

// bindMade decides, for a run whose digest an approval binds (the shown
// run, the approved run), which values of set the engine made, and sets
// f.masked to set as the digest binds it; f.floors becomes this run's,
// for a token that shows this run.
func (r *Registry) bindMade(ctx context.Context, tx *sql.Tx, set *changeset.Set, f *fresh) error {
	f.masked = nil
	if set == nil {
		return nil
	}
	made := make(map[string]bool, len(f.columns))
	var floors map[string]string
	for k := range f.columns {
		table, column, _ := strings.Cut(k, "\x00")
		vals, ok := insertedInts(set, table, column)
		if !ok || len(vals) == 0 {
			continue // bound as shown
		}
		if r.tx.Engine == engine.Postgres {
			if floors == nil {
				floors = make(map[string]string)
			}
			floors[k] = strconv.FormatInt(slices.Max(vals), 10)
		}
		ok, err := r.engineGave(ctx, tx, set, table, column, vals, f.floors[k])
		if err != nil {
			return err
		}
		made[k] = ok
	}
	f.floors = floors
	f.masked = maskMade(set, made, r.tracked.isGenerated)
	return nil
}

// engineGave reports whether the engine gave vals, the values of column
// in the rows set inserted into table, in this run; floor is the highest
// value the shown run inserted (PostgreSQL).
func (r *Registry) engineGave(ctx context.Context, tx *sql.Tx, set *changeset.Set, table, column string, vals []int64, floor string) (bool, error) {
	cols, err := r.madeColumnsOf(ctx, tx, table)
	if err != nil {
		return false, err
	}
	mc, ok := cols[column]
	if !ok {
		return false, nil
	}
	if r.tx.Engine == engine.Postgres {
		// A sequence only moves on: the run's values come after the
		// shown run's highest, and no later than the last value the
		// sequence gave (any session's, so a value given by the
		// statement could pass only if it falls among those).
		lo, err := strconv.ParseInt(floor, 10, 64)
		if err != nil {
			return false, nil
		}
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT CASE WHEN has_sequence_privilege($1::regclass, 'SELECT, USAGE') THEN pg_sequence_last_value($1::regclass) END`, mc.seq).Scan(&last); err != nil {
			return false, fmt.Errorf("llmtool: read sequence %s: %w", mc.seq, err)
		}
		for _, v := range vals {
			if !last.Valid || (!mc.down && (v <= lo || v > last.Int64)) || (mc.down && (v >= lo || v < last.Int64)) {
				return false, nil
			}
		}
		return true, nil
	}
	// SQLite gives a new row the rowid after the table's highest: the
	// run's values come after every other row's, deleted ones included,
	// one each.
	ids, _ := json.Marshal(vals)
	var hi sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(rowid) FROM `+quoteIdent(table)+` WHERE rowid NOT IN (SELECT value FROM json_each(?))`, string(ids)).Scan(&hi); err != nil {
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
	for _, v := range vals {
		if v <= hi.Int64 || v > hi.Int64+int64(len(vals)) {
			return false, nil
		}
	}
	return true, nil
}

// maskMade returns set as a digest binds it: in inserted rows, the values
// of made columns (made[freshKey] true) replaced by labels, and any value
// a row sets that repeats a made or generated value of the same set
// replaced by that value's label, numbered in the order the rows set
// them; so the digest binds a reference to the new value, not the value.
func maskMade(set *changeset.Set, made map[string]bool, generated func(table, column string) bool) *changeset.Set {
	labels := make(map[string]json.RawMessage)
	for _, row := range set.Rows {
		for _, c := range sortedCols(row.After) {
			v := row.After[c]
			if string(v) == "null" || !(generated(row.Table, c) || (row.Op == changeset.Insert && made[freshKey(row.Table, c)])) {
				continue
			}
			if _, ok := labels[string(v)]; !ok {
				labels[string(v)] = json.RawMessage(fmt.Sprintf(`{"$made":%d}`, len(labels)+1))
			}
		}
	}
	if len(labels) == 0 {
		return nil
	}
	out := &changeset.Set{ID: set.ID, NotUndoable: set.NotUndoable, Rows: make([]changeset.Row, len(set.Rows))}
	for i, row := range set.Rows {
		out.Rows[i] = row
		if row.Op == changeset.Delete {
			continue
		}
		after := make(changeset.Values, len(row.After))
		for c, v := range row.After {
			l, ok := labels[string(v)]
			if ok && !generated(row.Table, c) && (row.Op == changeset.Insert || !bytes.Equal(row.Before[c], v)) {
				v = l // a value the row sets, not one it keeps
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
		rows, err := tx.QueryContext(ctx, pgMadeColumns, quoteIdent(table))
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

// encode writes f for a token: "r" or "-" for the output, then the made
// columns' keys in order, a line each, with "\x00" and the floor when
// there is one.
func (f *fresh) encode() string {
	keys := make([]string, 0, len(f.columns))
	for k := range f.columns {
		if fl, ok := f.floors[k]; ok {
			k += "\x00" + fl
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	head := "-"
	if f.result {
		head = "r"
	}
	return strings.Join(append([]string{head}, keys...), "\n")
}

// decodeFresh reads what encode wrote; a token is signed, so it holds
// what this server wrote.
func decodeFresh(s string) fresh {
	lines := strings.Split(s, "\n")
	f := fresh{result: lines[0] == "r"}
	for _, k := range lines[1:] {
		if f.columns == nil {
			f.columns = make(map[string]bool)
		}
		table, rest, _ := strings.Cut(k, "\x00")
		column, floor, ok := strings.Cut(rest, "\x00")
		k = freshKey(table, column)
		f.columns[k] = true
		if ok {
			if f.floors == nil {
				f.floors = make(map[string]string)
			}
			f.floors[k] = floor
		}
	}
	return f
}
