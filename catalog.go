package llmtool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ManTool is the name of the built-in man tool.
//
// The man catalog keeps the descriptions sent with every request short: a
// model that needs more calls the built-in read tool "man".
//
//   - man with no arguments lists the tools this scope and principal may
//     call, grouped by category ("General" when a tool has none) in the
//     order categories first appear, one line each (the tool's Summary, else
//     the first sentence of its description), then the reference pages the
//     host added with AddManPage.
//   - man {"name": "<tool>"} shows NAME, SYNOPSIS and OPTIONS generated from
//     the input schema (parameters in declaration order, with type,
//     required, default and allowed values), then DESCRIPTION, then the
//     tool's ManPage, whose EXAMPLES section package lint requires.
//   - man {"name": "<page>"} shows a reference page.
//   - An unknown name is answered with the closest names and how to list
//     all. Tools the scope may not call are unknown to man, as to List.
//
// NewRegistry registers man in module "llmtool"; listings show it after the
// host's tools. To opt out, switch it off (reg.SetEnabled("man", false)) or
// register a tool of your own named "man", which replaces it.
const ManTool = "man"

// catalog holds a registry's reference pages.
type catalog struct {
	mu    sync.RWMutex
	pages map[string]string
	order []string
}

// AddManPage adds a reference page that man lists after the tools and shows
// by name, such as a search syntax reference. Its first non-empty line is
// its summary in the catalog. Adding a page under an existing page's name
// replaces it; a tool of the same name takes precedence over the page.
func (r *Registry) AddManPage(name, text string) error {
	if name = strings.TrimSpace(name); name == "" {
		return fmt.Errorf("llmtool: AddManPage: the page needs a name")
	}
	c := &r.cat
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil {
		c.pages = make(map[string]string)
	}
	if _, ok := c.pages[name]; !ok {
		c.order = append(c.order, name)
	}
	c.pages[name] = text
	return nil
}

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
	friendly, _ := r.Message(MessageKey(ManTool), "en")
	t := Read(ManTool, "Show the manual: with no name, the tools you can call; with a tool's name, its options and examples.",
		func(c *ReadCtx, in manIn) (Rich, error) {
			text, err := c.call.reg.man(c, c, in.Name)
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

// Man returns what the man tool answers for ctx's scope and principal: the
// catalog when name is "", else the page of the named tool or reference
// page. Chat UIs can use it for a help command.
func (r *Registry) Man(ctx context.Context, name string) (string, error) {
	err := r.resolve(ctx)
	text, merr := r.man(ctx, nil, name)
	if merr != nil {
		return "", merr
	}
	return text, err
}

func (r *Registry) man(ctx context.Context, q querier, name string) (string, error) {
	specs := r.visible(ctx, q, r.allSpecs())
	name = strings.TrimSpace(name)
	if name == "" {
		return r.manCatalog(specs), nil
	}
	for _, s := range specs {
		if s.Name == name {
			return r.manTool(s), nil
		}
	}
	r.cat.mu.RLock()
	text, ok := r.cat.pages[name]
	names := append([]string(nil), r.cat.order...)
	r.cat.mu.RUnlock()
	if ok {
		return text, nil
	}
	for _, s := range specs {
		names = append(names, s.Name)
	}
	next := "Call man with no arguments to list all tools."
	if near := Closest(name, names, 3); len(near) > 0 {
		next = "Did you mean " + quoteOr(near) + "? " + next
	}
	return "", NotFound("No manual entry for %q.", name).Next(next)
}

func (r *Registry) manCatalog(specs []*Spec) string {
	var b strings.Builder
	type group struct {
		name  string
		specs []*Spec
	}
	var groups []*group
	for _, s := range specs {
		if s.Name == ManTool && s.Module == "llmtool" {
			continue
		}
		cat := s.Category
		if cat == "" {
			cat = "General"
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.name == cat })
		if i < 0 {
			groups = append(groups, &group{name: cat})
			i = len(groups) - 1
		}
		groups[i].specs = append(groups[i].specs, s)
	}
	if len(groups) == 0 {
		b.WriteString("No tools are available here.\n")
	} else {
		b.WriteString("Tools you can call, by category. For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n")
	}
	for _, g := range groups {
		b.WriteString("\n" + g.name + "\n")
		w := 0
		for _, s := range g.specs {
			w = max(w, len(s.Name))
		}
		for _, s := range g.specs {
			fmt.Fprintf(&b, "  %-*s  %s\n", w, s.Name, summaryOf(s))
		}
	}
	r.cat.mu.RLock()
	defer r.cat.mu.RUnlock()
	if len(r.cat.order) > 0 {
		b.WriteString("\nReference pages (call man with {\"name\": \"<page>\"}):\n")
		w := 0
		for _, n := range r.cat.order {
			w = max(w, len(n))
		}
		for _, n := range r.cat.order {
			fmt.Fprintf(&b, "  %-*s  %s\n", w, n, firstLine(r.cat.pages[n]))
		}
	}
	return b.String()
}

// summaryOf is the tool's catalog line: its summary, else its
// description's first sentence.
func summaryOf(s *Spec) string {
	if s.Summary != "" {
		return s.Summary
	}
	return firstSentence(s.Description)
}

func firstSentence(text string) string {
	text = strings.TrimSpace(text)
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '.', '!', '?':
			if i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' {
				return text[:i+1]
			}
		case '\n':
			return strings.TrimSpace(text[:i])
		}
	}
	return text
}

func firstLine(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// manTool renders the page of one tool.
func (r *Registry) manTool(s *Spec) string {
	var b strings.Builder
	b.WriteString("NAME\n    " + s.Name + " - " + summaryOf(s) + "\n\nSYNOPSIS\n    " + s.Name)
	for _, p := range s.Params {
		if p.Required {
			b.WriteString(" " + p.Name)
		} else {
			b.WriteString(" [" + p.Name + "]")
		}
	}
	b.WriteString("\n")
	if len(s.Params) == 0 {
		b.WriteString("    Arguments: none; send {}.\n")
	} else {
		r.mu.RLock()
		e := r.tools[s.Name]
		r.mu.RUnlock()
		if e != nil {
			b.WriteString("    Arguments: one JSON object, such as " + e.tool.example() + ".\n")
		}
		b.WriteString("\nOPTIONS\n")
		for _, p := range s.Params {
			attrs := []string{p.Type}
			if p.Required {
				attrs = append(attrs, "required")
			} else {
				attrs = append(attrs, "optional")
			}
			if p.Default != nil {
				attrs = append(attrs, "default "+string(p.Default))
			}
			if len(p.Enum) > 0 {
				attrs = append(attrs, "one of "+strings.Join(p.Enum, ", "))
			}
			b.WriteString("    " + p.Name + " (" + strings.Join(attrs, ", ") + ")\n")
			if p.Description != "" {
				b.WriteString(indent(p.Description, "        ") + "\n")
			}
		}
	}
	b.WriteString("\nDESCRIPTION\n" + indent(s.Description, "    ") + "\n")
	if page := strings.TrimSpace(s.ManPage); page != "" {
		b.WriteString("\n" + page + "\n")
	}
	return b.String()
}

func indent(text, prefix string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = prefix + strings.TrimSpace(l)
		} else {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// setup gives a new registry its defaults and built-in tools.
func (r *Registry) setup() {
	r.pol.ttl.Store(int64(DefaultPolicyCacheTTL))
	r.addBuiltinLocked(r.newManTool())
}
