package llmtool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/llmtool/llmtool/i18n"
	"github.com/llmtool/llmtool/internal/text"
	"github.com/llmtool/llmtool/tenant"
)

// On-demand tools: a large catalog is not sent whole. The tools that
// Options.OnDemand marks stay out of listings until the built-in read tool
// find_tools finds them for a tenant; then that tenant's listings show them,
// and subscribers (the MCP adapter's tools/list_changed) hear of it.

// findToolsTool is the name of the built-in find_tools tool.
const findToolsTool = "find_tools"

// maxLoaded is how many on-demand tools one tenant keeps loaded: past it,
// the tools loaded longest ago leave the listing first (they stay callable
// by name), so a long conversation does not grow its requests back to the
// whole catalog.
const maxLoaded = 64

// defaultFound and maxFound bound how many tools one find_tools call loads.
const (
	defaultFound = 5
	maxFound     = 20
)

type findIn struct {
	Query string `json:"query" desc:"What you want to do, in a few words, such as \"refund an invoice\"." minLength:"1"`
	Limit int    `json:"limit,omitempty" desc:"How many tools to load at most (default 5)." default:"5" minimum:"1" maximum:"20"`
}

const findToolsPage = `find_tools searches the tools that load on demand by their names,
categories, summaries and descriptions, and makes the best matches
callable: they appear in your tool list from the next request on. A
tool found once stays loaded for this conversation's tenant.

EXAMPLES
    {"query": "refund an invoice"}
        Loads up to five tools about refunds and invoices.
    {"query": "export contacts csv", "limit": 2}
        Loads the two best matches.`

// newFindTool defines the find_tools tool of a registry.
func (r *Registry) newFindTool() *Tool {
	var embedded *i18n.Catalog // nil: llmtool's embedded English alone
	friendly, _ := embedded.Lookup(i18n.ToolKey(findToolsTool), "en")
	t := Read(findToolsTool, "Find more tools by what they do and make them callable: only some tools are listed; describe the task in a few words.",
		func(c *ReadCtx, in findIn) (Rich, error) {
			text, err := c.call.reg.findTools(c, admitted(c), in)
			if err != nil {
				return Rich{}, err
			}
			return Rich{Content: []Content{TextContent(text)}}, nil
		},
		Summary("Find tools by what they do and load them"),
		FriendlyName(friendly), ManPage(findToolsPage))
	t.spec.Module = "llmtool"
	return t
}

// demand is a registry's on-demand state.
type demand struct {
	pick func(*Spec) bool // Options.OnDemand; nil: no tool is on demand

	specs atomic.Pointer[demandSpecs] // the on-demand tools switched on, per allSpecs list

	mu      sync.Mutex
	tenants map[string]*loadedSet
}

// demandSpecs is the on-demand tools switched on, with their search index,
// computed once per allSpecs list.
type demandSpecs struct {
	src   *[]*Spec
	specs []*Spec
	docs  []*toolDoc // docs[i] is specs[i]'s
}

// loadedSet is what one tenant has loaded.
type loadedSet struct {
	names []string // oldest first, at most maxLoaded
	ver   uint64   // bumped on every change

	// The tenant's listing, cached for the allSpecs list src at version ver.
	src    *[]*Spec
	srcVer uint64
	list   *[]*Spec
}

// onDemand reports whether Options.OnDemand marks t as loaded on demand.
// llmtool's own tools, resources and prompts never are.
func (r *Registry) onDemand(t *Tool) bool {
	return r.demand.pick != nil && t.kind == kindTool && t.spec.Module != "llmtool" && r.demand.pick(&t.spec)
}

// demandSpecs returns the on-demand tools switched on, in registration
// order, computed once per change of the registry's tools.
func (r *Registry) demandSpecs() *demandSpecs {
	all := r.allSpecs()
	if d := r.demand.specs.Load(); d != nil && d.src == all {
		return d
	}
	d := &demandSpecs{src: all}
	r.mu.RLock()
	for _, e := range r.order {
		if e.onDemand && e.enabled.Load() && e.tool.kind == kindTool {
			s := &e.tool.spec
			d.specs = append(d.specs, s)
			d.docs = append(d.docs, newToolDoc(s))
		}
	}
	r.mu.RUnlock()
	r.demand.specs.Store(d)
	return d
}

// listed returns what List filters for ctx's tenant: the tools switched on
// that are not on demand (all), and the on-demand tools the tenant loaded,
// in registration order with llmtool's own tools last.
func (r *Registry) listed(ctx context.Context, all *[]*Spec) *[]*Spec {
	if r.demand.pick == nil {
		return all
	}
	tenant := TenantFrom(ctx)
	r.demand.mu.Lock()
	defer r.demand.mu.Unlock()
	ls := r.demand.tenants[tenant]
	if ls == nil || len(ls.names) == 0 {
		return all
	}
	if ls.src == all && ls.srcVer == ls.ver {
		return ls.list
	}
	loaded := make(map[string]bool, len(ls.names))
	for _, n := range ls.names {
		loaded[n] = true
	}
	list := make([]*Spec, 0, len(*all)+len(ls.names))
	r.mu.RLock()
	for _, builtin := range []bool{false, true} {
		for _, e := range r.order {
			if e.enabled.Load() && e.builtin == builtin && e.tool.kind == kindTool && (!e.onDemand || loaded[e.tool.spec.Name]) {
				list = append(list, &e.tool.spec)
			}
		}
	}
	r.mu.RUnlock()
	ls.src, ls.srcVer, ls.list = all, ls.ver, &list
	return &list
}

// UnloadTools forgets the on-demand tools tenant loaded with find_tools,
// so that its listings are back to the tools not on demand; subscribers
// hear of the change when there was something to forget. Call it when the
// conversation a tenant stands for ends, or starts over.
//
// What a tenant loaded lives in this registry's memory, per tenant, until
// UnloadTools or the end of the process; it is neither persisted nor
// shared with replicas. A tenant keeps at most 64 tools loaded: past that,
// the tools loaded longest ago leave its listings first. Either way a
// tool that leaves the listing stays callable by its exact name, as every
// on-demand tool is: loading decides what is listed, not what may be
// called, which policy alone decides.
func (r *Registry) UnloadTools(tenant string) {
	r.demand.mu.Lock()
	ls := r.demand.tenants[tenant]
	had := ls != nil && len(ls.names) > 0
	delete(r.demand.tenants, tenant)
	r.demand.mu.Unlock()
	if had {
		r.tenants.Notify(tenant)
	}
}

// loadedNames returns the set of tools tenant loaded.
func (r *Registry) loadedNames(tenant string) map[string]bool {
	r.demand.mu.Lock()
	defer r.demand.mu.Unlock()
	ls := r.demand.tenants[tenant]
	if ls == nil {
		return nil
	}
	m := make(map[string]bool, len(ls.names))
	for _, n := range ls.names {
		m[n] = true
	}
	return m
}

// load marks names loaded for tenant, the most recent last, and reports
// whether the tenant's set of loaded tools changed.
func (r *Registry) load(tenant string, names []string) bool {
	r.demand.mu.Lock()
	defer r.demand.mu.Unlock()
	if r.demand.tenants == nil {
		r.demand.tenants = make(map[string]*loadedSet)
	}
	ls := r.demand.tenants[tenant]
	if ls == nil {
		ls = &loadedSet{}
		r.demand.tenants[tenant] = ls
	}
	before := slices.Clone(ls.names)
	for _, n := range names {
		ls.names = slices.DeleteFunc(ls.names, func(x string) bool { return x == n })
		ls.names = append(ls.names, n)
	}
	if extra := len(ls.names) - maxLoaded; extra > 0 {
		ls.names = slices.Delete(ls.names, 0, extra)
	}
	a, b := slices.Clone(before), slices.Clone(ls.names)
	slices.Sort(a)
	slices.Sort(b)
	if slices.Equal(a, b) {
		return false
	}
	ls.ver++
	return true
}

// findTools answers find_tools for ctx's tenant and principal, by st, the
// tenant's settings (see admitted): the on-demand tools they may call that
// best match the query, now loaded.
func (r *Registry) findTools(ctx context.Context, st *tenant.State, in findIn) (string, error) {
	query := strings.TrimSpace(in.Query)
	limit := in.Limit
	if limit <= 0 {
		limit = defaultFound
	}
	limit = min(limit, maxFound)
	var found []*Spec
	if r.demand.pick != nil {
		d := r.demandSpecs()
		found = rank(queryWords(query), r.visible(ctx, st, &d.specs), d, limit)
	}
	if len(found) == 0 {
		return "", NotFound("No tools match %q.", query).Next("Try other words, or call man for the catalog.")
	}
	names := make([]string, len(found))
	for i, s := range found {
		names[i] = s.Name
	}
	tenant := TenantFrom(ctx)
	if r.load(tenant, names) {
		r.tenants.Notify(tenant)
	}
	var b strings.Builder
	noun := "tools"
	if len(found) == 1 {
		noun = "tool"
	}
	fmt.Fprintf(&b, "Loaded %d %s for %q; call them like any other tool:\n", len(found), noun, query)
	w := 0
	for _, s := range found {
		w = max(w, len(s.Name))
	}
	for _, s := range found {
		fmt.Fprintf(&b, "  %-*s  %s [%s]\n", w, s.Name, summaryLine(s), s.Category)
	}
	b.WriteString("For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n")
	return b.String(), nil
}

// summaryLine is a tool's line in a listing: its summary, else its
// description's first sentence (as the man catalog shows it).
func summaryLine(s *Spec) string {
	if s.Summary != "" {
		return s.Summary
	}
	return text.FirstSentence(s.Description)
}

// The search: words of the query against the words of each tool's name,
// module, category, summary and description, weighted in that order. A
// tool's score counts the query words it matches first, then their
// weights; ties keep registration order. No index beyond the distinct
// words of each tool, and no dependency: a scan of 1,000 tools takes a few
// hundred microseconds (BenchmarkFindToolsRatio), paid once per
// find_tools call, never by listings or other calls.

// Weights of where a query word matched.
const (
	weightName        = 4
	weightCategory    = 3
	weightSummary     = 2
	weightDescription = 1
)

// toolDoc is a tool's distinct words, stemmed, each with the weight of
// the heaviest field it is in, heaviest first.
type toolDoc struct {
	words   []string
	weights []int
}

func newToolDoc(s *Spec) *toolDoc {
	d := &toolDoc{}
	for _, f := range []struct {
		weight int
		text   string
	}{{weightName, s.Name}, {weightCategory, s.Category + " " + s.Module}, {weightSummary, s.Summary}, {weightDescription, s.Description}} {
		for _, w := range stems(f.text) {
			if !slices.Contains(d.words, w) {
				d.words = append(d.words, w)
				d.weights = append(d.weights, f.weight)
			}
		}
	}
	return d
}

// match returns the weight of the heaviest word of d that w matches: the
// same word, or (both of four letters or more) one the prefix of the
// other; 0 if none.
func (d *toolDoc) match(w string) int {
	for i, t := range d.words {
		if t == w || (min(len(t), len(w)) >= 4 && (strings.HasPrefix(t, w) || strings.HasPrefix(w, t))) {
			return d.weights[i]
		}
	}
	return 0
}

// rank returns at most limit of specs, best first, that match at least one
// of words. specs is a subsequence of all.specs (what the caller may
// call), so each spec's doc is found by walking all.specs alongside.
func rank(words []string, specs []*Spec, all *demandSpecs, limit int) []*Spec {
	if len(words) == 0 {
		return nil
	}
	type scored struct {
		s              *Spec
		i              int
		matched, score int
	}
	var hits []scored
	j := 0
	for i, s := range specs {
		for j < len(all.specs) && all.specs[j] != s {
			j++
		}
		if j == len(all.specs) {
			break
		}
		d := all.docs[j]
		h := scored{s: s, i: i}
		for _, w := range words {
			if wt := d.match(w); wt > 0 {
				h.matched++
				h.score += wt
			}
		}
		if h.matched > 0 {
			hits = append(hits, h)
		}
	}
	slices.SortFunc(hits, func(a, b scored) int {
		if a.matched != b.matched {
			return b.matched - a.matched
		}
		if a.score != b.score {
			return b.score - a.score
		}
		return a.i - b.i
	})
	out := make([]*Spec, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, h.s)
	}
	return out
}

// stopWords carry no meaning for a search.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "to": true, "of": true, "for": true, "and": true, "or": true,
	"in": true, "on": true, "with": true, "by": true, "from": true, "my": true, "me": true, "i": true,
	"is": true, "it": true, "all": true, "some": true, "tool": true, "tools": true, "that": true, "this": true,
}

// queryWords returns the distinct stems of a query's words, stop words
// left out.
func queryWords(q string) []string {
	var out []string
	for _, w := range stems(q) {
		if !stopWords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// stems splits text into lower-case words (at anything not a letter or
// digit, snake_case and camelCase included) and stems each.
func stems(text string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, stem(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, c := range text {
		switch {
		case unicode.IsLetter(c) || unicode.IsDigit(c):
			if unicode.IsUpper(c) && prevLower {
				flush()
			}
			prevLower = unicode.IsLower(c)
			cur = append(cur, unicode.ToLower(c))
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return words
}

// stem strips the commonest English endings, so that "invoices" finds
// "invoice" and "refunded" finds "refund".
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		return w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}
