package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/internal/pgtest"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/tenant"
)

// manReading is how man's catalog starts on notes-mcp: the reading tools.
const manReading = `Tools you can call, by category. For a tool's options and examples, call man with {"name": "<tool>"}.

Reading
  search_notes      Find notes by words in their title or content
  find_note         Find a note by its title, asking the user when several match
  get_note          Read a note's metadata and a content preview
  get_note_content  Read a note's full content
  get_child_notes   List a note's children
  get_subtree       List a note's descendants
`

// catalogCall is one call of man or find_tools and its answer.
type catalogCall struct {
	name    string
	tool    string
	args    map[string]any
	want    string // the text, exactly; with page, its first lines
	page    bool
	wantErr bool // the call fails with want
}

// userCalls are what a new user's client asks man on notes-mcp: the
// catalog (write tools are off), a category's name (not a page: the
// refusal says what to call instead), a tool's page.
var userCalls = []catalogCall{{
	name: "man catalog", tool: "man", args: map[string]any{},
	want: manReading + `
Attributes
  get_attributes  List a note's labels and relations
  get_attribute   Read one attribute of a note

General
  list_changes  List recent changes
`,
}, {
	name: "man category", tool: "man", args: map[string]any{"name": "Reading"}, wantErr: true,
	want: `No manual entry for "Reading". Call man with no arguments to list all tools.`,
}, {
	name: "man page", tool: "man", args: map[string]any{"name": "search_notes"}, page: true,
	want: "NAME\n    search_notes - Find notes by words in their title or content\n",
}}

// runCalls makes each call on c, in order, each a subtest.
func runCalls(t *testing.T, c *client.Client, calls []catalogCall) {
	t.Helper()
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			req := mcp.CallToolRequest{}
			req.Params.Name = tc.tool
			req.Params.Arguments = tc.args
			res, err := c.CallTool(t.Context(), req)
			require.NoError(t, err)
			require.Len(t, res.Content, 1)
			text := res.Content[0].(mcp.TextContent).Text
			require.Equal(t, tc.wantErr, res.IsError, text)
			if tc.page {
				require.True(t, strings.HasPrefix(text, tc.want), text)
				return
			}
			require.Equal(t, tc.want, text)
		})
	}
}

// TestManAsAUser runs notes-mcp as a user does, with its tenant settings
// read on every call (tenant.NoCache), and calls man over stdio and HTTP on
// SQLite, and over HTTP on PostgreSQL (skipped without
// LLMTOOL_TEST_POSTGRES).
func TestManAsAUser(t *testing.T) {
	bin := buildBinary(t)
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		runCalls(t, stdioClient(t, bin, mcp.ProtocolVersion20251125), userCalls)
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		runCalls(t, httpClient(t, bin, mcp.ProtocolVersion20251125, filepath.Join(t.TempDir(), "notes.db")), userCalls)
	})
	t.Run("postgres http", func(t *testing.T) {
		t.Parallel()
		runCalls(t, httpClient(t, bin, mcp.ProtocolVersion20251125, pgtest.DSN(t)), userCalls)
	})
}

// cacheName names the tenant cache of TestCatalogToolsTenantCache's
// cases: none (notes-mcp's own, tenant.NoCache), or with expire one fresh
// when the call is admitted and stale when the catalog filters by it, as a
// long-lived cache is when it expires between the two.
func cacheName(expire bool) string {
	if expire {
		return "cache expires mid-call"
	}
	return "cache off"
}

// onDemandAttributes loads the attribute tools on demand, so that the
// catalog server serves find_tools.
func onDemandAttributes(s *llmtool.Spec) bool { return s.Category == "Attributes" }

// catalogServer is notes-mcp's registry and MCP server over a fresh
// SQLite store, opened as serveCmd opens them but with the attribute tools
// loaded on demand, and with expire a tenant cache of an hour that
// admitting man or find_tools makes stale (tenant.Settings.Expire, from
// Options.Authorize, which admission calls right after it read the
// settings). Its log is returned.
func catalogServer(t *testing.T, expire bool) (*mcpadapter.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	var reg *llmtool.Registry // set before the first call
	opts := &llmtool.Options{
		Changesets:     notes.Changesets,
		Logger:         slog.New(slog.NewTextHandler(logs, nil)),
		TenantCacheTTL: tenant.NoCache,
		OnDemand:       onDemandAttributes,
	}
	if expire {
		opts.TenantCacheTTL = time.Hour
		opts.Authorize = func(ctx context.Context, _ *llmtool.Principal, s *llmtool.Spec) error {
			if s.Module == "llmtool" {
				reg.Tenants().Expire(llmtool.TenantFrom(ctx))
			}
			return nil
		}
	}
	db, reg, err := openRegistry(t.Context(), filepath.Join(t.TempDir(), "notes.db"), opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, reg.Close())
		require.NoError(t, db.Close())
	})
	for _, tool := range approvalTools {
		require.NoError(t, reg.Tenants().SetApproval(t.Context(), defaultTenant, tool, true)) // and caches the settings
	}
	srv := mcpadapter.New(reg, &mcpadapter.Options{
		Name: "notes-mcp", Version: version, Instructions: instructions, Tenant: defaultTenant, Logger: opts.Logger,
		Principal: &llmtool.Principal{ID: "owner", Name: "Owner of the notes"},
	})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv, logs
}

// catalogHTTP serves srv over streamable HTTP and connects a client.
func catalogHTTP(t *testing.T, srv *mcpadapter.Server) *client.Client {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(endpoint, srv.Handler())
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c, err := client.NewStreamableHttpClient(ts.URL + endpoint)
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { _ = c.Close() })
	initialize(t, c)
	return c
}

// catalogStdio serves srv over a pair of pipes, as over standard input and
// output, and connects a client.
func catalogStdio(t *testing.T, srv *mcpadapter.Server) *client.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.ServeStdio(ctx, serverIn, serverOut) }()
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		serverOut.Close()
		<-served
	})
	c := client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader(""))))
	require.NoError(t, c.Start(t.Context()))
	initialize(t, c)
	return c
}

// TestCatalogToolsTenantCache calls man and find_tools through notes-mcp's
// registry over HTTP and stdio, with the tenant cache off and with one
// that expires mid-call: they answer, and nothing is logged as failing.
// The stdio cases run one after the other: mcp-go keeps one stdio session
// per process.
func TestCatalogToolsTenantCache(t *testing.T) {
	transports := []struct {
		name    string
		connect func(*testing.T, *mcpadapter.Server) *client.Client
	}{{"http", catalogHTTP}, {"stdio", catalogStdio}}
	for _, tr := range transports {
		for _, expire := range []bool{false, true} {
			t.Run(tr.name+"/"+cacheName(expire), func(t *testing.T) {
				srv, logs := catalogServer(t, expire)
				runCalls(t, tr.connect(t, srv), catalogCalls)
				require.NotContains(t, logs.String(), "level=ERROR")
			})
		}
	}
}

// catalogCalls are the calls of man and find_tools on the catalog server,
// in order: the attribute tools are counted in the catalog, not listed,
// until find_tools loads them; a tool's page shows whether loaded or not.
var catalogCalls = []catalogCall{{
	name: "man catalog", tool: "man", args: map[string]any{},
	want: manReading + `
General
  find_tools    Find tools by what they do and load them
  list_changes  List recent changes

More tools load on demand (2), by category; call find_tools with what you want to do to load the best matches:
  Attributes (2)
`,
}, userCalls[1], {
	name: "man page", tool: "man", args: map[string]any{"name": "get_attribute"}, page: true,
	want: "NAME\n    get_attribute - Read one attribute of a note\n",
}, {
	name: "find_tools", tool: "find_tools", args: map[string]any{"query": "note attributes"},
	want: `Loaded 2 tools for "note attributes"; call them like any other tool:
  get_attributes  List a note's labels and relations [Attributes]
  get_attribute   Read one attribute of a note [Attributes]
For a tool's options and examples, call man with {"name": "<tool>"}.
`,
}}
