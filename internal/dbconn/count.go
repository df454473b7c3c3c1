package dbconn

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Counting what a write run changed, per table, as the database saw it:
// the one count behind a preview's per-table figures
// (approval.Preview.Tables). A statement's RowsAffected cannot be that
// count: a prepared statement's rows, a trigger's and a foreign key's
// cascade never pass through the statement that the handler ran. So on
// SQLite the connection's pre-update hook counts every row change, and on
// PostgreSQL the server's own count of the session's row changes
// (pg_stat_xact_user_tables) is read before and after the handler. (That
// count runs on past the transaction until the session reports it, which
// it does only between transactions, so the difference of two readings in
// one transaction is the transaction's.)

// TableCount is the rows a write run changed in one table.
type TableCount struct {
	Table                      string
	Inserted, Updated, Deleted int64
}

// rowHook is a SQLite write connection's pre-update hook: the capture of
// the tracked tables, when there are some, and a run's count, when it
// asked for one (CountChanges). It is installed when the connection is
// opened for tracking, or on the first run that counts, and stays for the
// connection's life in the registry.
type rowHook struct {
	capture *Capture // nil when no table is tracked

	mu       sync.Mutex
	counting bool
	counts   map[string]*TableCount
	shadows  map[string]bool // tables known to be (true) or not to be a virtual table's shadow
}

// preUpdate is the hook SQLite calls before each row change.
func (h *rowHook) preUpdate(d sqlite.SQLitePreUpdateData) {
	if h.capture != nil {
		h.capture.hook(d)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.counting || own(d.TableName) || strings.HasPrefix(strings.ToLower(d.TableName), "sqlite_") {
		return
	}
	c := h.counts[d.TableName]
	if c == nil {
		c = &TableCount{Table: d.TableName}
		h.counts[d.TableName] = c
	}
	switch d.Op {
	case sqlite3.SQLITE_INSERT:
		c.Inserted++
	case sqlite3.SQLITE_DELETE:
		c.Deleted++
	default:
		c.Updated++
	}
}

// installRowHook puts h on conn (SQLite).
func installRowHook(conn *sql.Conn, h *rowHook) error {
	return conn.Raw(func(dc any) error {
		r, ok := dc.(sqlite.HookRegisterer)
		if !ok {
			return fmt.Errorf("llmtool: this SQLite connection (%T) offers no pre-update hook (sqlite.HookRegisterer) to count or capture a write's changes with; open it with modernc.org/sqlite", dc)
		}
		r.RegisterPreUpdateHook(h.preUpdate)
		return nil
	})
}

// CountChanges makes w's run count the rows it changes, per table, for
// Counts. Call it after BEGIN, before the handler runs.
func (w *WriteTx) CountChanges(ctx context.Context) error {
	if w.wc == nil {
		base, err := w.pgRead(ctx)
		if err != nil {
			return err
		}
		w.pgBase = make(map[string]TableCount, len(base))
		for _, c := range base {
			w.pgBase[c.Table] = c
		}
		return nil
	}
	if w.wc.hook == nil {
		h := &rowHook{}
		if err := installRowHook(w.Conn, h); err != nil {
			return err
		}
		w.wc.hook = h
	}
	h := w.wc.hook
	h.mu.Lock()
	h.counting, h.counts = true, make(map[string]*TableCount)
	h.mu.Unlock()
	return nil
}

// pgCounts reads the session's row changes per table from the server's
// statistics, which count every row changed (a trigger's and a cascade's
// too), llmtool's tables left out.
const pgCounts = `SELECT CASE WHEN schemaname = current_schema() THEN relname ELSE schemaname || '.' || relname END,
	n_tup_ins, n_tup_upd, n_tup_del
FROM pg_stat_xact_user_tables
WHERE (n_tup_ins > 0 OR n_tup_upd > 0 OR n_tup_del > 0) AND lower(relname) NOT LIKE 'llmtool\_%'
ORDER BY 1`

// Counts returns the rows w's run changed, per table, in the order of the
// tables' names, leaving out llmtool's own tables and, on SQLite, the
// shadow tables that store a virtual table (a full-text index, say), which
// the host's triggers keep in step. On SQLite it ends the count that
// CountChanges began. Call it after the handler, in ModeOwn, as the
// connecting user.
func (w *WriteTx) Counts(ctx context.Context) ([]TableCount, error) {
	if w.wc == nil {
		return w.pgCounts(ctx)
	}
	h := w.wc.hook
	if h == nil {
		return nil, nil
	}
	h.mu.Lock()
	counts := h.counts
	h.counting, h.counts = false, nil
	if h.shadows == nil {
		h.shadows = make(map[string]bool)
	}
	h.mu.Unlock()
	out := make([]TableCount, 0, len(counts))
	for name, c := range counts {
		sh, ok := h.shadows[name]
		if !ok {
			var err error
			if sh, err = shadow(ctx, w.Tx, name); err != nil {
				return nil, err
			}
			h.shadows[name] = sh
		}
		if !sh {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b TableCount) int { return strings.Compare(a.Table, b.Table) })
	return out, nil
}

// pgCounts is Counts on PostgreSQL: the reading now less the one
// CountChanges took.
func (w *WriteTx) pgCounts(ctx context.Context) ([]TableCount, error) {
	now, err := w.pgRead(ctx)
	if err != nil {
		return nil, err
	}
	out := now[:0]
	for _, c := range now {
		b := w.pgBase[c.Table]
		c.Inserted, c.Updated, c.Deleted = c.Inserted-b.Inserted, c.Updated-b.Updated, c.Deleted-b.Deleted
		if c.Inserted != 0 || c.Updated != 0 || c.Deleted != 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// pgRead reads the session's row changes per table (pgCounts).
func (w *WriteTx) pgRead(ctx context.Context) ([]TableCount, error) {
	rows, err := w.Tx.QueryContext(ctx, pgCounts)
	if err != nil {
		return nil, fmt.Errorf("llmtool: count the rows the call changed: %w", err)
	}
	defer rows.Close()
	var out []TableCount
	for rows.Next() {
		var c TableCount
		if err := rows.Scan(&c.Table, &c.Inserted, &c.Updated, &c.Deleted); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
