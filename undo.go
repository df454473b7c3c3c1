package llmtool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// The built-in tools of Options.Changesets.Tools: undo_changes applies the
// inverse of recorded changesets in one write call, so it runs as any
// write does (principal, tenant, writes switch, approval, audit) and is
// itself recorded (undoing it redoes); list_changes shows the history.

const (
	undoTool        = "undo_changes"
	listChangesTool = "list_changes"
)

type undoIn struct {
	ID    int64  `json:"id,omitempty" desc:"The change to undo: the changeset id a write reported. Leave out to undo this conversation's last change."`
	Since *int64 `json:"since,omitempty" desc:"Undo every change of this conversation made after the change with this id, newest first (0: all of them)."`
}

type undoOut struct {
	Undone []int64 `json:"undone"`
}

func (r *Registry) newUndoTool() *Tool {
	t := Write(undoTool, "Undo changes made earlier: this conversation's last change, one change by its id, or this conversation's changes since one. Refused, with nothing undone, if a row changed since.",
		func(c *WriteCtx, in undoIn) (undoOut, error) {
			return c.call.undo(c, in)
		}, Summary("Undo earlier changes"), FriendlyName("Undo changes"), Scopes(r.tracked.cfg.Scopes...))
	t.spec.Module = "changesets"
	return t
}

// undo undoes the entries in selects, newest first, or fails with nothing
// undone.
func (cs *callState) undo(c *WriteCtx, in undoIn) (undoOut, error) {
	f := changeset.Filter{Tenant: TenantFrom(c)}
	switch {
	case in.ID > 0:
		f.IDs = []int64{in.ID}
	case cs.conversation == "":
		return undoOut{}, InvalidArgs("This call belongs to no conversation, so say which change to undo.").Next("Send id: a changeset id from a write's result or from list_changes.")
	case in.Since != nil:
		f.Conversation, f.After, f.Limit = cs.conversation, *in.Since, 1<<30
	default:
		f.Conversation, f.Limit = cs.conversation, 1
	}
	entries, err := cs.ownList(c, f)
	if err != nil {
		return undoOut{}, err
	}
	if len(entries) == 0 {
		if in.ID > 0 {
			return undoOut{}, NotFound("There is no change %d in this workspace.", in.ID).Next("Call list_changes for the ids of recent changes.")
		}
		return undoOut{}, NotFound("This conversation has made no changes to undo.").Next("Call list_changes with all set to see the workspace's changes.")
	}
	// Pairs within the range cancel out: a change undone by a later one
	// in the range, and that undo.
	inRange := make(map[int64]bool, len(entries))
	for _, e := range entries {
		inRange[e.ID] = true
	}
	if cs.reg.tx.Engine == engine.SQLite {
		// Rows come back in the inverse order they went, so a child may
		// return before its parent: check foreign keys at commit.
		if err := cs.ownExec(c, `PRAGMA defer_foreign_keys = ON`); err != nil {
			return undoOut{}, err
		}
	}
	me := principalID(c)
	out := undoOut{Undone: []int64{}}
	var undone []changeset.Entry // for the person who approves it (approval_undo.go)
	u := undoer{c: c, sqlite: cs.reg.tx.Engine == engine.SQLite}
	for _, e := range entries {
		if in.Since != nil && (e.UndoneBy != 0 || (e.UndoOf != 0 && inRange[e.UndoOf])) {
			continue
		}
		if e.UndoneBy != 0 {
			return undoOut{}, Conflict("Change %d was already undone by change %d.", e.ID, e.UndoneBy).Next(fmt.Sprintf("Undo change %d to redo it.", e.UndoneBy))
		}
		if e.Principal != me {
			if err := mayUndo(c, cs.reg.tracked.cfg.MayUndo, e); err != nil {
				return undoOut{}, err
			}
		}
		if e.NotUndoable != "" {
			return undoOut{}, Conflict("Change %d cannot be undone: %s.", e.ID, e.NotUndoable)
		}
		if err := u.entry(e); err != nil {
			return undoOut{}, err
		}
		if len(u.conflicts) > 0 {
			break
		}
		out.Undone = append(out.Undone, e.ID)
		cs.undid = append(cs.undid, e.ID)
		undone = append(undone, e)
	}
	if len(u.conflicts) > 0 {
		cs.undid = nil
		return undoOut{}, Conflict("Nothing was undone, because %d row(s) changed since: %s.", len(u.conflicts), strings.Join(u.conflicts, "; ")).
			Next("Tell the user which rows changed, and ask what to do.")
	}
	c.Describe("%s", describeUndo(undone))
	return out, nil
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

// undoer restores the rows of changesets to their values before, and
// collects the rows that changed since.
type undoer struct {
	c         *WriteCtx
	sqlite    bool
	conflicts []string
	pgCols    map[string]*pgColumns // PostgreSQL: the tables' columns (undo_pg.go)
}

// maxRestorePasses bounds the passes that set rows back while the host's
// triggers, which fire on the undo's own statements, change them again.
const maxRestorePasses = 3

// entry undoes one changeset. Every row must be as the change left it,
// or nothing is restored and the rows that differ are conflicts. Each row
// is then set to its values before the change (inserted again, set back,
// or deleted), in the reverse order of the change; since the host's
// triggers fire on these statements too, the rows are checked again and
// set back again where a trigger changed them.
func (u *undoer) entry(e changeset.Entry) error {
	for _, r := range e.Rows {
		ok, err := u.is(r.Table, r.Key, r.After)
		if err != nil {
			return err
		}
		if !ok {
			what := "is not as change %d left it"
			if r.Op == changeset.Delete {
				what = "exists again since change %d deleted it"
			}
			u.conflicts = append(u.conflicts, fmt.Sprintf("%s %s "+what, r.Table, describeKey(r.Key), e.ID))
		}
	}
	if len(u.conflicts) > 0 {
		return nil
	}
	for pass := 0; ; pass++ {
		var wrong []changeset.Row // in the reverse order of the change
		if pass == 0 {
			wrong = backSteps(e.Rows) // nil unless the rows keep their steps
		}
		stepped := wrong != nil
		for i := len(e.Rows) - 1; i >= 0 && !stepped; i-- {
			r := e.Rows[i]
			if pass > 0 {
				ok, err := u.is(r.Table, r.Key, r.Before)
				if err != nil {
					return err
				}
				if ok {
					continue
				}
			}
			wrong = append(wrong, r)
		}
		if len(wrong) == 0 {
			return nil
		}
		if err := u.restoreRows(e.ID, wrong); err != nil {
			return err
		}
		if pass == maxRestorePasses {
			return fmt.Errorf("llmtool: undo change %d: the database's triggers changed its rows again after %d passes", e.ID, pass)
		}
	}
}

// backSteps returns what undoes rows that keep their steps
// (changeset.Row.Steps, see dbconn's merger): each step undone, the last
// first, as a row set back to its values before that step. Nil when the
// rows keep no steps: then each row changed once, and the rows in
// reverse are the steps in reverse.
func backSteps(rows []changeset.Row) []changeset.Row {
	type back struct {
		seq int
		row changeset.Row
	}
	var all []back
	for _, r := range rows {
		for j, st := range r.Steps {
			before := st.Before
			if j == 0 {
				before = r.Before
			}
			all = append(all, back{st.Seq, changeset.Row{Table: r.Table, Op: r.Op, Key: r.Key, Before: before}})
		}
	}
	slices.SortFunc(all, func(a, b back) int { return b.seq - a.seq })
	out := make([]changeset.Row, len(all))
	for i, b := range all {
		out[i] = b.row
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// heldError is a row's restore that a foreign key refused for now
// (PostgreSQL), rolled back: its parent may come back later in the undo,
// or its child go first.
type heldError struct{ err error }

func (h *heldError) Error() string { return h.err.Error() }
func (h *heldError) Unwrap() error { return h.err }

// restoreRows sets rows back, in order. On SQLite the undo checks
// foreign keys at commit (PRAGMA defer_foreign_keys). PostgreSQL's are
// usually NOT DEFERRABLE, checked at the end of each statement, and the
// reverse of the order in which the triggers recorded rows does not
// always suit them: a cascade's children are recorded after their
// parent, so they come back first. So a restore that a foreign key
// refuses is rolled back to its savepoint and held, and the held rows are
// tried again after the others, until all are back or a round sets none
// back (a row whose parent is truly gone: that restore's error).
func (u *undoer) restoreRows(id int64, rows []changeset.Row) error {
	for len(rows) > 0 {
		var held []changeset.Row
		var heldErr error
		for _, r := range rows {
			err := u.restore(r.Table, r.Key, r.Before)
			var h *heldError
			if errors.As(err, &h) {
				held = append(held, r)
				if heldErr == nil {
					heldErr = fmt.Errorf("llmtool: undo change %d, %s %s: %w", id, r.Table, describeKey(r.Key), h.err)
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("llmtool: undo change %d, %s %s: %w", id, r.Table, describeKey(r.Key), err)
			}
		}
		if len(held) == len(rows) {
			return heldErr
		}
		rows = held
	}
	return nil
}

// is reports whether the row of table with key holds values (every
// column in values), or does not exist when values is nil.
func (u *undoer) is(table string, key, values changeset.Values) (bool, error) {
	if !u.sqlite {
		return u.pgIs(table, key, values) // undo_pg.go
	}
	conds, args, err := sqliteConds(key, nil, nil)
	if err == nil && values != nil {
		conds, args, err = sqliteConds(values, conds, args)
	}
	if err != nil {
		return false, err
	}
	var n int
	if err := u.c.QueryRowContext(u.c, `SELECT count(*) FROM `+sqlcheck.QuoteIdent(table)+` WHERE `+strings.Join(conds, " AND "), args...).Scan(&n); err != nil {
		return false, err
	}
	return (n > 0) == (values != nil), nil
}

// restore sets the row of table with key to values: an update of the
// row, or an insert if there is none; a delete when values is nil.
func (u *undoer) restore(table string, key, values changeset.Values) error {
	if !u.sqlite {
		return u.pgRestore(table, key, values) // undo_pg.go
	}
	t := sqlcheck.QuoteIdent(table)
	where, args, err := sqliteConds(key, nil, nil)
	if err != nil {
		return err
	}
	if values == nil {
		_, err = u.c.ExecContext(u.c, `DELETE FROM `+t+` WHERE `+strings.Join(where, " AND "), args...)
		return err
	}
	cols := sortedCols(values)
	if _, ok := key["rowid"]; ok && values["rowid"] == nil {
		cols = append(cols, "rowid")
	}
	vals := make([]any, len(cols))
	quoted := make([]string, len(cols))
	for i, col := range cols {
		v, ok := values[col]
		if !ok {
			v = key[col]
		}
		if vals[i], err = dbconn.DecodeSQLite(v); err != nil {
			return fmt.Errorf("%s: %w", col, err)
		}
		quoted[i] = sqlcheck.QuoteIdent(col)
	}
	var n int
	if err := u.c.QueryRowContext(u.c, `SELECT count(*) FROM `+t+` WHERE `+strings.Join(where, " AND "), args...).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
		_, err = u.c.ExecContext(u.c, `INSERT INTO `+t+` (`+strings.Join(quoted, ", ")+`) VALUES (`+marks+`)`, vals...)
		return err
	}
	sets := make([]string, len(quoted))
	for i, q := range quoted {
		sets[i] = q + " = ?"
	}
	_, err = u.c.ExecContext(u.c, `UPDATE `+t+` SET `+strings.Join(sets, ", ")+` WHERE `+strings.Join(where, " AND "), append(vals, args...)...)
	return err
}

// sqliteConds appends "column IS ?" for each of values' columns.
func sqliteConds(values changeset.Values, conds []string, args []any) ([]string, []any, error) {
	for _, col := range sortedCols(values) {
		v, err := dbconn.DecodeSQLite(values[col])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", col, err)
		}
		conds = append(conds, sqlcheck.QuoteIdent(col)+" IS ?")
		args = append(args, v)
	}
	return conds, args, nil
}

func describeKey(key changeset.Values) string {
	var parts []string
	for _, col := range sortedCols(key) {
		parts = append(parts, col+"="+changeset.Excerpt(key[col]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func sortedCols(v changeset.Values) []string {
	cols := make([]string, 0, len(v))
	for c := range v {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	return cols
}

// mayUndo refuses the undo of e, another principal's change, unless the
// host's Changesets.MayUndo allows it; a refusal in its own words when
// its error carries an *Error.
func mayUndo(ctx context.Context, allow func(context.Context, changeset.Entry) error, e changeset.Entry) error {
	refusal := Denied("Change %d was made by someone else; only they can undo it.", e.ID)
	if allow == nil {
		return refusal
	}
	err := allow(ctx, e)
	if err == nil {
		return nil
	}
	refusal.err = fmt.Errorf("%w: %w", ErrNotAuthorized, err)
	var te *Error
	if errors.As(err, &te) {
		refusal.Message, refusal.NextAction = te.Message, te.NextAction
	}
	return refusal
}
