package llmtool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/llmtool/llmtool/changeset"
)

// The checks that follow the data. An Entity with Table and Key has its
// checks run on the rows of its table that a write call changed, as the
// capture recorded them (changesets.go), whichever tool or statement
// changed them: so "a guard forgotten on one tool" is no hole for a
// tracked table. They run before commit, after the capture is read and
// before the preview shows the change, in a read snapshot of what is
// committed: the entities as they were before the call.

// rowCheckHooks plug the row checks into the write path (hooks.go) when
// tables are tracked.
func (r *Registry) rowCheckHooks() writeHooks {
	if r.tracked == nil {
		return writeHooks{}
	}
	return writeHooks{beforeCommit: []func(context.Context, *callState) error{
		func(ctx context.Context, cs *callState) error { return r.checkRows(ctx, cs) },
	}}
}

// rowCheck is an entity a write call changed through its row.
type rowCheck struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	System bool   `json:"system"` // deleted, or an update of one of its SystemColumns
}

type rowChecksIn struct {
	Tool string     `json:"tool"`
	Rows []rowCheck `json:"rows"`
}

// entityTables returns the declared entities that name a table, by the
// table's lower-case name.
func (r *Registry) entityTables() map[string]*Entity {
	var m map[string]*Entity
	for _, d := range r.entityMap() {
		if d.entity.Table != "" {
			if m == nil {
				m = make(map[string]*Entity)
			}
			m[strings.ToLower(d.entity.Table)] = d.entity
		}
	}
	return m
}

// checkRows runs the entity checks of the rows cs's run updated or
// deleted in entity tables, each entity once.
func (r *Registry) checkRows(ctx context.Context, cs *callState) error {
	if cs.changes == nil || len(cs.changes.Rows) == 0 {
		return nil
	}
	tables := r.entityTables()
	if tables == nil {
		return nil
	}
	var checks []rowCheck
	for _, row := range cs.changes.Rows {
		e := tables[strings.ToLower(row.Table)]
		if e == nil || row.Op == changeset.Insert || (e.System == nil && e.Protected == nil && e.MayChange == nil) {
			continue // an entity without checks (one declared for its words, say) has none to run
		}
		id, err := entityID(e, row.Before)
		if err != nil {
			return err
		}
		system := row.Op == changeset.Delete || slices.ContainsFunc(row.Changed(), func(c string) bool {
			return slices.ContainsFunc(e.SystemColumns, func(s string) bool { return strings.EqualFold(s, c) })
		})
		i := slices.IndexFunc(checks, func(c rowCheck) bool { return c.Kind == e.Kind && c.ID == id })
		if i < 0 {
			checks = append(checks, rowCheck{Kind: e.Kind, ID: id, System: system})
		} else {
			checks[i].System = checks[i].System || system
		}
	}
	if len(checks) == 0 {
		return nil
	}
	args, err := json.Marshal(rowChecksIn{Tool: cs.tool.spec.Name, Rows: checks})
	if err != nil {
		return err
	}
	var res Result
	_, _, err = r.exec(ctx, rowChecksTool, args, &prepared{traced: cs.traced}, &res)
	return err
}

// entityID is the ID of e's entity in a row's values: its Key column's
// value, a string as it is, a number in its JSON form. Column names match
// as SQL's unquoted names do, whatever their case (PostgreSQL's catalog
// holds noteId as noteid).
func entityID(e *Entity, v changeset.Values) (string, error) {
	raw, ok := v[e.Key]
	if !ok {
		for c, x := range v {
			if strings.EqualFold(c, e.Key) {
				raw, ok = x, true
				break
			}
		}
	}
	if !ok {
		return "", fmt.Errorf("llmtool: entity %s: table %s has no column %s (Entity.Key); name the column that holds the entity's ID", e.Kind, e.Table, e.Key)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	return string(raw), nil
}

// rowChecksTool runs the entity checks of the rows a write changed, in a
// read snapshot, in the stages and words of a tool's ref checks: system,
// protected, may change, each stage over every row before the next. An
// entity that did not exist before the call (Exists says so: a row the
// host deletes softly, say, which the call restores) has nothing to
// protect and is not checked. checkRows calls it directly; it is not
// registered, so no model can call it.
var rowChecksTool = Read("llmtool_row_checks", "Check the entities a write changed.", func(c *ReadCtx, in rowChecksIn) (struct{}, error) {
	tables := c.call.reg.entityMap()
	ents := make([]*Entity, 0, len(in.Rows))
	rows := in.Rows[:0]
	for _, x := range in.Rows {
		e := tables[x.Kind].entity
		ok, err := e.Exists(c, x.ID)
		if err != nil {
			return struct{}{}, fmt.Errorf("llmtool: entity %s %q: exists check: %w", e.Kind, x.ID, err)
		}
		if ok {
			ents, rows = append(ents, e), append(rows, x)
		}
	}
	in.Rows = rows
	for i, x := range in.Rows {
		if x.System {
			if err := ents[i].checkSystem(c, x.ID, ents[i].Key, in.Tool); err != nil {
				return struct{}{}, err
			}
		}
	}
	for i, x := range in.Rows {
		if err := ents[i].checkProtected(c, x.ID, ents[i].Key); err != nil {
			return struct{}{}, err
		}
	}
	for i, x := range in.Rows {
		if err := ents[i].checkMay(c, x.ID, ents[i].Key, true); err != nil {
			return struct{}{}, err
		}
	}
	return struct{}{}, nil
})
