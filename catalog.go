package llmtool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/llmtool/llmtool/i18n"
	"github.com/llmtool/llmtool/internal/man"
	"github.com/llmtool/llmtool/internal/text"
	"github.com/llmtool/llmtool/tenant"
)

// manTool is the name of the built-in man tool.
const manTool = "man"

type manIn struct {
	Name string `json:"name,omitempty" desc:"Name of a tool or reference page; omit it for the catalog."`
}

const manPage = `The catalog lists the tools you can call here, one line each, by
category, then reference pages. A tool's page shows how to call it: its
options with types and defaults, its description and examples.

EXAMPLES
    {}
        The catalog.
    {"name": "create_note"}
        The page of the tool create_note.`

// newManTool defines the man tool of a registry.
func (r *Registry) newManTool() *Tool {
	var embedded *i18n.Catalog // nil: llmtool's embedded English alone
	friendly, _ := embedded.Lookup(i18n.ToolKey(manTool), "en")
	t := Read(manTool, "Show the manual: with no name, the tools you can call; with a tool's name, its options and examples.",
		func(c *ReadCtx, in manIn) (Rich, error) {
			text, err := c.call.reg.man(c, admitted(c), in.Name)
			if err != nil {
				return Rich{}, err
			}
			return Rich{Content: []Content{TextContent(text)}}, nil
		},
		Summary("Show the catalog of tools, or one tool's manual page"),
		FriendlyName(friendly), ManPage(manPage))
	t.spec.Module = "llmtool"
	return t
}

// addBuiltinLocked registers one of llmtool's own tools.
func (r *Registry) addBuiltinLocked(t *Tool) {
	e := &entry{tool: t, builtin: true}
	e.enabled.Store(true)
	r.tools[t.spec.Name] = e
	r.order = append(r.order, e)
	r.specs.Store(nil)
}

// dropBuiltinLocked removes a built-in tool that a host tool of the same
// name replaces.
func (r *Registry) dropBuiltinLocked(name string) {
	if e, ok := r.tools[name]; ok && e.builtin {
		delete(r.tools, name)
		r.order = slices.DeleteFunc(r.order, func(x *entry) bool { return x == e })
	}
}

// man answers the man tool for ctx's tenant and principal, by st, the
// tenant's settings (see admitted): the catalog when name is "", else the
// page of the named tool or reference page.
func (r *Registry) man(ctx context.Context, st *tenant.State, name string) (string, error) {
	specs := r.visible(ctx, st, r.listed(ctx, r.allSpecs()))
	name = strings.TrimSpace(name)
	if name == "" {
		tools := make([]man.Tool, 0, len(specs))
		for _, s := range specs {
			if s.Name == manTool && s.Module == "llmtool" {
				continue
			}
			tools = append(tools, manEntry(s, ""))
		}
		return man.Catalog(tools, r.pages) + r.onDemandCatalog(ctx, st, specs), nil
	}
	if r.demand.pick != nil {
		// A tool's page is shown whether or not the tenant loaded it:
		// loading decides what is listed, not what may be called.
		listed := make(map[*Spec]bool, len(specs))
		for _, s := range specs {
			listed[s] = true
		}
		specs = slices.Clip(specs)
		for _, s := range r.visible(ctx, st, &r.demandSpecs().specs) {
			if !listed[s] {
				specs = append(specs, s)
			}
		}
	}
	for _, s := range specs {
		if s.Name == name {
			r.mu.RLock()
			e := r.tools[s.Name]
			r.mu.RUnlock()
			example := ""
			if e != nil && len(s.Params) > 0 {
				example = e.tool.example()
			}
			return man.ToolPage(manEntry(s, example)), nil
		}
	}
	names := make([]string, 0, len(r.pages)+len(specs))
	for _, p := range r.pages {
		if p.Name == name {
			return p.Text, nil
		}
		names = append(names, p.Name)
	}
	for _, s := range specs {
		names = append(names, s.Name)
	}
	next := "Call man with no arguments to list all tools."
	if near := closest(name, names, 3); len(near) > 0 {
		next = "Did you mean " + text.QuoteOr(near) + "? " + next
	}
	return "", NotFound("No manual entry for %q.", name).Next(next)
}

// manEntry is what the manual shows of a tool.
func manEntry(s *Spec, example string) man.Tool {
	t := man.Tool{Name: s.Name, Category: s.Category, Summary: s.Summary, Description: s.Description,
		Example: example, ManPage: s.ManPage}
	for _, p := range s.Params {
		t.Params = append(t.Params, man.Param{Name: p.Name, Type: p.Type, Required: p.Required,
			Default: string(p.Default), Enum: p.Enum, Description: p.Description})
	}
	return t
}

// setup gives a new registry its defaults, its built-in tools and the
// reference pages of opts.
func (r *Registry) setup(opts *Options) error {
	r.addBuiltinLocked(r.newManTool())
	if opts == nil {
		return nil
	}
	if opts.OnDemand != nil {
		r.demand.pick = opts.OnDemand
		r.addBuiltinLocked(r.newFindTool())
	}
	for name, text := range opts.ManPages {
		if name = strings.TrimSpace(name); name == "" {
			return fmt.Errorf("llmtool: Options.ManPages: a page needs a name")
		}
		if slices.ContainsFunc(r.pages, func(p man.Page) bool { return p.Name == name }) {
			return fmt.Errorf("llmtool: Options.ManPages: two pages are named %q", name)
		}
		r.pages = append(r.pages, man.Page{Name: name, Text: text})
	}
	slices.SortFunc(r.pages, func(a, b man.Page) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

// onDemandCatalog is the man catalog's last section when some tools load
// on demand: how many the caller may call that are not listed yet, by
// category, and how to load them. listed is what the catalog showed, by
// st, the tenant's settings.
func (r *Registry) onDemandCatalog(ctx context.Context, st *tenant.State, listed []*Spec) string {
	if r.demand.pick == nil {
		return ""
	}
	r.mu.RLock()
	find := r.tools[findToolsTool]
	r.mu.RUnlock()
	if find == nil || !find.builtin || !find.enabled.Load() {
		return "" // switched off or replaced: the sentence would send the model astray
	}
	shown := make(map[*Spec]bool, len(listed))
	for _, s := range listed {
		shown[s] = true
	}
	var cats []string
	count := map[string]int{}
	n := 0
	for _, s := range r.visible(ctx, st, &r.demandSpecs().specs) {
		if shown[s] {
			continue
		}
		if count[s.Category] == 0 {
			cats = append(cats, s.Category)
		}
		count[s.Category]++
		n++
	}
	if n == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nMore tools load on demand (%d), by category; call find_tools with what you want to do to load the best matches:\n", n)
	for _, c := range cats {
		fmt.Fprintf(&b, "  %s (%d)\n", c, count[c])
	}
	return b.String()
}
