package mcpadapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/sqlite"
)

// The scale tests and benchmarks use generated registries: n trivial read
// tools (and, for the tests, a few write tools and tools that need OAuth
// scopes), registered in an order that is not their names' order.

type scaleIn struct {
	ID int64 `json:"id" desc:"Any number."`
}

type scaleOut struct {
	ID int64 `json:"id"`
}

// scaleTools returns n read tools named tool_00000 ... in a scrambled
// order, each returning its argument.
func scaleTools(n int) []*llmtool.Tool {
	tools := make([]*llmtool.Tool, 0, n)
	for i := range n {
		k := (i * 7919) % n // a permutation when n is not a multiple of 7919
		tools = append(tools, llmtool.Read(fmt.Sprintf("tool_%05d", k), fmt.Sprintf("Return the number given (tool %d).", k),
			func(_ *llmtool.ReadCtx, in scaleIn) (scaleOut, error) { return scaleOut(in), nil }))
	}
	return tools
}

// newScaleRegistry returns a registry of tools on a real SQLite file.
func newScaleRegistry(tb testing.TB, opts *llmtool.Options, tools ...*llmtool.Tool) *llmtool.Registry {
	tb.Helper()
	db, err := sqlite.Open(filepath.Join(tb.TempDir(), "scale.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { db.Close() })
	if opts == nil {
		opts = &llmtool.Options{}
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	reg, err := llmtool.NewRegistry(db, opts, llmtool.DefineTools("scale", tools...))
	require.NoError(tb, err)
	tb.Cleanup(func() { reg.Close() })
	return reg
}

// referenceServer is the listing as the adapter served it before listings
// were cached (the reference of the differential test): every tool the
// registry has registered with mcp-go, and a filter that keeps, on every
// page, the tools Registry.List returns for the caller.
func referenceServer(reg *llmtool.Registry, cfg Options) *server.MCPServer {
	filter := func(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
		specs, _ := reg.List(ctx, nil)
		allowed := make(map[string]bool, len(specs))
		for _, sp := range specs {
			allowed[sp.Name] = true
		}
		out := tools[:0]
		for _, t := range tools {
			if allowed[t.Name] {
				out = append(out, t)
			}
		}
		return out
	}
	m := server.NewMCPServer(cfg.Name, cfg.Version, server.WithToolCapabilities(false),
		server.WithToolFilter(filter), server.WithPaginationLimit(cfg.PageSize))
	specs, _ := reg.List(context.Background(), &llmtool.ListOptions{All: true})
	for _, sp := range specs {
		if sp.URI == "" && !sp.Prompt {
			m.AddTool(convertSpec(sp), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
		}
	}
	return m
}

// listMessage is a tools/list request at revision ("" for a revision
// with sessions).
func listMessage(id int, cursor, revision string) json.RawMessage {
	params := map[string]any{}
	if cursor != "" {
		params["cursor"] = cursor
	}
	if revision != "" {
		params["_meta"] = map[string]any{
			mcp.MetaKeyProtocolVersion:    revision,
			mcp.MetaKeyClientInfo:         map[string]any{"name": "scale", "version": "1"},
			mcp.MetaKeyClientCapabilities: map[string]any{},
		}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
	return b
}

// serveMessage serves msg and returns the response's JSON.
func serveMessage(t *testing.T, ctx context.Context, m *server.MCPServer, msg json.RawMessage) []byte {
	t.Helper()
	b, err := json.Marshal(m.HandleMessage(ctx, msg))
	require.NoError(t, err)
	return b
}

// nextCursor returns a tools/list response's nextCursor ("" at the end).
func nextCursor(t *testing.T, resp []byte) string {
	var r struct {
		Result struct {
			NextCursor string `json:"nextCursor"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(resp, &r), string(resp))
	return r.Result.NextCursor
}

// TestListingDifferential compares, byte for byte and page by page, the
// adapter's cached tools/list answers with the reference's (the adapter's
// listing before the cache), for callers of several tenants and principals
// (an Authorizer that hides tools from one user, a token limited by OAuth
// scopes), page sizes and both revisions (sessions, and 2026-07-28), with
// the cursors of each listing, cursors of a listing made before a change
// of the registry, a cursor naming no tool and one that is not base64.
func TestListingDifferential(t *testing.T) {
	t.Parallel()
	tools := scaleTools(23)
	tools = append(tools,
		llmtool.Write("a_write", "Change something.", func(_ *llmtool.WriteCtx, in scaleIn) (scaleOut, error) { return scaleOut(in), nil }),
		llmtool.Write("m_write", "Change something else.", func(_ *llmtool.WriteCtx, in scaleIn) (scaleOut, error) { return scaleOut(in), nil }),
		llmtool.Read("s_scoped", "Read with a scope.", func(_ *llmtool.ReadCtx, in scaleIn) (scaleOut, error) { return scaleOut(in), nil }, llmtool.Scopes("notes:read")),
	)
	authorize := func(_ context.Context, p *llmtool.Principal, sp *llmtool.Spec) error {
		if p != nil && p.ID == "eve" && strings.HasSuffix(sp.Name, "3") {
			return errors.New("not for eve")
		}
		return nil
	}
	reg := newScaleRegistry(t, &llmtool.Options{Authorize: authorize}, tools...)
	ctx := context.Background()
	require.NoError(t, reg.Tenants().SetWrites(ctx, "admin", true))
	require.NoError(t, reg.Tenants().SetTool(ctx, "narrow", "tool_00004", false))

	callers := []struct {
		name      string
		tenant    string
		principal *llmtool.Principal
	}{
		{"anonymous", "", nil},
		{"admin", "admin", &llmtool.Principal{ID: "ann"}},
		{"narrow", "narrow", &llmtool.Principal{ID: "ann"}},
		{"eve", "", &llmtool.Principal{ID: "eve"}},
		{"eve-admin", "admin", &llmtool.Principal{ID: "eve", Roles: []string{"x"}}},
		{"token", "", &llmtool.Principal{ID: "bob", Scopes: []string{"notes:read"}}},
		{"token-none", "admin", &llmtool.Principal{ID: "bob", Scopes: []string{}}},
	}
	for _, pageSize := range []int{1, 4, 100} {
		cfg := withDefaults(&Options{PageSize: pageSize, Logger: slog.New(slog.DiscardHandler)})
		srv := New(reg, &Options{PageSize: pageSize, Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(func() { srv.Close() })
		for _, revision := range []string{"", mcp.ProtocolVersion20260728} {
			var old []string // the cursors of the previous round's listings
			for round := range 3 {
				ref := referenceServer(reg, cfg) // the reference registers the tools of this round
				var cursors []string
				for _, c := range callers {
					cctx := llmtool.WithTenant(ctx, c.tenant)
					if c.principal != nil {
						cctx = llmtool.WithPrincipal(cctx, c.principal)
					}
					name := fmt.Sprintf("page size %d, revision %q, round %d, %s", pageSize, revision, round, c.name)
					compare := func(cursor string) string {
						msg := listMessage(len(cursors), cursor, revision)
						want, got := serveMessage(t, cctx, ref, msg), serveMessage(t, cctx, srv.mcp, msg)
						require.JSONEq(t, string(want), string(got), "%s, cursor %q", name, cursor)
						require.Equal(t, string(want), string(got), "%s, cursor %q", name, cursor)
						return nextCursor(t, got)
					}
					pages := 0
					for cursor := compare(""); cursor != ""; cursor = compare(cursor) {
						cursors = append(cursors, cursor)
						pages++
						require.Less(t, pages, 100, name)
					}
					for _, cursor := range append(old, "!!!", base64.StdEncoding.EncodeToString([]byte("tool_00010x")), base64.StdEncoding.EncodeToString([]byte("zzz"))) {
						compare(cursor)
					}
				}
				old = cursors
				// Change the registry between rounds: the cached listings
				// must follow.
				switch round {
				case 0:
					require.NoError(t, reg.SetEnabled("tool_00007", false))
					require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))
				case 1:
					require.NoError(t, reg.SetEnabled("tool_00007", true))
					require.NoError(t, reg.Tenants().SetWrites(ctx, "", false))
					require.NoError(t, reg.Tenants().SetTool(ctx, "narrow", "tool_00004", true))
				}
			}
			require.NoError(t, reg.Tenants().SetTool(ctx, "narrow", "tool_00004", false))
		}
	}
}

// TestListingHTTP lists a registry of 250 tools (and the built-in man) over HTTP with the mcp-go
// client, page by page, at both revisions; a tool switched off leaves the
// listing, and a tool called
// before any listing (a stateless replica's case) is served.
func TestListingHTTP(t *testing.T) {
	t.Parallel()
	reg := newScaleRegistry(t, nil, scaleTools(250)...)
	srv := New(reg, &Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	for _, revision := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		tr, err := transport.NewStreamableHTTP(ts.URL)
		require.NoError(t, err)
		c := client.NewClient(tr)
		require.NoError(t, c.Start(context.Background()))
		t.Cleanup(func() { c.Close() })
		init, err := c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: revision, ClientInfo: mcp.Implementation{Name: "scale", Version: "1"}}})
		require.NoError(t, err)
		require.Equal(t, revision, init.ProtocolVersion)

		// A call before any listing.
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "tool_00249", Arguments: map[string]any{"id": 5}}})
		require.NoError(t, err)
		require.False(t, res.IsError, revision)
		out, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.JSONEq(t, `{"id":5}`, string(out), revision)
		require.NotContains(t, string(out), `"error"`)

		listAllNames := func() []string {
			var names []string
			var cursor mcp.Cursor
			for pages := 0; ; pages++ {
				require.Less(t, pages, 10)
				page, err := c.ListTools(context.Background(), mcp.ListToolsRequest{PaginatedRequest: mcp.PaginatedRequest{Params: mcp.PaginatedParams{Cursor: cursor}}})
				require.NoError(t, err)
				for _, tool := range page.Tools {
					names = append(names, tool.Name)
				}
				if page.NextCursor == "" {
					return names
				}
				cursor = page.NextCursor
			}
		}
		names := listAllNames()
		require.Len(t, names, 251, revision) // and the built-in man
		require.True(t, slices.IsSorted(names), revision)
		require.Equal(t, []string{"man", "tool_00000"}, names[:2])

		require.NoError(t, reg.SetEnabled("tool_00100", false))
		names = listAllNames()
		require.Len(t, names, 250, revision)
		require.NotContains(t, names, "tool_00100")
		require.NoError(t, reg.SetEnabled("tool_00100", true))
		require.Contains(t, listAllNames(), "tool_00100", revision)
	}
}

// TestListingFollowsAuthorizer: an Authorizer whose answer changes without
// any change the registry reports still decides the next listing, as
// Registry.List does.
func TestListingFollowsAuthorizer(t *testing.T) {
	t.Parallel()
	var hide atomic.Bool
	authorize := func(_ context.Context, _ *llmtool.Principal, sp *llmtool.Spec) error {
		if hide.Load() && sp.Name == "tool_00002" {
			return errors.New("hidden")
		}
		return nil
	}
	reg := newScaleRegistry(t, &llmtool.Options{Authorize: authorize}, scaleTools(5)...)
	srv := New(reg, &Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { srv.Close() })
	ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "ann"})
	names := func() []string {
		var r struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(serveMessage(t, ctx, srv.mcp, listMessage(1, "", "")), &r))
		var out []string
		for _, tool := range r.Result.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	require.Equal(t, []string{"man", "tool_00000", "tool_00001", "tool_00002", "tool_00003", "tool_00004"}, names())
	hide.Store(true)
	require.Equal(t, []string{"man", "tool_00000", "tool_00001", "tool_00003", "tool_00004"}, names())
	hide.Store(false)
	require.Contains(t, names(), "tool_00002")
}

// FuzzListingCursor compares the adapter's tools/list answer for any
// cursor and page size with the reference's, byte for byte.
func FuzzListingCursor(f *testing.F) {
	for _, seed := range []string{"", "!!!", "dG9vbF8wMDAwNQ==", "bWFu", "eg==", "dG9vbF8wMDAwNXg="} {
		f.Add(seed, uint8(3))
	}
	reg := newScaleRegistry(f, nil, scaleTools(17)...)
	servers := map[int][2]*server.MCPServer{}
	for _, pageSize := range []int{1, 2, 3, 5, 100} {
		opts := &Options{PageSize: pageSize, Logger: slog.New(slog.DiscardHandler)}
		srv := New(reg, opts)
		f.Cleanup(func() { srv.Close() })
		servers[pageSize] = [2]*server.MCPServer{referenceServer(reg, withDefaults(opts)), srv.mcp}
	}
	sizes := []int{1, 2, 3, 5, 100}
	f.Fuzz(func(t *testing.T, cursor string, size uint8) {
		pair := servers[sizes[int(size)%len(sizes)]]
		msg := listMessage(1, cursor, "")
		want, got := serveMessage(t, context.Background(), pair[0], msg), serveMessage(t, context.Background(), pair[1], msg)
		require.Equal(t, string(want), string(got))
	})
}

// TestListingTransports lists a registry of 250 tools (and the built-in
// man), page by page, on every transport the adapter serves: HTTP with a
// session, stateless HTTP, HTTP at revision 2026-07-28 (no session) and
// stdio. Every response must be, byte for byte, the reference's answer,
// and Options.OnRequest sees every listing.
func TestListingTransports(t *testing.T) {
	t.Parallel()
	reg := newScaleRegistry(t, nil, scaleTools(250)...)
	var seen, ended atomic.Int64 // the tools/list requests OnRequest saw start and end
	opts := &Options{Logger: slog.New(slog.DiscardHandler), OnRequest: func(_ context.Context, r Request) func(error) {
		if r.Method != string(mcp.MethodToolsList) {
			return nil
		}
		seen.Add(1)
		return func(error) { ended.Add(1) }
	}}
	srv := New(reg, opts)
	t.Cleanup(func() { srv.Close() })
	ref := referenceServer(reg, withDefaults(opts))

	// list lists every page through send, which returns the response's
	// bytes, and compares them with the reference's.
	list := func(t *testing.T, revision string, send func(msg json.RawMessage) []byte) {
		t.Helper()
		before := seen.Load()
		cursor, pages := "", 0
		for {
			pages++
			msg := listMessage(100+pages, cursor, revision)
			want, got := serveMessage(t, context.Background(), ref, msg), send(msg)
			require.Equal(t, string(want), string(got), "page %d", pages)
			if cursor = nextCursor(t, got); cursor == "" {
				break
			}
		}
		require.Equal(t, 3, pages)
		require.EqualValues(t, 3, seen.Load()-before, "OnRequest saw every page")
		// A cursor that is not base64 gets the same error as before.
		msg := listMessage(99, "!!!", revision)
		got := send(msg)
		require.Equal(t, string(serveMessage(t, context.Background(), ref, msg)), string(got))
		require.Contains(t, string(got), `"error"`)
	}
	post := func(t *testing.T, url string, headers map[string]string, body []byte) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	read := func(t *testing.T, resp *http.Response) []byte {
		t.Helper()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"), string(b))
		return bytes.TrimSpace(b)
	}

	t.Run("http session", func(t *testing.T) {
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		resp := post(t, ts.URL, nil, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		headers := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
		require.NotEmpty(t, headers["Mcp-Session-Id"])
		require.Equal(t, http.StatusAccepted, post(t, ts.URL, headers, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)).StatusCode)
		list(t, "", func(msg json.RawMessage) []byte { return read(t, post(t, ts.URL, headers, msg)) })
	})
	t.Run("http stateless", func(t *testing.T) {
		ts := httptest.NewServer(srv.StatelessHandler())
		t.Cleanup(ts.Close)
		headers := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
		list(t, "", func(msg json.RawMessage) []byte { return read(t, post(t, ts.URL, headers, msg)) })
	})
	t.Run("http 2026-07-28", func(t *testing.T) {
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		headers := map[string]string{"Mcp-Protocol-Version": mcp.ProtocolVersion20260728, "Mcp-Method": "tools/list"}
		list(t, mcp.ProtocolVersion20260728, func(msg json.RawMessage) []byte { return read(t, post(t, ts.URL, headers, msg)) })
	})
	t.Run("stdio", func(t *testing.T) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.ServeStdio(ctx, inR, outW) }()
		t.Cleanup(func() {
			cancel()
			inW.Close()
			<-done
			outR.Close()
		})
		lines := bufio.NewScanner(outR)
		lines.Buffer(nil, 1<<20)
		list(t, "", func(msg json.RawMessage) []byte {
			_, err := inW.Write(append(append([]byte{}, msg...), '\n'))
			require.NoError(t, err)
			require.True(t, lines.Scan(), "no answer: %v", lines.Err())
			return append([]byte{}, lines.Bytes()...)
		})
	})
	require.Equal(t, seen.Load(), ended.Load(), "every request OnRequest saw ended")
}
