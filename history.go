package llmtool

import (
	"errors"
	"strings"

	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/jsonenc"
)

// The history's readers: the built-in read tool list_changes and the
// resource changes://recent (Options.Changesets.Tools), which show a
// tenant's recent changes to readers with the history's read scope,
// without the rows of entities they may not see.

type listChangesIn struct {
	All   bool `json:"all,omitempty" desc:"List the whole workspace's changes, not only this conversation's."`
	Limit int  `json:"limit,omitempty" desc:"How many, newest first." default:"20" minimum:"1" maximum:"100"`
}

type listChangesOut struct {
	Changes []changeset.Entry `json:"changes"`
	// Withheld counts the rows left out: those of entities that are
	// protected, or that the reader may not read (Entity.Table).
	Withheld int `json:"withheld,omitempty"`
}

func (r *Registry) newListChangesTool() *Tool {
	t := Read(listChangesTool, "List the changes made in this conversation (or the whole workspace), newest first, with their ids for undo_changes. Rows of what you may not see are left out and counted in withheld.",
		func(c *ReadCtx, in listChangesIn) (listChangesOut, error) {
			f := changeset.Filter{Tenant: TenantFrom(c), Limit: in.Limit}
			if !in.All && c.call.conversation != "" {
				f.Conversation = c.call.conversation
			}
			return c.listChanges(f)
		}, Summary("List recent changes"), FriendlyName("List changes"), Scopes(r.tracked.readScopes()...))
	t.spec.Module = "changesets"
	return t
}

// listChanges reads the history on a connection of llmtool's own, since
// a read call's connection refuses llmtool's tables, and leaves out the
// rows of entities the reader may not see: protected ones, and those
// MayRead refuses, as they are now (Entity.Table).
func (c *ReadCtx) listChanges(f changeset.Filter) (listChangesOut, error) {
	es, err := changeset.List(c, c.call.reg.tx.DB, f)
	out := listChangesOut{Changes: es}
	if out.Changes == nil {
		out.Changes = []changeset.Entry{}
	}
	if err != nil {
		return out, err
	}
	tables := c.call.reg.entityTables()
	if tables == nil {
		return out, nil
	}
	words := c.call.reg.changeWords(c.call.locale) // words.go
	for i := range out.Changes {
		e := &out.Changes[i]
		kept := e.Rows[:0]
		for _, row := range e.Rows {
			ok, err := c.mayReadRow(tables, row)
			if err != nil {
				return out, err
			}
			if ok {
				kept = append(kept, row)
			} else {
				out.Withheld++
			}
		}
		e.Rows = kept
		e.Set = *words.set(&e.Set)
	}
	return out, nil
}

// mayReadRow reports whether the reader may see a row of the history:
// a row of an entity table whose entity is protected, or that MayRead
// refuses, may not be seen. An entity that no longer exists is not
// checked: its row shows what a tool could change, since only an entity
// that exists can be protected.
func (c *ReadCtx) mayReadRow(tables map[string]*Entity, row changeset.Row) (bool, error) {
	e := tables[strings.ToLower(row.Table)]
	if e == nil {
		return true, nil
	}
	v := row.Before
	if row.Op == changeset.Insert {
		v = row.After
	}
	id, err := entityID(e, v)
	if err != nil {
		return false, err
	}
	if e.Protected == nil && e.MayRead == nil {
		return true, nil // nothing to withhold
	}
	if ok, err := e.Exists(c, id); err != nil || !ok {
		return err == nil, err
	}
	for _, check := range []error{e.checkProtected(c, id, e.Key), e.checkMay(c, id, e.Key, false)} {
		var te *Error
		switch {
		case check == nil:
		case errors.As(check, &te):
			return false, nil
		default:
			return false, check
		}
	}
	return true, nil
}

// newChangesResource is the history as a resource: the workspace's last
// changes, as list_changes with all set gives them.
func (r *Registry) newChangesResource() *Tool {
	t := Resource("recent_changes", "changes://recent", "The workspace's recent changes, newest first.",
		func(c *ReadCtx, _ struct{}) (Rich, error) {
			out, err := c.listChanges(changeset.Filter{Tenant: TenantFrom(c), Limit: 50})
			if err != nil {
				return Rich{}, err
			}
			b, err := jsonenc.Marshal(out)
			if err != nil {
				return Rich{}, err
			}
			return Rich{Content: []Content{ResourceContent("changes://recent", "application/json", string(b), nil)}}, nil
		}, FriendlyName("Recent changes"), Scopes(r.tracked.readScopes()...))
	t.spec.Module = "changesets"
	return t
}
