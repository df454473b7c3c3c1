package llmtooltest

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// tableDump is a table's definition and rows, each row rendered as text.
type tableDump struct {
	sql  string
	rows []string
}

// queryer runs the dump's queries: the database, or on PostgreSQL a
// read-only snapshot of it.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// dump reads every table of the database but the engine's own and the
// ignored ones.
func (h *Harness) dump() (map[string]tableDump, error) {
	ctx := context.WithoutCancel(h.ctx)
	var q queryer = h.db
	var mode []any // the driver's query mode, as the first argument
	listing := `SELECT name, '"' || replace(name, '"', '""') || '"', sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`
	if h.engine == enginePostgres {
		// One snapshot for the listing and every table's rows.
		tx, err := h.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer tx.Rollback()
		q = tx
		// pgx's statement cache would fail SELECT * on a table whose
		// columns changed since it was last read ("cached plan must not
		// change result type"): the dump uses the simple protocol.
		mode = []any{pgx.QueryExecModeSimpleProtocol}
		listing = `SELECT name, quote_ident(nsp) || '.' || quote_ident(rel), def FROM (` + pgTables + `) AS t (name, nsp, rel, def)`
	}
	rows, err := q.QueryContext(ctx, listing, mode...)
	if err != nil {
		return nil, err
	}
	tables := make(map[string]tableDump)
	var names, idents []string
	for rows.Next() {
		var name, ident, def string
		if err := rows.Scan(&name, &ident, &def); err != nil {
			rows.Close()
			return nil, err
		}
		if !h.skip[name] {
			names = append(names, name)
			idents = append(idents, ident)
			tables[name] = tableDump{sql: def}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, name := range names {
		d := tables[name]
		if d.rows, err = dumpRows(ctx, q, idents[i], mode...); err != nil {
			return nil, fmt.Errorf("table %s: %w", name, err)
		}
		tables[name] = d
	}
	return tables, nil
}

// dumpRows renders the rows of a table, ident quoted for SQL, as
// "col=value, ..." lines, sorted. args are the query's arguments.
func dumpRows(ctx context.Context, q queryer, ident string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT * FROM `+ident, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		var b strings.Builder
		for i, v := range vals {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(cols[i])
			b.WriteByte('=')
			switch v := v.(type) {
			case nil:
				b.WriteString("NULL")
			case []byte:
				fmt.Fprintf(&b, "x'%x'", v)
			case string:
				fmt.Fprintf(&b, "%q", v)
			default:
				fmt.Fprint(&b, v)
			}
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out, rows.Err()
}

// diffDumps describes how after differs from before, or returns "".
func diffDumps(before, after map[string]tableDump) string {
	var b strings.Builder
	names := make([]string, 0, len(before)+len(after))
	for n := range before {
		names = append(names, n)
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		old, hadOld := before[n]
		cur, hasCur := after[n]
		switch {
		case !hadOld:
			fmt.Fprintf(&b, "table %s: created (%d rows)\n", n, len(cur.rows))
			continue
		case !hasCur:
			fmt.Fprintf(&b, "table %s: dropped (had %d rows)\n", n, len(old.rows))
			continue
		case old.sql != cur.sql:
			fmt.Fprintf(&b, "table %s: definition changed\n  - %s\n  + %s\n", n, old.sql, cur.sql)
		}
		removed, added := multisetDiff(old.rows, cur.rows)
		if len(removed)+len(added) == 0 {
			continue
		}
		fmt.Fprintf(&b, "table %s: %d rows removed, %d added (a changed row is both)\n", n, len(removed), len(added))
		for _, r := range removed {
			fmt.Fprintf(&b, "  - %s\n", r)
		}
		for _, r := range added {
			fmt.Fprintf(&b, "  + %s\n", r)
		}
	}
	return b.String()
}

// multisetDiff returns the lines only in a and only in b, both sorted
// inputs, counting duplicates.
func multisetDiff(a, b []string) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			i++
			j++
		case a[i] < b[j]:
			onlyA = append(onlyA, a[i])
			i++
		default:
			onlyB = append(onlyB, b[j])
			j++
		}
	}
	return append(onlyA, a[i:]...), append(onlyB, b[j:]...)
}
