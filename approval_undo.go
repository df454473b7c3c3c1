package llmtool

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
)

// The undo's approval. undo_changes makes the inverse of earlier changes:
// undoing a note's creation deletes the note. Where a tenant requires
// approval of destructive tools (Tenants().SetApproval(ctx, tenant, "",
// true)), the tool that deletes the note asks, so the undo that deletes
// rows asks too, and an undo that only puts rows back or sets them back
// does not, as the tools that insert or update rows do not. Whether an
// undo deletes rows is known once it ran, so its call previews as
// previewIfDeletes: a run that deleted nothing commits; one that deleted
// rows is rolled back and becomes a request (approval.go), run twice and
// approved as any. A tenant's setting for undo_changes itself
// (SetApproval(ctx, tenant, "undo_changes", on)) decides instead.

// isUndoTool reports whether t is the built-in undo_changes.
func isUndoTool(t *Tool) bool { return t.spec.Module == "changesets" && t.spec.Name == undoTool }

// deletesRows reports whether the run of pv deleted rows: a statement
// said so, or its changeset holds a deleted row (a cascade's, say).
func deletesRows(pv *approval.Preview) bool {
	for _, c := range pv.Tables {
		if c.Deleted > 0 {
			return true
		}
	}
	return pv.Changeset != nil && slices.ContainsFunc(pv.Changeset.Rows, func(r changeset.Row) bool { return r.Op == changeset.Delete })
}

// describeUndo says what undoing entries does, for the person who
// approves it: `Undo change 5 of create_note: delete 1 row of notes`.
func describeUndo(entries []changeset.Entry) string {
	ids := make([]int64, len(entries))
	var tools []string
	type count struct {
		table string
		n     int
	}
	actions := map[changeset.Op][]count{}
	for i, e := range entries {
		ids[i] = e.ID
		if !slices.Contains(tools, e.Tool) {
			tools = append(tools, e.Tool)
		}
		for _, r := range e.Rows {
			cs := actions[r.Op]
			j := slices.IndexFunc(cs, func(c count) bool { return c.table == r.Table })
			if j < 0 {
				j = len(cs)
				cs = append(cs, count{table: r.Table})
			}
			cs[j].n++
			actions[r.Op] = cs
		}
	}
	s := "Undo change"
	if len(ids) != 1 {
		s += "s"
	}
	s += " " + joinIDs(ids)
	if len(tools) > 0 {
		s += " of " + strings.Join(tools, ", ")
	}
	var parts []string
	for _, a := range []struct {
		op   changeset.Op
		verb string
	}{{changeset.Insert, "delete"}, {changeset.Delete, "put back"}, {changeset.Update, "set back"}} {
		var what []string
		for _, c := range actions[a.op] {
			rows := "rows"
			if c.n == 1 {
				rows = "row"
			}
			what = append(what, fmt.Sprintf("%d %s of %s", c.n, rows, c.table))
		}
		if len(what) > 0 {
			parts = append(parts, a.verb+" "+strings.Join(what, " and "))
		}
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, "; ")
	}
	return s
}
