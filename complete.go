package llmtool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// maxCompletions bounds the values Complete returns, as MCP's
// completion/complete does.
const maxCompletions = 100

// Complete returns values for the argument arg of the named resource
// template, prompt or tool that start with prefix, at most 100, for a
// client completing what a person types:
//
//   - an argument with an enum (enum tag) completes from its values;
//   - an argument that references an entity kind (ref tag) completes
//     through the kind's Entity.Complete, in a read snapshot as ctx's
//     principal, without the IDs of protected entities or of those the
//     principal may not read (Entity.MayRead);
//   - any other argument completes to nothing.
//
// The policy of calls applies: a name the caller may not use completes
// nothing and returns the refusal, as Invoke would. An unknown name or
// argument is an error wrapping ErrUnknownTool or KindInvalidArgs.
func (r *Registry) Complete(ctx context.Context, name, arg, prefix string) ([]string, error) {
	e, err := r.find(ctx, name)
	if err != nil {
		return nil, err
	}
	if _, err := r.admit(ctx, e); err != nil {
		return nil, err
	}
	p := param(e.tool, arg)
	if p == nil {
		names := make([]string, len(e.tool.spec.Params))
		for i, q := range e.tool.spec.Params {
			names[i] = q.Name
		}
		next := "It takes no arguments."
		if len(names) > 0 {
			next = "Complete one of its arguments: " + strings.Join(names, ", ") + "."
		}
		return nil, InvalidArgs("%s %q has no argument %q.", e.tool.kind, name, arg).Next(next)
	}
	values := []string{}
	switch {
	case p.Enum != nil:
		for _, raw := range p.Enum {
			var v any
			if json.Unmarshal([]byte(raw), &v) != nil {
				continue
			}
			s := fmt.Sprint(v)
			if strings.HasPrefix(s, prefix) && len(values) < maxCompletions {
				values = append(values, s)
			}
		}
	case p.Ref != "":
		d, ok := r.entityMap()[p.Ref]
		if !ok || d.entity.Complete == nil {
			return values, nil
		}
		args, _ := json.Marshal(completeIn{Kind: p.Ref, Prefix: prefix})
		var res Result
		out, _, err := r.exec(ctx, completeTool, args, &prepared{}, &res)
		if err != nil {
			return nil, err
		}
		var co completeOut
		if err := json.Unmarshal(out, &co); err != nil {
			return nil, err
		}
		values = co.Values
	}
	return values, nil
}

type completeIn struct {
	Kind   string `json:"kind"`
	Prefix string `json:"prefix"`
}

type completeOut struct {
	Values []string `json:"values"`
}

// completeTool runs an entity kind's Complete in a read snapshot and keeps
// what the principal may see. Complete calls it directly; it is not
// registered, so no model can call it.
var completeTool = Read("llmtool_complete", "Complete entity IDs.", func(c *ReadCtx, in completeIn) (completeOut, error) {
	d := c.call.reg.entityMap()[in.Kind]
	e := d.entity
	ids, err := e.Complete(c, in.Prefix, maxCompletions)
	if err != nil {
		return completeOut{}, fmt.Errorf("llmtool: entity %s: Complete: %w", e.Kind, err)
	}
	out := completeOut{Values: make([]string, 0, min(len(ids), maxCompletions))}
	for _, id := range ids {
		if len(out.Values) == maxCompletions {
			break
		}
		if !strings.HasPrefix(id, in.Prefix) {
			continue
		}
		if e.Protected != nil {
			if p, err := e.Protected(c, id); err != nil || p {
				continue
			}
		}
		if e.MayRead != nil {
			if ok, err := e.MayRead(c, id); err != nil || !ok {
				continue
			}
		}
		out.Values = append(out.Values, id)
	}
	return out, nil
})
