package mcpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/sqlite"
)

type budgetIn struct {
	Offset int `json:"offset,omitempty" minimum:"0"`
	N      int `json:"n" minimum:"0"`
}

type budgetItem struct {
	ID int `json:"id"`
}

type budgetOut struct {
	Items     []budgetItem       `json:"items"`
	Truncated *llmtool.Truncated `json:"truncated,omitempty"`
}

// list_items returns n items after offset; without a budget of its own,
// the adapter's OutputBudget cuts it.
var budgetTools = llmtool.DefineTools("budget", llmtool.Read("list_items", "List items.",
	func(_ *llmtool.ReadCtx, in budgetIn) (budgetOut, error) {
		out := budgetOut{Items: []budgetItem{}}
		for i := range in.N {
			out.Items = append(out.Items, budgetItem{ID: in.Offset + i + 1})
		}
		return out, nil
	}, llmtool.Continue(func(in budgetIn, shown int) budgetIn { in.Offset += shown; return in })))

// budgetServer serves list_items over streamable HTTP with opts; the
// registry validates every result against its output schema.
func budgetServer(t *testing.T, opts mcpadapter.Options) string {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "budget.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{ValidateOutput: true, Logger: slog.New(slog.DiscardHandler)}, budgetTools)
	require.NoError(t, err)
	opts.Logger = slog.New(slog.DiscardHandler)
	srv := mcpadapter.New(reg, &opts)
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// budgetClient connects to url at revision rev.
func budgetClient(t *testing.T, url, rev string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	var opts []client.ClientOption
	params := mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}
	if rev != mcp.ProtocolVersion20260728 {
		opts = append(opts, client.WithProtocolVersion(rev))
		params.ProtocolVersion = rev
	}
	c := client.NewClient(tr, opts...)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { c.Close() })
	_, err = c.Initialize(context.Background(), mcp.InitializeRequest{Params: params})
	require.NoError(t, err)
	require.Equal(t, rev, c.ProtocolVersion())
	return c
}

// The adapter's OutputBudget cuts a long result, which stays valid against
// the output schema; TextCopyLimit makes the text copy of a large result a
// pointer to structuredContent for the revisions that have it, and only
// when set.
func TestOutputBudgetMCP(t *testing.T) {
	t.Parallel()
	items := func(from, to int) string {
		s := ""
		for i := from; i <= to; i++ {
			if s != "" {
				s += ","
			}
			s += fmt.Sprintf(`{"id":%d}`, i)
		}
		return s
	}
	full := `{"items":[` + items(1, 30) + `]}`
	// 249 bytes; with 11 items, 259.
	cut := `{"items":[` + items(1, 10) + `],"truncated":{"shown":10,"total":300,"list":"items","next":"Showing 10 of 300 items; call list_items with {\"offset\":10,\"n\":300} for the rest."}}`
	tests := []struct {
		name      string
		rev       string
		opts      mcpadapter.Options
		n         int
		want      string // structuredContent
		wantText  string // the text block
		wantBytes int    // at most, when cut
	}{
		{name: "full copy by default", rev: mcp.ProtocolVersion20251125, n: 30, want: full, wantText: full},
		{name: "pointer at 2025-06-18", rev: mcp.ProtocolVersion20250618, opts: mcpadapter.Options{TextCopyLimit: 100}, n: 30,
			want: full, wantText: "The result is in structuredContent (" + fmt.Sprint(len(full)) + " bytes; items: 30 items)."},
		{name: "pointer at 2026-07-28", rev: mcp.ProtocolVersion20260728, opts: mcpadapter.Options{TextCopyLimit: 100}, n: 30,
			want: full, wantText: "The result is in structuredContent (" + fmt.Sprint(len(full)) + " bytes; items: 30 items)."},
		{name: "full copy before structuredContent", rev: mcp.ProtocolVersion20250326, opts: mcpadapter.Options{TextCopyLimit: 100}, n: 30,
			want: full, wantText: full},
		{name: "full copy under the limit", rev: mcp.ProtocolVersion20251125, opts: mcpadapter.Options{TextCopyLimit: 1000}, n: 30,
			want: full, wantText: full},
		{name: "cut to the adapter's budget", rev: mcp.ProtocolVersion20251125, opts: mcpadapter.Options{OutputBudget: 250}, n: 300,
			want: cut, wantText: cut, wantBytes: 250},
		{name: "cut, with a pointer", rev: mcp.ProtocolVersion20251125, opts: mcpadapter.Options{OutputBudget: 250, TextCopyLimit: 100}, n: 300,
			want: cut, wantText: "The result is in structuredContent (" + fmt.Sprint(len(cut)) + " bytes; items: 10 items).", wantBytes: 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := budgetClient(t, budgetServer(t, tt.opts), tt.rev)
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "list_items", Arguments: map[string]any{"n": tt.n}}})
			require.NoError(t, err)
			require.False(t, res.IsError, text(t, res))
			require.Equal(t, tt.want, structured(t, res))
			require.Equal(t, tt.wantText, text(t, res))
			if tt.wantBytes > 0 {
				require.LessOrEqual(t, len(structured(t, res)), tt.wantBytes)
			}
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(structured(t, res)), &m))
			require.NotContains(t, m, "error")
		})
	}
}
