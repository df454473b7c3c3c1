package dbconn

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// SQLite text with a NUL byte. The pre-update hook hands over text as
// modernc reads it, up to its first NUL byte (libc.GoString): the public
// SQLitePreUpdateData gives no length, SQL cannot run inside the hook, and
// triggers that could record CAST(old.x AS BLOB) would be the host's
// schema, not llmtool's. A statement of llmtool's own reads such text
// exactly, as CAST(x AS BLOB), the text's bytes however many NULs it
// holds. So once the handler returned, the merged rows' text values are
// read again by the rows' identity (rowid, or primary key in a WITHOUT
// ROWID table):
//
//   - a row's values after the call in the call's own transaction, where
//     each row is as the call left it;
//   - its values before, which are the row as the call found it, as the
//     last commit left it, read on another connection (readLast): the
//     write holds SQLite's write lock, so nothing committed since it
//     began, and in WAL mode a reader sees the last commit while the
//     write goes on. Each read is a statement of its own, with no BEGIN
//     around them: every one sees that same last commit. Only in WAL mode (which sqlite.Open sets and
//     NewRegistry asks for), and only when the pool reserves read
//     connections (so one is there while the write holds its own): a
//     reader in another journal mode may wait for the writer, a :memory:
//     database has no other connection. There, text before the call stays
//     as the hook read it.
//
// A value read again replaces the hook's when its bytes differ, which is
// only ever the case for text with a NUL byte; nothing tells which text
// has one without reading it. What stays as the hook read it: a row's
// values between two changes of one call (Row.Steps), and a text key with
// a NUL byte in a WITHOUT ROWID table (the identity itself is cut, so the
// rows are merged and found by the cut key).
//
// The cost is a statement per row with text after the call, and one on
// another connection per row with text before it, each prepared once per
// connection: on a tracked one-row UPDATE (BenchmarkChangesetRatio) the
// second costs more, its read's WAL locks being system calls.

// exactText reads again the text values of set's rows (see above);
// mixed are the rows that not only UPDATEs changed.
func (w *WriteTx) exactText(ctx context.Context, set *changeset.Set, cols map[string]Columns, mixed map[int]bool) error {
	c := w.capture
	type rowText struct {
		r     *changeset.Row
		names []string
	}
	var before []rowText
	for i := range set.Rows {
		r := &set.Rows[i]
		if r.Op == "" {
			continue // inserted and deleted: nothing to read
		}
		// A column no UPDATE of the call set, in a row only UPDATEs
		// changed, is as it was, byte for byte: its text before is its
		// text after, read here.
		var same []string
		if r.Op == changeset.Update && !mixed[i] {
			same = textOf(r.Before, func(n string) bool {
				return string(r.Before[n]) == string(r.After[n]) && !w.Policy.assigned(r.Table, n)
			})
		}
		if err := c.reread(ctx, w.txQuerier(), r.Table, cols[r.Table], r.Key, r.After, textOf(r.After, nil), set); err != nil {
			return err
		}
		for _, n := range same {
			r.Before[n] = r.After[n]
		}
		if names := textOf(r.Before, func(n string) bool { return !slices.Contains(same, n) }); len(names) > 0 {
			before = append(before, rowText{r, names})
		}
	}
	if len(before) > 0 && c.walReads(ctx, w) {
		err := w.pool.readLast(ctx, func(q rowQuerier) error {
			for _, b := range before {
				if err := c.reread(ctx, q, b.r.Table, cols[b.r.Table], b.r.Key, b.r.Before, b.names, set); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for i := range set.Rows {
		r := &set.Rows[i]
		v := r.After
		if v == nil {
			v = r.Before
		}
		for k := range r.Key {
			if x, ok := v[k]; ok {
				r.Key[k] = x
			}
		}
	}
	return nil
}

// textStmts are the statements that read a row's text in a write's
// transaction, one per table and columns, each prepared once (Prepared):
// parsing one for each call would cost more than running it.
type textStmts struct {
	mu sync.Mutex
	m  map[string]*Prepared
}

// get returns the statement for query.
func (s *textStmts) get(query string) *Prepared {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.m[query]
	if p == nil {
		if s.m == nil {
			s.m = make(map[string]*Prepared)
		}
		p = &Prepared{Query: query}
		s.m[query] = p
	}
	return p
}

// Close closes the statements.
func (s *textStmts) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.m {
		p.Close()
	}
	s.m = nil
}

// txRows reads rows in a write's transaction on the pool's prepared
// statements.
type txRows struct{ w *WriteTx }

func (w *WriteTx) txQuerier() rowQuerier { return txRows{w} }

func (q txRows) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	// Preparing on the database takes one of its connections, which a
	// host that leaves llmtool no more than the writer's may not have
	// free: there, each call parses the statement.
	if cap(q.w.pool.idle) > 0 {
		if st, err := q.w.pool.text.get(query).In(ctx, q.w.pool.DB, q.w.Tx); err == nil {
			return st.QueryRowContext(ctx, args...)
		}
	}
	return q.w.Tx.QueryRowContext(ctx, query, args...)
}

// rowQuerier is what reread reads a row on.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// walReads reports whether another connection may read the state before
// the call: the database is in WAL mode and the pool reserves read
// connections. The journal mode is asked once per connection.
func (c *Capture) walReads(ctx context.Context, w *WriteTx) bool {
	if cap(w.pool.idle) == 0 {
		return false
	}
	if c.wal == 0 {
		var mode string
		c.wal = -1
		if w.Tx.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode) == nil && strings.EqualFold(mode, "wal") {
			c.wal = 1
		}
	}
	return c.wal > 0
}

// textOf returns the names of v's text values that keep, when not nil,
// keeps, in order.
func textOf(v changeset.Values, keep func(string) bool) []string {
	var names []string
	for n, raw := range v {
		if isText(raw) && (keep == nil || keep(n)) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// isText reports whether raw is text as EncodeSQLite writes it.
func isText(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '"' || bytes.HasPrefix(raw, []byte(`{"$text"`)))
}

// reread reads the text values names of v, a row of table as q sees
// it, and replaces those whose bytes differ.
func (c *Capture) reread(ctx context.Context, q rowQuerier, table string, cols Columns, key, v changeset.Values, names []string, set *changeset.Set) error {
	if len(names) == 0 {
		return nil
	}
	id := key
	if _, ok := v["rowid"]; ok && cols.HiddenRowID {
		id = changeset.Values{"rowid": v["rowid"]}
	}
	conds := make([]string, 0, len(id))
	args := make([]any, 0, len(id))
	for _, k := range slices.Sorted(maps.Keys(id)) {
		x, err := DecodeSQLite(id[k])
		if err != nil {
			return fmt.Errorf("llmtool: read again the text of a row of %s: %w", table, err)
		}
		conds, args = append(conds, sqlcheck.QuoteIdent(k)+" IS ?"), append(args, x)
	}
	sel := make([]string, len(names))
	for i, n := range names {
		sel[i] = "CAST(" + sqlcheck.QuoteIdent(n) + " AS BLOB)"
	}
	got := make([][]byte, len(names))
	dest := make([]any, len(names))
	for i := range got {
		dest[i] = &got[i]
	}
	err := q.QueryRowContext(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM `+sqlcheck.QuoteIdent(table)+` WHERE `+strings.Join(conds, " AND "), args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // a cut text key (see above)
	}
	if err != nil {
		return fmt.Errorf("llmtool: read again the text of a row of %s: %w", table, err)
	}
	for i, n := range names {
		raw, err := EncodeSQLite(string(got[i]), c.maxValue)
		if err != nil && set.NotUndoable == "" {
			set.NotUndoable = fmt.Sprintf("%s.%s: %v", table, n, err)
		}
		v[n] = raw
	}
	return nil
}
