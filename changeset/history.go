package changeset

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Entry is one committed write call in the history: its changeset and
// who made it, when, where.
type Entry struct {
	Set
	Tool         string    `json:"tool"`
	Principal    string    `json:"principal,omitempty"`
	Tenant       string    `json:"tenant,omitempty"`
	Conversation string    `json:"conversation,omitempty"`
	Time         time.Time `json:"time"`
	// UndoOf is the entry this one undid (it was a call of
	// undo_changes); 0 otherwise.
	UndoOf int64 `json:"undoOf,omitempty"`
	// UndoneBy is the entry that undid this one; 0 while it stands.
	UndoneBy int64 `json:"undoneBy,omitempty"`
}

// Filter selects history entries for List. Tenant always applies (""
// is the default tenant); the other fields apply when set.
type Filter struct {
	Tenant       string
	Principal    string
	Conversation string
	// IDs selects these entries only.
	IDs []int64
	// After selects entries newer than this ID.
	After int64
	// Table, with Key, selects the entries that changed one row (an
	// entity): Key holds the row's key columns as JSON, as in Row.Key,
	// such as {"id": json.RawMessage("7")}. Table alone selects the
	// entries that changed the table.
	Table string
	Key   Values
	// Limit bounds the entries returned, newest first; zero means 100.
	Limit int
}

// Queryer is what List reads from: a *sql.DB, *sql.Conn or *sql.Tx.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// List returns the history entries f selects, newest first. The history
// is the table llmtool_changes in the host's database; a registry with
// tracked tables (llmtool.Options.Changesets) creates it.
func List(ctx context.Context, q Queryer, f Filter) ([]Entry, error) {
	where := []string{"tenant = $1"}
	args := []any{f.Tenant}
	if f.Tenant != "" {
		where = append(where, "tenant <> ''") // the tenant index holds only these
	}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Principal != "" {
		add("principal = $%d", f.Principal)
	}
	if f.Conversation != "" {
		add("conversation = $%d", f.Conversation)
	}
	if f.After > 0 {
		add("id > $%d", f.After)
	}
	if len(f.IDs) > 0 {
		ids := make([]string, len(f.IDs))
		for i, id := range f.IDs {
			ids[i] = fmt.Sprint(id)
		}
		where = append(where, "id IN ("+strings.Join(ids, ", ")+")")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := q.QueryContext(ctx, `SELECT id, tool, principal, tenant, conversation, created_at, rows, not_undoable, undo_of, undone_by
FROM llmtool_changes WHERE `+strings.Join(where, " AND ")+` ORDER BY id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("llmtool: list changesets: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() && len(out) < limit {
		var e Entry
		var created int64
		var raw string
		var undoOf, undoneBy sql.NullInt64
		if err := rows.Scan(&e.ID, &e.Tool, &e.Principal, &e.Tenant, &e.Conversation, &created, &raw, &e.NotUndoable, &undoOf, &undoneBy); err != nil {
			return nil, fmt.Errorf("llmtool: list changesets: %w", err)
		}
		if err := json.Unmarshal([]byte(raw), &e.Rows); err != nil {
			return nil, fmt.Errorf("llmtool: changeset %d: %w", e.ID, err)
		}
		if !f.matches(&e.Set) {
			continue
		}
		e.Time, e.UndoOf, e.UndoneBy = time.UnixMilli(created), undoOf.Int64, undoneBy.Int64
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("llmtool: list changesets: %w", err)
	}
	return out, nil
}

// matches applies the filter's Table and Key.
func (f *Filter) matches(s *Set) bool {
	if f.Table == "" {
		return true
	}
	for _, r := range s.Rows {
		if !strings.EqualFold(r.Table, f.Table) {
			continue
		}
		same := true
		for k, v := range f.Key {
			if string(r.Key[k]) != string(v) {
				same = false
			}
		}
		if same {
			return true
		}
	}
	return false
}
