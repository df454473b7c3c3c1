package dbconn

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/jsonenc"
)

// Capture records the rows a write call changes in the tracked tables:
// on SQLite through modernc's public pre-update hook (sqlite.HookRegisterer),
// which sees every row change, those of triggers and foreign-key cascades
// included, with the values before and after; on PostgreSQL through the
// row triggers the registry installs (capture_pg.go).
type Capture struct {
	track    map[string]bool // lower-case names of the tracked tables
	maxValue int

	// What the connection knows of the tables: their columns at schema
	// version schema, and whether an untracked table is a virtual
	// table's shadow (which a table keeps for its life).
	schema  int64
	cols    map[string]Columns
	shadows map[string]bool
	wal     int8 // the database is in WAL mode: 1, it is not: -1, not asked yet: 0 (capture_text.go)

	mu        sync.Mutex
	on        bool
	changes   []rawChange
	untracked []string // the host tables changed that are not tracked
}

// rawChange is one row change as the hook saw it: values by column
// position, names resolved after the handler returned.
type rawChange struct {
	table            string
	op               changeset.Op
	oldRowID, rowID  int64
	oldVals, newVals []any
}

// NewCapture returns a capture of the given tables, or nil if there are
// none.
func NewCapture(tables []string, maxValue int) *Capture {
	if len(tables) == 0 {
		return nil
	}
	c := &Capture{track: make(map[string]bool), maxValue: maxValue}
	if c.maxValue <= 0 {
		c.maxValue = 64 << 10
	}
	for _, t := range tables {
		c.track[strings.ToLower(t)] = true
	}
	return c
}

// Tracked reports whether table is tracked.
func (c *Capture) Tracked(table string) bool { return c != nil && c.track[strings.ToLower(table)] }

// start begins recording a call's changes.
func (c *Capture) start() {
	c.mu.Lock()
	c.on, c.changes, c.untracked = true, nil, nil
	c.mu.Unlock()
}

// stop ends recording and returns what was recorded.
func (c *Capture) stop() ([]rawChange, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	ch, u := c.changes, c.untracked
	c.changes, c.untracked = nil, nil
	return ch, u
}

// fresh empties what c knows of the tables if the schema changed since:
// the handler's DDL, or another connection's. version is PRAGMA
// schema_version in the call's transaction.
func (c *Capture) fresh(ctx context.Context, version *sql.Stmt) error {
	var v int64
	if err := version.QueryRowContext(ctx).Scan(&v); err != nil {
		return err
	}
	if c.cols == nil || v != c.schema {
		c.schema, c.cols = v, make(map[string]Columns)
	}
	return nil
}

// hook is the connection's pre-update hook.
func (c *Capture) hook(d sqlite.SQLitePreUpdateData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on || own(d.TableName) || strings.HasPrefix(strings.ToLower(d.TableName), "sqlite_") {
		return
	}
	if !c.track[strings.ToLower(d.TableName)] {
		if !slices.Contains(c.untracked, d.TableName) {
			c.untracked = append(c.untracked, d.TableName)
		}
		return
	}
	ch := rawChange{table: d.TableName, oldRowID: d.OldRowID, rowID: d.NewRowID}
	n := d.Count()
	switch d.Op {
	case sqlite3.SQLITE_INSERT:
		ch.op = changeset.Insert
	case sqlite3.SQLITE_DELETE:
		ch.op, ch.rowID = changeset.Delete, d.OldRowID
	default:
		ch.op = changeset.Update
	}
	if ch.op != changeset.Insert {
		ch.oldVals = make([]any, n)
		_ = d.Old(ch.oldVals...)
	}
	if ch.op != changeset.Delete {
		ch.newVals = make([]any, n)
		_ = d.New(ch.newVals...)
	}
	c.changes = append(c.changes, ch)
}

// uninstallHook removes the pre-update hook from conn.
func uninstallHook(conn *sql.Conn) {
	_ = conn.Raw(func(dc any) error {
		if h, ok := dc.(sqlite.HookRegisterer); ok {
			h.RegisterPreUpdateHook(nil)
		}
		return nil
	})
}

// Columns is what the registry knows of a tracked table: its columns in
// order, the positions of its primary key's (none: the rowid is the
// key), and whether it has a rowid no column names (a rowid table whose
// key is not an INTEGER PRIMARY KEY), which changesets record as the
// column "rowid" so that undo puts a row back where it was.
type Columns struct {
	Names       []string
	Key         []int
	HiddenRowID bool
}

// SQLiteColumns reads table's columns with PRAGMA table_info and
// table_list.
func SQLiteColumns(ctx context.Context, q Querier, table string) (Columns, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, pk, upper(type) FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return Columns{}, err
	}
	defer rows.Close()
	var cols Columns
	type pk struct{ pos, order int }
	var pks []pk
	intKey := false
	for rows.Next() {
		var name, typ string
		var order int
		if err := rows.Scan(&name, &order, &typ); err != nil {
			return Columns{}, err
		}
		if order > 0 {
			pks = append(pks, pk{len(cols.Names), order})
			intKey = typ == "INTEGER"
		}
		cols.Names = append(cols.Names, name)
	}
	if err := rows.Err(); err != nil {
		return Columns{}, err
	}
	if len(cols.Names) == 0 {
		return Columns{}, fmt.Errorf("llmtool: tracked table %s does not exist", table)
	}
	cols.Key = make([]int, len(pks))
	for _, p := range pks {
		cols.Key[p.order-1] = p.pos
	}
	var withoutRowID bool
	if err := q.QueryRowContext(ctx, `SELECT wr FROM pragma_table_list(?)`, table).Scan(&withoutRowID); err != nil {
		return Columns{}, err
	}
	cols.HiddenRowID = !withoutRowID && len(pks) > 0 && !(len(pks) == 1 && intKey)
	return cols, nil
}

// shadow reports whether table is a virtual table's shadow table (the
// storage of a full-text index, say), which the host's triggers keep in
// step with its tables.
func shadow(ctx context.Context, q Querier, table string) (bool, error) {
	var typ string
	if err := q.QueryRowContext(ctx, `SELECT type FROM pragma_table_list(?)`, table).Scan(&typ); err != nil {
		return false, err
	}
	return typ == "shadow", nil
}

// Changes ends the capture of w's call and returns its changeset: the
// recorded changes with their columns named and merged per row. Call it
// after the handler, in ModeOwn (SQLite reads the tables' columns), as
// the connecting user (PostgreSQL reads llmtool_capture). On PostgreSQL
// a call whose statements named no tracked table may leave the reading
// to the commit's check (see pgChanges); exact reads in every case, for
// a call that will not commit (a preview) or that the check failed.
func (w *WriteTx) Changes(ctx context.Context, exact bool) (*changeset.Set, error) {
	if w.pg != nil {
		return w.pgChanges(ctx, exact) // capture_pg.go
	}
	if w.capture == nil {
		return nil, nil
	}
	raw, untracked := w.capture.stop()
	set := &changeset.Set{}
	if len(raw) == 0 && len(untracked) == 0 && w.Policy.schemaChange() == "" {
		return nil, nil
	}
	if len(raw) > 0 {
		version, err := w.pool.version.In(ctx, w.pool.DB, w.Tx)
		if err != nil {
			return nil, err
		}
		if err := w.capture.fresh(ctx, version); err != nil {
			return nil, err
		}
	}
	if w.capture.shadows == nil {
		w.capture.shadows = make(map[string]bool)
	}
	for _, t := range untracked {
		sh, ok := w.capture.shadows[t]
		if !ok {
			var err error
			if sh, err = shadow(ctx, w.Tx, t); err != nil {
				return nil, err
			}
			w.capture.shadows[t] = sh
		}
		if !sh {
			set.NotUndoable = fmt.Sprintf("it changed table %s, which is not tracked", t)
			break
		}
	}
	if d := w.Policy.schemaChange(); d != "" && set.NotUndoable == "" {
		set.NotUndoable = "it changed the schema (" + d + ")"
	}
	if len(raw) == 0 { // no tracked row: nothing to name, merge or read again
		if set.NotUndoable == "" {
			return nil, nil
		}
		return set, nil
	}
	cols := w.capture.cols
	m := merger{set: set, at: make(map[string]int)}
	for _, ch := range raw {
		c, ok := cols[ch.table]
		if !ok {
			var err error
			if c, err = SQLiteColumns(ctx, w.Tx, ch.table); err != nil {
				return nil, err
			}
			cols[ch.table] = c
		}
		if n := max(len(ch.oldVals), len(ch.newVals)); n != len(c.Names) {
			return nil, fmt.Errorf("llmtool: table %s has %d columns but its rows %d (generated columns are not supported in tracked tables)", ch.table, len(c.Names), n)
		}
		before, bk := w.capture.values(ch.table, c, ch.oldVals, ch.oldRowID, set)
		after, ak := w.capture.values(ch.table, c, ch.newVals, ch.rowID, set)
		m.add(ch.table, ch.op, before, after, bk, ak)
	}
	// Text is read again before rows that end as they began are dropped:
	// a text cut short may look unchanged.
	if err := w.exactText(ctx, set, cols, m.mixed); err != nil { // capture_text.go
		return nil, err
	}
	m.finish()
	if len(set.Rows) == 0 && set.NotUndoable == "" {
		return nil, nil
	}
	return set, nil
}

// values names a row's values and returns them with its key; nil for a
// row that does not exist (vals nil).
func (c *Capture) values(table string, cols Columns, vals []any, rowID int64, set *changeset.Set) (changeset.Values, changeset.Values) {
	if vals == nil {
		return nil, nil
	}
	v := make(changeset.Values, len(vals))
	for i, x := range vals {
		raw, err := EncodeSQLite(x, c.maxValue)
		if err != nil && set.NotUndoable == "" {
			set.NotUndoable = fmt.Sprintf("%s.%s: %v", table, cols.Names[i], err)
		}
		v[cols.Names[i]] = raw
	}
	if cols.HiddenRowID {
		v["rowid"] = json.RawMessage(strconv.FormatInt(rowID, 10))
	}
	key := make(changeset.Values, max(len(cols.Key), 1))
	if len(cols.Key) == 0 {
		key["rowid"] = json.RawMessage(strconv.FormatInt(rowID, 10))
	}
	for _, p := range cols.Key {
		key[cols.Names[p]] = v[cols.Names[p]]
	}
	return v, key
}

// merger merges a call's changes per row.
type merger struct {
	set   *changeset.Set
	at    map[string]int // table and key → index in set.Rows
	seq   int            // the row changes merged so far
	mixed map[int]bool   // the rows in set.Rows an insert or a delete changed too, not UPDATEs only
}

// rowKey is a row's identity in at: its table and its key's columns, in
// order, with their values as encoded (JSON, so no NUL byte in them).
func rowKey(table string, key changeset.Values) string {
	b := append(make([]byte, 0, 64), table...)
	for _, c := range slices.Sorted(maps.Keys(key)) {
		b = append(append(append(append(b, 0), c...), 0), key[c]...)
	}
	return string(b)
}

// add merges one change. An update that changed the row's key is a
// delete of the old key and an insert of the new.
func (m *merger) add(table string, op changeset.Op, before, after, bk, ak changeset.Values) {
	if op == changeset.Update && rowKey(table, bk) != rowKey(table, ak) {
		m.add(table, changeset.Delete, before, nil, bk, nil)
		m.add(table, changeset.Insert, nil, after, nil, ak)
		return
	}
	key := ak
	if key == nil {
		key = bk
	}
	k := rowKey(table, key)
	i, seen := m.at[k]
	seq := m.seq
	m.seq++
	if !seen {
		i = len(m.set.Rows)
	}
	if op != changeset.Update {
		if m.mixed == nil {
			m.mixed = make(map[int]bool)
		}
		m.mixed[i] = true
	}
	if !seen {
		m.at[k] = i
		m.set.Rows = append(m.set.Rows, changeset.Row{Table: table, Op: op, Key: key, Before: before, After: after,
			Steps: []changeset.Step{{Seq: seq}}})
		return
	}
	r := &m.set.Rows[i]
	r.Steps = append(r.Steps, changeset.Step{Seq: seq, Before: before})
	switch {
	case op == changeset.Delete && r.Op == changeset.Insert:
		r.Op = "" // inserted and deleted: nothing
	case op == changeset.Delete:
		r.Op, r.After = changeset.Delete, nil
	case op == changeset.Insert && r.Op == changeset.Delete:
		r.Op, r.After = changeset.Update, after
	case op == changeset.Insert && r.Op == "":
		r.Op, r.After = changeset.Insert, after
	default:
		r.After = after
	}
}

// finish drops rows that end as they began, and the rows' steps unless
// undo needs them.
//
// Undo sets the rows back one statement each, and the engines check a
// UNIQUE constraint at each row (PostgreSQL's NOT DEFERRABLE ones too,
// and SQLite's cannot be deferred). The reverse of the order in which
// the call changed the rows is one the database accepts, as each state
// on the way back is one it accepted forward; merged rows keep that
// order while each row changed once. A row changed more than once can
// have passed through a value that let another row take its old one (a
// swap: s='tmp' on row 3, s='x' on row 4, s='y' on row 3); setting such
// rows back one merged row at a time collides whatever the order, so the
// steps are kept and undone last first. Kept only then: when a row
// changed more than once and one row's changed value after the call is
// another's before it (a value moved), so the common call stores nothing
// more.
func (m *merger) finish() {
	m.set.Rows = slicesDelete(m.set.Rows, func(r changeset.Row) bool {
		return r.Op == "" || (r.Op == changeset.Update && len(r.Changed()) == 0)
	})
	again := slices.ContainsFunc(m.set.Rows, func(r changeset.Row) bool { return len(r.Steps) > 1 })
	if again && m.moved() {
		return
	}
	for i := range m.set.Rows {
		m.set.Rows[i].Steps = nil
	}
}

// moved reports whether a value some row held before the call is one
// that another row of its table was changed to.
func (m *merger) moved() bool {
	held := make(map[string]int) // table, column, value → the row that held it, -1 for several
	for i, r := range m.set.Rows {
		for c, v := range r.Before {
			k, at := r.Table+"\x00"+c+"\x00"+string(v), i
			if _, dup := held[k]; dup {
				at = -1
			}
			held[k] = at
		}
	}
	for i, r := range m.set.Rows {
		for c, v := range r.After {
			if r.Before != nil && string(r.Before[c]) == string(v) {
				continue
			}
			if j, ok := held[r.Table+"\x00"+c+"\x00"+string(v)]; ok && j != i {
				return true
			}
		}
	}
	return false
}

func slicesDelete(rows []changeset.Row, drop func(changeset.Row) bool) []changeset.Row {
	out := rows[:0]
	for _, r := range rows {
		if !drop(r) {
			out = append(out, r)
		}
	}
	return out
}

// errTooLarge marks a value not recorded because of its size.
var errTooLarge = errors.New("value larger than the limit, not recorded")

// EncodeSQLite encodes a SQLite value as a changeset value: an integer as
// a JSON integer, a real with a fraction or exponent, text as a string
// (text that is not valid UTF-8 as {"$text": base64}, its bytes), a blob
// as {"$bytes": base64}. A text or blob over maxValue bytes is
// {"$omitted": size}, with an error; so is a real JSON cannot hold
// (NaN, ±Inf).
func EncodeSQLite(v any, maxValue int) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case int64:
		return json.RawMessage(strconv.FormatInt(x, 10)), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return json.RawMessage(`{"$omitted":8}`), fmt.Errorf("real %v cannot be recorded", x)
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return json.RawMessage(s), nil
	case string:
		if len(x) > maxValue {
			return omitted(len(x)), errTooLarge
		}
		if !utf8.ValidString(x) {
			// A JSON string holds UTF-8 only (encoding/json would
			// write U+FFFD for each bad byte): the bytes go as a
			// blob's do, tagged as text so that undo binds a string.
			return json.RawMessage(`{"$text":"` + base64.StdEncoding.EncodeToString([]byte(x)) + `"}`), nil
		}
		return json.RawMessage(jsonenc.AppendString(nil, x)), nil
	case []byte:
		if len(x) > maxValue {
			return omitted(len(x)), errTooLarge
		}
		return json.RawMessage(`{"$bytes":"` + base64.StdEncoding.EncodeToString(x) + `"}`), nil
	case bool: // not from SQLite, but from a driver that converts
		if x {
			return json.RawMessage("1"), nil
		}
		return json.RawMessage("0"), nil
	}
	return nil, fmt.Errorf("llmtool: a SQLite value of type %T", v)
}

func omitted(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"$omitted":%d}`, n))
}

// DecodeSQLite is EncodeSQLite's inverse: the value to bind to write raw
// back.
func DecodeSQLite(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, nil
	case raw[0] == '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case raw[0] == '{':
		var special struct {
			Bytes   *string `json:"$bytes"`
			Text    *string `json:"$text"`
			Omitted *int64  `json:"$omitted"`
		}
		if err := json.Unmarshal(raw, &special); err != nil {
			return nil, err
		}
		switch {
		case special.Text != nil:
			b, err := base64.StdEncoding.DecodeString(*special.Text)
			return string(b), err // a string binds as TEXT, byte for byte
		case special.Bytes == nil:
			return nil, errors.New("a value that was not recorded")
		}
		return base64.StdEncoding.DecodeString(*special.Bytes)
	case bytes.ContainsAny(raw, ".eE"):
		return strconv.ParseFloat(string(raw), 64)
	}
	return strconv.ParseInt(string(raw), 10, 64)
}
