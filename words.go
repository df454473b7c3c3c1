package llmtool

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/i18n"
)

// Changes in the host's words: a row of a table an Entity describes
// (Entity.NameColumn, Columns, HiddenColumns) reads to a person as the
// host would say it, `Delete note "Ideas"`, in the locale of the call
// that shows it (Call.Locale), through the catalog (Options.Messages).
// The registry puts the line in changeset.Row.Text of what it shows: a
// preview (approval.go), a write's Result.Changeset, the history
// (history.go); never in what it records or what an approval binds.

// The catalog's keys of a change; {what} is the entity's noun and, when
// it has one, its name: `note "Ideas"`.
const (
	keyChangeInsert  = "llm.change.insert"  // {what}
	keyChangeUpdate  = "llm.change.update"  // {what}
	keyChangeDelete  = "llm.change.delete"  // {what}
	keyChangeRestore = "llm.change.restore" // {what}
	keyChangeEmpty   = "llm.change.empty"   // a value that is null
	entityKeyPrefix  = "llm.entities."      // + kind: the noun; + kind.column: a column
)

// changeWords describes rows in one locale.
type changeWords struct {
	msgs   *i18n.Catalog
	locale string
	tables map[string]*Entity // lower-case table → the entity that describes it
}

// describes reports whether e says how its rows read to a person.
func (e *Entity) describes() bool {
	return e.Table != "" && (e.NameColumn != "" || e.Columns != nil || e.HiddenColumns != nil)
}

// changeWords returns the words of changes in locale, or nil when no
// entity describes its table.
func (r *Registry) changeWords(locale string) *changeWords {
	var w *changeWords
	for _, d := range r.entityMap() {
		if !d.entity.describes() {
			continue
		}
		if w == nil {
			w = &changeWords{msgs: r.msgs, locale: locale, tables: make(map[string]*Entity)}
		}
		w.tables[strings.ToLower(d.entity.Table)] = d.entity
	}
	return w
}

// set returns s with the Text of each row a described table holds, a
// copy; s itself when w is nil or describes none of its rows.
func (w *changeWords) set(s *changeset.Set) *changeset.Set {
	if w == nil || s == nil {
		return s
	}
	var out *changeset.Set
	for i := range s.Rows {
		e := w.tables[strings.ToLower(s.Rows[i].Table)]
		if e == nil {
			continue
		}
		if out == nil {
			c := *s
			c.Rows = slices.Clone(s.Rows)
			out = &c
		}
		out.Rows[i].Text = w.row(e, &out.Rows[i])
	}
	if out == nil {
		return s
	}
	return out
}

// summary is the rows' Text joined, the line of a preview whose tool
// did not describe its change (WriteCtx.Describe); "" when no row has
// one.
func summary(s *changeset.Set) string {
	if s == nil {
		return ""
	}
	var lines []string
	for _, r := range s.Rows {
		if r.Text != "" {
			lines = append(lines, r.Text)
		}
	}
	return strings.Join(lines, "; ")
}

// row is the line of one row of e's table.
func (w *changeWords) row(e *Entity, r *changeset.Row) string {
	key, vals := keyChangeUpdate, r.Before
	var fields []string
	switch {
	case r.Op == changeset.Insert:
		key, vals = keyChangeInsert, r.After
		fields = w.values(e, r.After)
	case r.Op == changeset.Delete:
		key = keyChangeDelete
		fields = w.values(e, r.Before)
	case e.DeletedColumn != "" && !isSet(column(r.Before, e.DeletedColumn)) && isSet(column(r.After, e.DeletedColumn)):
		key = keyChangeDelete // a soft delete
		fields = w.values(e, r.Before)
	default:
		if e.DeletedColumn != "" && isSet(column(r.Before, e.DeletedColumn)) && !isSet(column(r.After, e.DeletedColumn)) {
			key = keyChangeRestore
		}
		changed := r.Changed()
		for _, c := range w.shown(e, r.After) {
			if slices.Contains(changed, c) {
				fields = append(fields, w.label(e, c)+" "+w.value(r.Before[c])+" → "+w.value(r.After[c]))
			}
		}
	}
	what := w.noun(e)
	if e.NameColumn != "" {
		if v := column(vals, e.NameColumn); len(v) > 0 && string(v) != "null" {
			what += " " + w.value(v)
		}
	}
	line, _ := w.msgs.Lookup(key, w.locale) // embedded in English
	line = strings.Replace(line, "{what}", what, 1)
	if len(fields) > 0 {
		line += ": " + strings.Join(fields, ", ")
	}
	return line
}

// values are the shown columns of an inserted or deleted row but its
// name, those with a value.
func (w *changeWords) values(e *Entity, v changeset.Values) []string {
	var fields []string
	for _, c := range w.shown(e, v) {
		if strings.EqualFold(c, e.NameColumn) || !isSet(v[c]) {
			continue
		}
		fields = append(fields, w.label(e, c)+" "+w.value(v[c]))
	}
	return fields
}

// shown returns the columns of v that a change of e's rows shows, as v
// spells them (PostgreSQL's catalog holds noteId as noteid): Columns in
// their order, or every column but the key, DeletedColumn and
// HiddenColumns, in the order of their names.
func (w *changeWords) shown(e *Entity, v changeset.Values) []string {
	var cols []string
	if e.Columns != nil {
		for _, want := range e.Columns {
			for c := range v {
				if strings.EqualFold(c, want) {
					cols = append(cols, c)
				}
			}
		}
		return cols
	}
	for c := range v {
		if !strings.EqualFold(c, e.Key) && !strings.EqualFold(c, e.DeletedColumn) && !slices.ContainsFunc(e.HiddenColumns, func(h string) bool { return strings.EqualFold(h, c) }) {
			cols = append(cols, c)
		}
	}
	slices.Sort(cols)
	return cols
}

// noun is e's word in the locale.
func (w *changeWords) noun(e *Entity) string {
	if s, ok := w.msgs.Lookup(entityKeyPrefix+e.Kind, w.locale); ok {
		return s
	}
	return e.noun()
}

// label is a column's word in the locale: the catalog's, ColumnLabels',
// or its name as the declaration spells it.
func (w *changeWords) label(e *Entity, c string) string {
	label, declared := "", false
	for k, s := range e.ColumnLabels {
		if strings.EqualFold(k, c) {
			c, label, declared = k, s, true
			break
		}
	}
	for _, names := range [][]string{e.Columns, e.HiddenColumns, {e.NameColumn, e.Key}} {
		if i := slices.IndexFunc(names, func(d string) bool { return strings.EqualFold(d, c) }); !declared && i >= 0 {
			c, declared = names[i], true
		}
	}
	if s, ok := w.msgs.Lookup(entityKeyPrefix+e.Kind+"."+c, w.locale); ok {
		return s
	}
	if label != "" {
		return label
	}
	return c
}

// value is a value as a person reads it: changeset.Excerpt, with null
// in the locale's word.
func (w *changeWords) value(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		s, _ := w.msgs.Lookup(keyChangeEmpty, w.locale)
		return s
	}
	return changeset.Excerpt(v)
}

// column returns the value of a column in v, whatever the case of its
// name.
func column(v changeset.Values, name string) json.RawMessage {
	if x, ok := v[name]; ok {
		return x
	}
	for c, x := range v {
		if strings.EqualFold(c, name) {
			return x
		}
	}
	return nil
}

// isSet reports whether a value is more than empty: not null, 0, false,
// "", "0" or "false".
func isSet(v json.RawMessage) bool {
	switch strings.TrimSpace(string(v)) {
	case "", "null", "0", "false", `""`, `"0"`, `"false"`, "0.0":
		return false
	}
	return true
}
