// Package guard holds ready-made tool guards: functions a tool lists with
// llmtool.Guards, which run in order inside the call's transaction, after
// the entity checks of its ref-tagged fields and before the handler. A
// guard returns nil to let the call through, or the refusal the model
// sees:
//
//	llmtool.Write("delete_note", "Delete a note.", deleteNote,
//		llmtool.Guards(guard.RequireRole[DeleteNoteIn]("editor", "admin")))
//
// A guard of a tool's own is a function of the same shape,
// func(*llmtool.ReadCtx, In) error.
package guard

import (
	"strings"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/callinfo"
	"github.com/llmtool/llmtool/internal/text"
)

// RequireRole returns a tool guard that lets the call through only when
// its principal has one of the roles (llmtool.Principal.Roles):
//
//	llmtool.Guards(guard.RequireRole[DeleteNoteIn]("editor", "admin"))
func RequireRole[In any](roles ...string) func(*llmtool.ReadCtx, In) error {
	return func(c *llmtool.ReadCtx, _ In) error {
		p := llmtool.PrincipalFrom(c)
		for _, r := range roles {
			if p.HasRole(r) {
				return nil
			}
		}
		return llmtool.Denied("%s needs the role %s, which you do not have.", toolName(c), text.QuoteOr(roles)).
			Next("Ask an administrator for the role, or use another tool.")
	}
}

// DenyValues returns a tool guard that refuses a parameter value from a
// deny list, compared without regard to case, such as attribute names
// that make the host run code:
//
//	llmtool.Guards(guard.DenyValues("name",
//	    func(in SetAttrIn) string { return in.Name },
//	    []string{"run", "runOnInstance"},
//	    "Use an attribute name that does not run code."))
//
// param is the JSON name shown in the message; next is the corrective
// next action.
func DenyValues[In any](param string, get func(In) string, denied []string, next string) func(*llmtool.ReadCtx, In) error {
	set := make(map[string]bool, len(denied))
	for _, d := range denied {
		set[strings.ToLower(d)] = true
	}
	return func(c *llmtool.ReadCtx, in In) error {
		v := get(in)
		if set[strings.ToLower(v)] {
			return llmtool.Denied("%s %q is not allowed in %s.", param, v, toolName(c)).Next(next)
		}
		return nil
	}
}

// toolName is the name of the tool c runs.
func toolName(c *llmtool.ReadCtx) string {
	info, _ := c.Value(callinfo.Key{}).(callinfo.Info)
	return info.Tool
}
