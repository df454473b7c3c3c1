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
			e := ents[i]
			if e.System == nil || x.Ref.SystemOK {
				continue
			}
			sys, err := e.System(c, x.ID)
			if err != nil {
				return fmt.Errorf("llmtool: entity %s %q: system check: %w", e.Kind, x.ID, err)
			}
			if sys {
				return Denied("%s %q (%s) is a system %s; %s must not change it.", upperFirst(e.noun()), x.ID, x.Field, e.noun(), tool).
					Next("Leave system " + plural(e.noun()) + " as they are and choose another " + e.noun() + ".")
			}
		}
	}
	for i, x := range ids {
		e := ents[i]
		if e.Protected == nil {
			continue
		}
		p, err := e.Protected(c, x.ID)
		if err != nil {
			return fmt.Errorf("llmtool: entity %s %q: protected check: %w", e.Kind, x.ID, err)
		}
		if p {
			return Denied("%s %q (%s) is protected; tools may neither read nor change it.", upperFirst(e.noun()), x.ID, x.Field).
				Next("Work with another " + e.noun() + ", or ask the user to remove the protection.")
		}
	}
	for i, x := range ids {
		e := ents[i]
		may, verb := e.MayRead, "read"
		if write {
			may, verb = e.MayChange, "change"
		}
		if may == nil {
			continue
		}
		ok, err := may(c, x.ID)
		if err != nil {
			return fmt.Errorf("llmtool: entity %s %q: may-%s check: %w", e.Kind, x.ID, verb, err)
		}
		if !ok {
			return Denied("You may not %s %s %q (%s).", verb, e.noun(), x.ID, x.Field).
				Next("Choose a " + e.noun() + " you have access to, or ask its owner to share it.")
		}
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
