package llmtool

import (
	"errors"
	"fmt"
	"strings"

	"github.com/llmtool/llmtool/internal/schema"
)

// Entity declares a kind of entity that tool inputs reference by ID, such as
// a note, and the checks every tool that references it gets. Declare each
// kind once, next to the data layer, and ship it with the module whose
// tools reference it (Module.WithEntities):
//
//	var Note = &llmtool.Entity{
//	    Kind: "note",
//	    Exists: func(c *llmtool.ReadCtx, id string) (bool, error) {
//	        var n int
//	        err := c.QueryRow(`SELECT count(*) FROM notes WHERE noteId = ?`, id).Scan(&n)
//	        return n > 0, err
//	    },
//	    System:       func(_ *llmtool.ReadCtx, id string) (bool, error) { return id == "root", nil },
//	    Protected:    func(c *llmtool.ReadCtx, id string) (bool, error) { ... },
//	    NotFoundNext: "Call search_notes to find the note's ID.",
//	}
//
//	var Tools = llmtool.DefineTools("notes", getNote, cloneNote).WithEntities(Note)
//
// A field references an entity with the ref tag:
//
//	type CloneNoteIn struct {
//	    NoteID   string `json:"noteId" ref:"note" desc:"ID of the note to clone."`
//	    ParentID string `json:"parentNoteId" ref:"note,system-ok" desc:"ID of the new parent."`
//	}
//
// The tag's first word is the entity kind. The option system-ok says the
// tool does not change the referenced entity itself (a new parent, a
// relation target), so system entities are accepted there; every other
// reference in a write tool refuses them. The safe default means a
// forgotten option is a loud refusal, never a silent hole. ref works on
// string and integer fields, pointers to them, slices of them, and fields
// of nested structs and slices of structs. An optional field (omitempty)
// left empty is not checked; a required one always is. IDs reach the
// checks as strings; integer fields are formatted in decimal.
//
// # Order
//
// Every call runs two layers of guards inside its transaction, after the
// arguments are validated and before the handler:
//
//  1. Entity guards, in four stages, each stage over every referenced ID
//     in declaration order before the next stage starts:
//     exists → system (write tools only) → protected → the principal may act.
//  2. Tool guards, given with Guards, in the order given.
//
// The first check that fails ends the call with its error, and nothing is
// written. Every message of a built-in guard ends with the corrective next
// action. A check function that returns an error makes the call fail as an
// internal error (logged, generic message).
//
// The registry refuses to register a tool whose input references a kind no
// registered module declares, naming the tool, the field and the fix;
// package lint reports it when a loader's module does.
type Entity struct {
	// Kind is the name ref tags use, such as "note". Required.
	Kind string
	// Noun names one entity in messages, such as "note" or "attribute";
	// the default is Kind with underscores as spaces.
	Noun string
	// Exists reports whether the entity exists. Required. A missing
	// entity ends the call with a not-found error.
	Exists func(c *ReadCtx, id string) (bool, error)
	// System reports whether the entity is a system entity, which write
	// tools must never delete, move, clone or rename (such as the root
	// note). Optional. It is checked only for
	// write tools, and not for fields tagged system-ok.
	System func(c *ReadCtx, id string) (bool, error)
	// Protected reports whether the entity is protected: a model must
	// neither read nor change it, whatever the tool. Optional.
	Protected func(c *ReadCtx, id string) (bool, error)
	// MayRead reports whether the call's principal (PrincipalFrom(c), which
	// may be nil) may read the entity. Read tools consult it. Optional.
	MayRead func(c *ReadCtx, id string) (bool, error)
	// MayChange reports whether the call's principal may change the
	// entity. Write tools consult it (and not MayRead). Optional.
	MayChange func(c *ReadCtx, id string) (bool, error)
	// NotFoundNext is the corrective next action of the not-found error,
	// such as "Call search_notes to find the note's ID.". The default
	// asks for the ID of an existing entity.
	NotFoundNext string
	// Complete returns IDs of existing entities that start with prefix, at
	// most limit of them, for a client completing a resource template
	// variable or a prompt argument that references this kind
	// (Registry.Complete). Optional: without it such values do not
	// complete. It runs in a read snapshot as the caller's principal; the
	// registry drops the IDs of protected entities and of those MayRead
	// refuses, so it need not filter them itself (a Complete that leaves
	// out protected entities in its query keeps the list full: the
	// registry asks for limit IDs and drops, it does not ask again).
	Complete func(c *ReadCtx, prefix string, limit int) ([]string, error)
	// Table and Key name the table whose rows are this kind's entities
	// and the column that holds their ID, so that the checks follow the
	// data, in a registry that tracks Table (Options.Changesets.Tables;
	// one that tracks other tables but not this one refuses the module,
	// and one that tracks none checks through ref tags only, as a
	// registry without a history must). Every row of Table that a write
	// call updates or deletes then passes this
	// kind's checks before the call commits, whichever tool or statement
	// changed it: a tool without a ref tag, undo_changes, a foreign key's
	// cascade, a trigger. Protected and MayChange apply to any change,
	// System to a delete and to an update of SystemColumns. The checks
	// see the data as it was before the call (a read snapshot of what is
	// committed), so a call cannot lift a protection and use it at once;
	// a row the call inserts is new and meets none. A refusal fails the
	// call with the sentence a ref tag's check gives, naming Key as the
	// field, and nothing is saved. The history (list_changes,
	// changes://recent) leaves out the rows of entities that are
	// protected or that MayRead refuses to the reader. Keep the ref tags
	// too: they stop a call before it runs, with the tool's own field in
	// the message.
	Table, Key string
	// SystemColumns are the columns of Table whose change changes a
	// system entity itself (its name, its place in a tree): an update
	// of one of them refuses a system entity, as a delete always does.
	SystemColumns []string

	// How a change to a row of Table reads to a person: in an approval's
	// question (approval.Preview), in a write's Result.Changeset and in
	// the history (list_changes, changes://recent), each changed row gets
	// a line in the host's words (changeset.Row.Text), in the call's
	// locale (Call.Locale, Options.Messages), such as
	//
	//	Delete note "Ideas": content "Try the new layout"
	//	Change note "Plans": title "Plans" → "Plans 2026"
	//
	// instead of its table, key and columns. An entity with Table
	// describes its rows once it sets NameColumn, Columns or
	// HiddenColumns; the rows of other tables read as the exact change
	// (changeset.Set.String). The words are Noun, or the catalog's
	// "llm.entities.<Kind>" in the locale, and for a column the
	// catalog's "llm.entities.<Kind>.<column>", else ColumnLabels, else
	// the column's name.

	// NameColumn is the column whose value names a row to a person, such
	// as "title": `Delete note "Ideas"`. Without it a row reads by its
	// noun alone (`Delete branch: …`).
	NameColumn string
	// Columns are the columns a change shows, in this order: an insert
	// or a delete its values (null, "", 0 and false left out), an update
	// those it changed. Nil shows every column but Key, DeletedColumn
	// and HiddenColumns, in the order of their names.
	Columns []string
	// HiddenColumns are columns a change never shows, such as rowid and
	// timestamps.
	HiddenColumns []string
	// ColumnLabels are the English words for columns, by column, such as
	// {"parentNoteId": "under"}; the catalog translates them.
	ColumnLabels map[string]string
	// DeletedColumn is the column that marks a row deleted while it
	// stays in the table (a soft delete), such as "isDeleted": an update
	// that sets it (from 0, false, "" or null to another value) reads as
	// a delete, one that clears it as a restore.
	DeletedColumn string
}

func (e *Entity) noun() string {
	if e.Noun != "" {
		return e.Noun
	}
	return strings.ReplaceAll(e.Kind, "_", " ")
}

// validate reports what is wrong with a declaration.
func (e *Entity) validate() error {
	switch {
	case e == nil:
		return errors.New("nil entity")
	case e.Kind == "" || strings.ContainsAny(e.Kind, ", \t"):
		return fmt.Errorf("entity kind %q must be a non-empty word such as \"note\"", e.Kind)
	case e.Exists == nil:
		return fmt.Errorf("entity %q has no Exists check; every entity kind needs one", e.Kind)
	case (e.Table == "") != (e.Key == ""):
		return fmt.Errorf("entity %q sets only one of Table and Key; set both (the table of its rows and the column of their ID), or neither", e.Kind)
	case len(e.SystemColumns) > 0 && e.Table == "":
		return fmt.Errorf("entity %q sets SystemColumns without Table and Key; name the table and the ID column its system columns belong to", e.Kind)
	case e.Table == "" && (e.NameColumn != "" || e.Columns != nil || e.HiddenColumns != nil || e.ColumnLabels != nil || e.DeletedColumn != ""):
		return fmt.Errorf("entity %q describes columns (NameColumn, Columns, HiddenColumns, ColumnLabels, DeletedColumn) without Table and Key; name the table they belong to", e.Kind)
	}
	return nil
}

// WithEntities returns a copy of m that also declares the given entity
// kinds, so the tools of any module registered in the same registry can
// reference them with ref tags. Ship a module's entities with it:
//
//	var Tools = llmtool.DefineTools("notes", getNote, cloneNote).WithEntities(Note)
//
// A module may consist of entities only, for kinds the host declares
// itself. WithEntities panics on a declaration without Kind or Exists, so
// the module's tests catch it.
func (m *Module) WithEntities(entities ...*Entity) *Module {
	c := *m
	c.entities = append(append([]*Entity(nil), m.entities...), entities...)
	for _, e := range entities {
		if err := e.validate(); err != nil {
			panic(fmt.Sprintf("llmtool: module %q: %v", m.name, err))
		}
	}
	return &c
}

// entityDecl is a declared kind and the module that declared it.
type entityDecl struct {
	entity *Entity
	module string
}

// declareLocked records the entity kinds of m. It is idempotent for the
// same *Entity and refuses two declarations of one kind.
func (r *Registry) declareLocked(m *Module, commit bool) error {
	cur := r.entityMap()
	var next map[string]entityDecl
	for _, e := range m.entities {
		if d, ok := cur[e.Kind]; ok {
			if d.entity != e {
				return fmt.Errorf("llmtool: entity kind %q is declared by both module %q and module %q; declare it once and share the *llmtool.Entity", e.Kind, d.module, m.name)
			}
			continue
		}
		if next == nil {
			next = make(map[string]entityDecl, len(cur)+len(m.entities))
			for k, v := range cur {
				next[k] = v
			}
		}
		if d, ok := next[e.Kind]; ok && d.entity != e {
			return fmt.Errorf("llmtool: module %q declares entity kind %q twice", m.name, e.Kind)
		}
		if e.Table != "" && r.tracked != nil && !r.tracked.tracks(e.Table) {
			return fmt.Errorf("llmtool: module %q: entity kind %q names table %s, which is not tracked; add it to Options.Changesets.Tables, so that llmtool sees the rows each write changes", m.name, e.Kind, e.Table)
		}
		next[e.Kind] = entityDecl{entity: e, module: m.name}
	}
	if commit && next != nil {
		r.entities.Store(&next)
	}
	return nil
}

func (r *Registry) entityMap() map[string]entityDecl {
	if p := r.entities.Load(); p != nil {
		return *p
	}
	return nil
}

// checkRefsLocked reports the first reference in m's tools to a kind that is
// neither declared nor declared by m itself.
func (r *Registry) checkRefsLocked(m *Module) error {
	cur := r.entityMap()
	own := make(map[string]bool, len(m.entities))
	for _, e := range m.entities {
		own[e.Kind] = true
	}
	for _, t := range m.tools {
		for _, ref := range t.refs {
			if _, ok := cur[ref.Kind]; !ok && !own[ref.Kind] {
				return fmt.Errorf("llmtool: module %q: %w", m.name, &schema.RefError{Module: m.name, Tool: t.spec.Name, Field: ref.Field, Kind: ref.Kind})
			}
		}
	}
	return nil
}

// entity returns the declaration of an entity kind, if a registered module
// declares it.
func (r *Registry) entity(kind string) (*Entity, bool) {
	d, ok := r.entityMap()[kind]
	return d.entity, ok
}
