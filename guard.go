package llmtool

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmtool/llmtool/internal/schema"
)

// IsProtected reports whether the entity of the given kind and ID is
// protected, for handlers that list entities (such as a search) and must
// leave protected ones out. It reports false for a kind without a
// Protected check, and an error for an undeclared kind.
func (c *ReadCtx) IsProtected(kind, id string) (bool, error) {
	e, ok := c.call.reg.entity(kind)
	if !ok {
		return false, fmt.Errorf("llmtool: IsProtected: entity kind %q is not declared", kind)
	}
	if e.Protected == nil {
		return false, nil
	}
	return e.Protected(c, id)
}

// checkRefs runs the entity guards of the call's tool over in: exists,
// system (write tools), protected, may act; each stage over every
// referenced ID before the next.
func (c *ReadCtx) checkRefs(in any) error {
	refs := c.call.tool.refs
	if len(refs) == 0 {
		return nil
	}
	v := reflect.ValueOf(in)
	var ids []schema.RefID
	for i := range refs {
		ids = refs[i].IDsNamed(v, ids)
	}
	if len(ids) == 0 {
		return nil
	}
	decls := c.call.reg.entityMap()
	ents := make([]*Entity, len(ids))
	for i, x := range ids {
		d, ok := decls[x.Ref.Kind]
		if !ok {
			return fmt.Errorf("llmtool: tool %s: entity kind %q is not declared", c.call.tool.spec.Name, x.Ref.Kind)
		}
		ents[i] = d.entity
	}
	write := c.write != nil
	tool := c.call.tool.spec.Name
	for i, x := range ids {
		e := ents[i]
		ok, err := e.Exists(c, x.ID)
		if err != nil {
			return fmt.Errorf("llmtool: entity %s %q: exists check: %w", e.Kind, x.ID, err)
		}
		if !ok {
			next := e.NotFoundNext
			if next == "" {
				next = "Send the ID of an existing " + e.noun() + "."
			}
			return NotFound("%s %q (%s) does not exist.", upperFirst(e.noun()), x.ID, x.Field).Next(next)
		}
	}
	if write {
		for i, x := range ids {
			if x.Ref.SystemOK {
				continue
			}
			if err := ents[i].checkSystem(c, x.ID, x.Field, tool); err != nil {
				return err
			}
		}
	}
	for i, x := range ids {
		if err := ents[i].checkProtected(c, x.ID, x.Field); err != nil {
			return err
		}
	}
	for i, x := range ids {
		if err := ents[i].checkMay(c, x.ID, x.Field, write); err != nil {
			return err
		}
	}
	return nil
}

// The stages of the entity guards after exists, for one entity: each
// returns the refusal the model reads, naming the entity by id and field
// (a tool's field, or the key column of a changed row, see rowChecks), or
// nil. A tool's references and the rows a write changed meet the same
// checks in the same words.

// checkSystem refuses a change of a system entity by tool.
func (e *Entity) checkSystem(c *ReadCtx, id, field, tool string) error {
	if e.System == nil {
		return nil
	}
	sys, err := e.System(c, id)
	if err != nil {
		return fmt.Errorf("llmtool: entity %s %q: system check: %w", e.Kind, id, err)
	}
	if sys {
		return Denied("%s %q (%s) is a system %s; %s must not change it.", upperFirst(e.noun()), id, field, e.noun(), tool).
			Next("Leave system " + plural(e.noun()) + " as they are and choose another " + e.noun() + ".")
	}
	return nil
}

// checkProtected refuses a protected entity.
func (e *Entity) checkProtected(c *ReadCtx, id, field string) error {
	if e.Protected == nil {
		return nil
	}
	p, err := e.Protected(c, id)
	if err != nil {
		return fmt.Errorf("llmtool: entity %s %q: protected check: %w", e.Kind, id, err)
	}
	if p {
		return Denied("%s %q (%s) is protected; tools may neither read nor change it.", upperFirst(e.noun()), id, field).
			Next("Work with another " + e.noun() + ", or ask the user to remove the protection.")
	}
	return nil
}

// checkMay refuses an entity the call's principal may not read (write
// false) or change (write true).
func (e *Entity) checkMay(c *ReadCtx, id, field string, write bool) error {
	may, verb := e.MayRead, "read"
	if write {
		may, verb = e.MayChange, "change"
	}
	if may == nil {
		return nil
	}
	ok, err := may(c, id)
	if err != nil {
		return fmt.Errorf("llmtool: entity %s %q: may-%s check: %w", e.Kind, id, verb, err)
	}
	if !ok {
		return Denied("You may not %s %s %q (%s).", verb, e.noun(), id, field).
			Next("Choose a " + e.noun() + " you have access to, or ask its owner to share it.")
	}
	return nil
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func plural(noun string) string {
	switch {
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}
