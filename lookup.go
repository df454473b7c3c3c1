package llmtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmtool/llmtool/internal/text"
)

// Lookups: from the name or URI of a call to the tool, resource or prompt
// that serves it.

// find finds the entry of any kind named name, running pending loaders if
// the name is not known yet.
func (r *Registry) find(ctx context.Context, name string) (*entry, error) {
	r.mu.RLock()
	e := r.tools[name]
	r.mu.RUnlock()
	if e != nil {
		return e, nil
	}
	err := r.resolve(ctx)
	r.mu.RLock()
	e = r.tools[name]
	r.mu.RUnlock()
	if e != nil {
		return e, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, r.unknown(ctx, name)
}

// findKind finds the tool or prompt name names; a name of another kind
// (a resource's, or a tool's for a prompt) is unknown as this kind.
func (r *Registry) findKind(ctx context.Context, name string, kind toolKind) (*entry, error) {
	e, err := r.find(ctx, name)
	if kind == kindTool {
		if e != nil && e.tool.kind != kindTool {
			return nil, r.unknown(ctx, name)
		}
		return e, err
	}
	if e != nil && e.tool.kind == kind {
		return e, nil
	}
	if err != nil && !errors.Is(err, ErrUnknownTool) {
		return nil, err
	}
	return nil, &Error{Kind: KindNotFound, Message: fmt.Sprintf("Unknown %s %q.", kind, name),
		NextAction: fmt.Sprintf("Use one of the %ss the server lists.", kind), err: ErrUnknownTool}
}

// unknown reports a name the registry does not know, suggesting the
// closest names among the tools the caller's tenant may call.
func (r *Registry) unknown(ctx context.Context, name string) error {
	specs, _ := r.List(ctx, nil)
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		names = append(names, s.Name)
	}
	msg := fmt.Sprintf("Unknown tool %q.", name)
	next := "Call one of the tools you were given."
	if near := closest(name, names, 3); len(near) > 0 {
		next = "Did you mean " + text.QuoteOr(near) + "?"
	}
	return &Error{Kind: KindNotFound, Message: msg, NextAction: next, err: ErrUnknownTool}
}

// findResource finds the resource uri names, after running pending loaders:
// the one whose fixed URI is uri, else the first, in registration order,
// whose template matches it. It returns the call's arguments: the
// template's variables as a JSON object.
func (r *Registry) findResource(ctx context.Context, uri string) (*entry, []byte, error) {
	lerr := r.resolve(ctx)
	r.mu.RLock()
	var found *entry
	var vars map[string]string
	for _, fixed := range []bool{true, false} {
		for _, e := range r.order {
			t := e.tool
			if t.kind != kindResource || (len(t.tmpl.vars) == 0) != fixed {
				continue
			}
			if v, ok := t.tmpl.match(uri); ok {
				found, vars = e, v
				break
			}
		}
		if found != nil {
			break
		}
	}
	r.mu.RUnlock()
	if found == nil {
		if lerr != nil {
			return nil, nil, lerr
		}
		return nil, nil, &Error{Kind: KindNotFound, Message: fmt.Sprintf("No resource has the URI %q.", uri),
			NextAction: "Read a resource the server lists, or a URI that matches one of its templates.", err: ErrUnknownTool}
	}
	args, err := json.Marshal(vars)
	return found, args, err
}
