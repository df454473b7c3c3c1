// Package man renders the manual that llmtool's built-in man tool serves:
// a catalog of tools grouped by category, followed by reference pages, and
// one page per tool generated from its parameters.
//
// It works on plain data ([Tool], [Param], [Page]) and knows nothing of
// registries, tenants or transactions: package llmtool decides what the
// caller may see and passes exactly that in, so the catalog never lists a
// tool the caller may not call.
//
// # The catalog
//
// [Catalog] lists the tools by category, in the order categories first
// appear ("General" for a tool without one), one line each: the tool's
// Summary, else the first sentence of its Description. The reference pages
// follow, one line each: the first non-empty line of the page.
//
// # A tool's page
//
// [ToolPage] shows NAME, SYNOPSIS and OPTIONS generated from the
// parameters (in declaration order, with type, required, default and
// allowed values), then DESCRIPTION, then the tool's own ManPage text,
// which should have an EXAMPLES section.
package man

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmtool/llmtool/internal/text"
)

// Tool is what the manual shows of one tool.
type Tool struct {
	Name        string
	Category    string // the catalog group; "" lists the tool under "General"
	Summary     string // the catalog line; "" uses Description's first sentence
	Description string
	Params      []Param // top-level arguments in declaration order
	// Example is an argument object that SYNOPSIS shows when the tool has
	// parameters, such as {"query": "..."}; "" shows none.
	Example string
	// ManPage is the tool's own documentation, shown after DESCRIPTION.
	ManPage string
}

// Param is one top-level argument of a tool.
type Param struct {
	Name        string
	Type        string // JSON Schema type, such as "string"
	Required    bool
	Default     string   // the default as JSON text, such as "10"; "" for none
	Enum        []string // the allowed values as JSON texts; nil for any
	Description string
}

// Page is a reference page, such as a search syntax, that the catalog lists
// after the tools. Its first non-empty line is its catalog line.
type Page struct {
	Name string
	Text string
}

// Catalog renders the catalog of tools and reference pages, in the order
// given.
func Catalog(tools []Tool, pages []Page) string {
	var b strings.Builder
	type group struct {
		name  string
		tools []*Tool
	}
	var groups []*group
	for i := range tools {
		t := &tools[i]
		cat := t.Category
		if cat == "" {
			cat = "General"
		}
		k := slices.IndexFunc(groups, func(g *group) bool { return g.name == cat })
		if k < 0 {
			groups = append(groups, &group{name: cat})
			k = len(groups) - 1
		}
		groups[k].tools = append(groups[k].tools, t)
	}
	if len(groups) == 0 {
		b.WriteString("No tools are available here.\n")
	} else {
		b.WriteString("Tools you can call, by category. For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n")
	}
	for _, g := range groups {
		b.WriteString("\n" + g.name + "\n")
		w := 0
		for _, t := range g.tools {
			w = max(w, len(t.Name))
		}
		for _, t := range g.tools {
			fmt.Fprintf(&b, "  %-*s  %s\n", w, t.Name, t.summary())
		}
	}
	if len(pages) > 0 {
		b.WriteString("\nReference pages (call man with {\"name\": \"<page>\"}):\n")
		w := 0
		for _, p := range pages {
			w = max(w, len(p.Name))
		}
		for _, p := range pages {
			fmt.Fprintf(&b, "  %-*s  %s\n", w, p.Name, firstLine(p.Text))
		}
	}
	return b.String()
}

// ToolPage renders the page of one tool.
func ToolPage(t Tool) string {
	var b strings.Builder
	b.WriteString("NAME\n    " + t.Name + " - " + t.summary() + "\n\nSYNOPSIS\n    " + t.Name)
	for _, p := range t.Params {
		if p.Required {
			b.WriteString(" " + p.Name)
		} else {
			b.WriteString(" [" + p.Name + "]")
		}
	}
	b.WriteString("\n")
	if len(t.Params) == 0 {
		b.WriteString("    Arguments: none; send {}.\n")
	} else {
		if t.Example != "" {
			b.WriteString("    Arguments: one JSON object, such as " + t.Example + ".\n")
		}
		b.WriteString("\nOPTIONS\n")
		for _, p := range t.Params {
			attrs := []string{p.Type}
			if p.Required {
				attrs = append(attrs, "required")
			} else {
				attrs = append(attrs, "optional")
			}
			if p.Default != "" {
				attrs = append(attrs, "default "+p.Default)
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
	b.WriteString("\nDESCRIPTION\n" + indent(t.Description, "    ") + "\n")
	if page := strings.TrimSpace(t.ManPage); page != "" {
		b.WriteString("\n" + page + "\n")
	}
	return b.String()
}

// summary is the tool's catalog line: its summary, else its description's
// first sentence.
func (t *Tool) summary() string {
	if t.Summary != "" {
		return t.Summary
	}
	return text.FirstSentence(t.Description)
}

func firstLine(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
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
