package mcpadapter

import (
	"context"
	"encoding/base64"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/llmtool/llmtool"
)

// tools/list. mcp-go answers it, over the one dispatcher it has
// (dispatch.go); the AfterListTools hook puts the requested page of the
// caller's listing in its result, with the next cursor, paginated as
// mcp-go paginates (paginate).
//
// A listing is the registry's answer (Registry.List) for the caller,
// converted and sorted once: the cache is looked up by that answer, so it
// is never staler than the registry. When the registry returns the same
// slice as before (no Authorizer, no per-tool tenant settings, no OAuth
// scopes: the common case) the lookup is constant-time; otherwise the
// answer is compared with the cached one tool by tool. The cache is
// emptied whenever the registry reports a change (tenant.Settings.Subscribe).

// maxListed bounds the tools the listings of a server hold in all (about
// 40 bytes each): beyond it, the cache starts again empty.
const maxListed = 1 << 20

// listing is the tools one caller may list, sorted by name.
type listing struct {
	specs []*llmtool.Spec // the registry's answer it was built from
	names []string        // sorted
	tools []mcp.Tool      // in the order of names
}

// listings caches listings by the registry's answer (shared) and by tenant
// and principal, and the MCP form of every spec.
type listings struct {
	mu     sync.Mutex
	shared map[sliceID]*listing // by the identity of Registry.List's slice
	keyed  map[string]*listing  // by tenant and principal
	conv   map[*llmtool.Spec]mcp.Tool
	held   int // the tools the listings hold
}

// sliceID identifies a slice Registry.List returned: the registry returns
// the same slice while nothing changes and no filter applies per caller.
type sliceID struct {
	first **llmtool.Spec // the address of its first element
	n     int
}

// reset forgets every listing; the registry reported a change.
func (l *listings) reset() {
	l.mu.Lock()
	l.shared, l.keyed, l.conv, l.held = nil, nil, nil, 0
	l.mu.Unlock()
}

// get returns the listing of specs, the registry's answer for key.
func (l *listings) get(key string, specs []*llmtool.Spec) *listing {
	var id sliceID
	if len(specs) > 0 {
		id = sliceID{&specs[0], len(specs)}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls := l.shared[id]; ls != nil && len(ls.specs) == len(specs) && (len(specs) == 0 || &ls.specs[0] == &specs[0]) {
		return ls
	}
	if ls := l.keyed[key]; ls != nil && slices.Equal(ls.specs, specs) {
		return ls
	}
	ls := l.build(specs)
	if l.held += len(specs); l.held > maxListed || l.shared == nil {
		l.shared, l.keyed, l.held = make(map[sliceID]*listing), make(map[string]*listing), len(specs)
	}
	// The registry hands the same slice to every caller it does not
	// filter for, whatever their tenant and principal: that slice is found
	// by its identity; one built for a caller, by tenant and principal.
	l.shared[id], l.keyed[key] = ls, ls
	return ls
}

// build converts and sorts specs. Called with l.mu held.
func (l *listings) build(specs []*llmtool.Spec) *listing {
	if l.conv == nil {
		l.conv = make(map[*llmtool.Spec]mcp.Tool, len(specs))
	}
	sorted := slices.Clone(specs)
	slices.SortFunc(sorted, func(a, b *llmtool.Spec) int { return strings.Compare(a.Name, b.Name) })
	ls := &listing{specs: specs, names: make([]string, len(sorted)), tools: make([]mcp.Tool, len(sorted))}
	for i, sp := range sorted {
		t, ok := l.conv[sp]
		if !ok {
			t = convertSpec(sp)
			l.conv[sp] = t
		}
		ls.names[i], ls.tools[i] = sp.Name, t
	}
	return ls
}

// paginate returns the items after cursor, at most n, and the cursor of
// the next page, as mcp-go's listByPagination does: names are the items'
// names, sorted; the cursor is the last name of the page before,
// base64-encoded (mcp-go answers one that is not base64 with -32602
// before the list hooks run); a full page has a next cursor.
func paginate[T any](items []T, names []string, cursor mcp.Cursor, n int) ([]T, mcp.Cursor) {
	start := 0
	if cursor != "" {
		c, _ := base64.StdEncoding.DecodeString(string(cursor))
		start = sort.Search(len(names), func(i int) bool { return names[i] > string(c) })
	}
	end := min(start+n, len(items))
	page := items[start:end:end]
	if len(page) < n {
		return page, ""
	}
	return page, mcp.Cursor(base64.StdEncoding.EncodeToString([]byte(names[end-1])))
}

// paginateSorted sorts items by name and paginates them.
func paginateSorted[T any](items []T, name func(T) string, cursor mcp.Cursor, n int) ([]T, mcp.Cursor) {
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = name(it)
	}
	return paginate(items, names, cursor, n)
}

// listed returns the caller's listing: the registry's answer for the
// tenant and principal of ctx.
func (s *Server) listed(ctx context.Context) *listing {
	ctx = s.callContext(ctx)
	return s.listings.get(listingKey(llmtool.TenantFrom(ctx), llmtool.PrincipalFrom(ctx)), s.specs(ctx, nil))
}

// afterListTools puts the requested page of the caller's listing in
// mcp-go's tools/list result.
func (s *Server) afterListTools(ctx context.Context, _ any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	ls := s.listed(ctx)
	res.Tools, res.NextCursor = paginate(ls.tools, ls.names, req.Params.Cursor, s.cfg.PageSize)
}

// listingKey identifies a caller's listing: the tenant and everything of
// the principal an Authorizer or OAuth scopes may look at.
func listingKey(tenant string, p *llmtool.Principal) string {
	var b strings.Builder
	b.WriteString(tenant)
	if p == nil {
		return b.String()
	}
	field := func(s string) {
		b.WriteByte(0)
		b.WriteString(s)
	}
	field("p")
	field(p.ID)
	field(p.Name)
	field(strings.Join(p.Roles, "\x01"))
	keys := make([]string, 0, len(p.Attrs))
	for k := range p.Attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field(k + "\x01" + p.Attrs[k])
	}
	if p.Scopes != nil {
		field("s")
		field(strings.Join(p.Scopes, "\x01"))
	}
	return b.String()
}
