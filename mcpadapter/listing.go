package mcpadapter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/llmtool/llmtool"
)

// tools/list at scale. mcp-go lists the tools registered with it: it copies
// and sorts all of them for every page, then runs the tool filters and cuts
// the page. The adapter registers with mcp-go only the tools that were
// called (beforeCall), and its filter hands mcp-go the requested page of
// the caller's listing, which is kept converted and sorted by name per
// scope and principal. mcp-go then paginates that page exactly as it
// would the whole listing: same tools, same nextCursor, same errors for a
// cursor it cannot decode.
//
// A listing is the registry's answer (Registry.List) for the caller,
// converted once: the cache is looked up by that answer, so it is never
// staler than the registry. When the registry returns the same slice as
// before (no Authorizer, no per-tool scope settings, no OAuth scopes: the
// common case) the lookup is constant-time; otherwise the answer is
// compared with the cached one tool by tool. The cache is emptied whenever
// the registry reports a change (Registry.Tenants().Subscribe).
//
// A listing also keeps each page's tools encoded to JSON, as mcp-go would
// encode them. Where the adapter's transports write mcp-go's answers
// (Handler, StatelessHandler, ServeStdio: the requests that carry
// callNotes), the last AfterListTools hook (afterList) moves the page out
// of mcp-go's result into the request's notes, so that the transport
// encodes a result whose "tools" is empty, and notes.rewrite splices the
// page's bytes back in: the same bytes, without encoding a tool. Every
// hook runs as before, and the adapter's and the host's hooks registered
// up to New see the page's tools; if hooks were added after New (they run
// after afterList), or the host added tool filters, or the request came
// without notes (an in-process client on the mcp-go server), mcp-go
// encodes the page itself.

// maxListed bounds the tools the listings of a server hold in all (about
// 40 bytes each, plus, once listed, the tool's JSON in its page's encoded
// bytes: a listing keeps only the pages its own cursors start, so one
// copy): beyond it, the cache starts again empty.
const maxListed = 1 << 20

// listing is the tools one caller may list, sorted by name.
type listing struct {
	specs []*llmtool.Spec // the registry's answer it was built from
	names []string        // sorted
	tools []*mcp.Tool     // in the order of names

	mu  sync.Mutex
	enc map[[2]int][]byte // {first index, length} → the page's tools as JSON
}

// listings caches listings by the registry's answer (shared) and by scope
// and principal, and the MCP form of every spec.
type listings struct {
	mu     sync.Mutex
	shared map[sliceID]*listing // by the identity of Registry.List's slice
	keyed  map[string]*listing  // by scope and principal
	conv   map[*llmtool.Spec]*mcp.Tool
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
	if ls := l.shared[id]; ls != nil && sameSlice(ls.specs, specs) {
		return ls
	}
	if ls := l.keyed[key]; ls != nil && slices.Equal(ls.specs, specs) {
		return ls
	}
	ls := l.build(specs)
	if l.held += len(specs); l.held > maxListed {
		l.shared, l.keyed, l.held = nil, nil, len(specs)
	}
	if l.shared == nil {
		l.shared, l.keyed = make(map[sliceID]*listing), make(map[string]*listing)
	}
	// The registry hands the same slice to every caller it does not
	// filter for, whatever their scope and principal: that slice is found
	// by its identity; one built for a caller, by scope and principal.
	l.shared[id], l.keyed[key] = ls, ls
	return ls
}

// sameSlice reports whether a and b are the same slice (same array, same
// length), which the registry returns while nothing changes.
func sameSlice(a, b []*llmtool.Spec) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// build converts and sorts specs. Called with l.mu held.
func (l *listings) build(specs []*llmtool.Spec) *listing {
	if l.conv == nil {
		l.conv = make(map[*llmtool.Spec]*mcp.Tool, len(specs))
	}
	ls := &listing{specs: specs, names: make([]string, len(specs)), tools: make([]*mcp.Tool, len(specs))}
	order := make([]int, len(specs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(specs[a].Name, specs[b].Name) })
	for i, k := range order {
		sp := specs[k]
		t := l.conv[sp]
		if t == nil {
			c := convertSpec(sp)
			t = &c
			l.conv[sp] = t
		}
		ls.names[i], ls.tools[i] = sp.Name, t
	}
	return ls
}

// after returns the index of the first tool listed after cursor, as mcp-go
// finds it; ok is false for a cursor that is not base64.
func (ls *listing) after(cursor mcp.Cursor) (int, bool) {
	if cursor == "" {
		return 0, true
	}
	c, err := base64.StdEncoding.DecodeString(string(cursor))
	if err != nil {
		return 0, false
	}
	name := string(c)
	return sort.Search(len(ls.names), func(i int) bool { return ls.names[i] > name }), true
}

// has reports whether the listing holds the named tool.
func (ls *listing) has(name string) bool {
	_, ok := slices.BinarySearch(ls.names, name)
	return ok
}

// page copies n tools from index i on (all of them for n < 0).
func (ls *listing) page(i, n int) []mcp.Tool {
	end := len(ls.tools)
	if n >= 0 && i+n < end {
		end = i + n
	}
	out := make([]mcp.Tool, 0, end-i)
	for _, t := range ls.tools[i:end] {
		out = append(out, *t)
	}
	return out
}

// encoded returns the JSON array of the n tools from index i on, as
// encoding/json writes the tools of mcp-go's result, encoding them once;
// nil if they cannot be encoded (mcp-go then answers as it does).
func (ls *listing) encoded(i, n int) []byte {
	key := [2]int{i, n}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if b, ok := ls.enc[key]; ok {
		return b
	}
	b, err := json.Marshal(ls.page(i, n))
	if err != nil {
		b = nil
	}
	if ls.enc == nil {
		ls.enc = make(map[[2]int][]byte)
	}
	ls.enc[key] = b
	return b
}

// listed returns the caller's listing: the registry's answer for the
// scope and principal of ctx.
func (s *Server) listed(ctx context.Context) *listing {
	ctx = s.callContext(ctx)
	specs, err := s.reg.List(ctx, nil)
	if err != nil {
		s.cfg.logger.Warn("mcpadapter: listing tools", "err", err)
	}
	return s.listings.get(listingKey(llmtool.ScopeFrom(ctx), llmtool.PrincipalFrom(ctx)), specs)
}

// listingKey identifies a caller's listing: the scope and everything of
// the principal an Authorizer or OAuth scopes may look at.
func listingKey(scope string, p *llmtool.Principal) string {
	var b strings.Builder
	b.WriteString(scope)
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

// listRequest is what beforeList learned of a tools/list, for the filter
// that sees the same context.
type listRequest struct {
	cursor mcp.Cursor

	// The page listPage handed mcp-go: tools start to start+n of ls.
	ls       *listing
	start, n int
}

// beforeList marks a tools/list, so that the filter hands mcp-go the
// requested page.
func (s *Server) beforeList(ctx context.Context, _ any, req *mcp.ListToolsRequest) {
	s.lists.Store(ctx, &listRequest{cursor: req.Params.Cursor})
}

// listPage is the filter's answer to a tools/list: the page the cursor
// asks for, or, when the host added tool filters of its own
// (Options.ServerOptions), everything after the cursor, for them to
// filter before mcp-go cuts the page.
func (s *Server) listPage(ctx context.Context, req *listRequest) []mcp.Tool {
	ls := s.listed(ctx)
	i, ok := ls.after(req.cursor)
	if !ok {
		return []mcp.Tool{} // mcp-go answers the cursor's error
	}
	if s.hostFilters {
		return ls.page(i, -1)
	}
	page := ls.page(i, s.cfg.pageSize)
	req.ls, req.start, req.n = ls, i, len(page)
	return page
}

// afterList is the last AfterListTools hook: it ends the mark of
// beforeList and, for a request a transport of the adapter writes (one
// with callNotes), moves the page out of mcp-go's result into the notes
// as the page's pre-encoded JSON, which notes.rewrite puts back in the
// response's bytes.
func (s *Server) afterList(ctx context.Context, id any, _ *mcp.ListToolsRequest, result *mcp.ListToolsResult) {
	v, ok := s.lists.LoadAndDelete(ctx)
	if !ok || result == nil || s.hostFilters {
		return
	}
	req := v.(*listRequest)
	notes := notesFrom(ctx)
	if notes == nil || req.ls == nil || req.n == 0 || len(result.Tools) != req.n {
		return
	}
	if req.start%s.cfg.pageSize != 0 {
		// Only the pages the listing's own cursors start are kept
		// encoded, at most one copy of the listing: a cursor naming any
		// other tool gets its page encoded by mcp-go.
		return
	}
	if len(s.mcp.GetHooks().OnAfterListTools) != s.listHooks {
		return // hooks added after New run after this one and see the tools
	}
	if result.Tools[0].Name != req.ls.names[req.start] || result.Tools[req.n-1].Name != req.ls.names[req.start+req.n-1] {
		return
	}
	enc := req.ls.encoded(req.start, req.n)
	if enc == nil {
		return
	}
	notes.noteList(id, enc)
	result.Tools = []mcp.Tool{}
	s.preEncoded.Add(1)
}

// countToolFilters returns how many tool filters m runs (mcp-go keeps them
// unexported; reflection reads the count only).
func countToolFilters(m *server.MCPServer) int {
	f := reflect.ValueOf(m).Elem().FieldByName("toolFilters")
	if !f.IsValid() || f.Kind() != reflect.Slice {
		return 2 // unknown: assume the host's are there
	}
	return f.Len()
}
