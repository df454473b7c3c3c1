package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// The scale benchmarks: registries of 10, 1,000 and 10,000 trivial read
// tools (scaleTools), served in process to an mcp-go client at revision
// 2025-11-25. Paths run one call each per round, in an order shuffled
// every round by a seeded generator; the ratios are medians of the
// per-round ratios, with their 25th and 75th percentiles as the spread.

// scaleClient connects an in-process mcp-go client to m and initializes it.
func scaleClient(b *testing.B, m *server.MCPServer) *client.Client {
	b.Helper()
	c, err := client.NewInProcessClientWithOptions(m, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	require.NoError(b, err)
	require.NoError(b, c.Start(context.Background()))
	b.Cleanup(func() { c.Close() })
	_, err = c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "bench", Version: "1"}}})
	require.NoError(b, err)
	return c
}

// scaleAdapter serves a generated registry of n tools through the adapter.
func scaleAdapter(b *testing.B, n int) (*llmtool.Registry, *client.Client) {
	reg, c, _ := scaleAdapterServer(b, n)
	return reg, c
}

func scaleAdapterServer(b *testing.B, n int) (*llmtool.Registry, *client.Client, *Server) {
	b.Helper()
	reg := newScaleRegistry(b, nil, scaleTools(n)...)
	srv := New(reg, &Options{Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(func() { srv.Close() })
	return reg, scaleClient(b, srv.mcp), srv
}

// listAll follows tools/list to its last page and returns how many tools
// it listed.
func listAll(b testing.TB, c *client.Client) int {
	n := 0
	var cursor mcp.Cursor
	for {
		page, err := c.ListTools(context.Background(), mcp.ListToolsRequest{PaginatedRequest: mcp.PaginatedRequest{Params: mcp.PaginatedParams{Cursor: cursor}}})
		if err != nil {
			b.Fatal(err)
		}
		n += len(page.Tools)
		if page.NextCursor == "" {
			return n
		}
		cursor = page.NextCursor
	}
}

var scaleCall = mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "tool_00005", Arguments: map[string]any{"id": 7}}}

func callScale(b testing.TB, c *client.Client) {
	res, err := c.CallTool(context.Background(), scaleCall)
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		b.Fatal(res.Content)
	}
}

// shuffledTimes runs each of n paths once per round, in an order
// shuffled every round, and returns each path's times by round.
func shuffledTimes(b *testing.B, n int, run func(j int)) [][]time.Duration {
	times := make([][]time.Duration, n)
	rng := rand.New(rand.NewPCG(2026, 14))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for b.Loop() {
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, j := range order {
			t0 := time.Now()
			run(j)
			times[j] = append(times[j], time.Since(t0))
		}
	}
	return times
}

// reportRatio reports the median of num's over den's per-round times,
// and its 25th and 75th percentiles.
func reportRatio(b *testing.B, name string, num, den []time.Duration) {
	r := make([]float64, len(num))
	for i := range num {
		r[i] = float64(num[i]) / float64(den[i])
	}
	slices.Sort(r)
	b.ReportMetric(r[len(r)/2], name)
	b.ReportMetric(r[len(r)/4], name+"-p25")
	b.ReportMetric(r[len(r)*3/4], name+"-p75")
}

func medianOf(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

// BenchmarkToolsCallScale calls the same read tool through the adapter
// on registries of 10, 1,000 and 10,000 tools (each listed once before)
// and reports the time of a call at 1,000 and at 10,000 tools over the
// time at 10 (target: at most 1.05 at 10,000). ns/op is one round: the
// three calls.
func BenchmarkToolsCallScale(b *testing.B) {
	sizes := []int{10, 1000, 10000}
	clients := make([]*client.Client, len(sizes))
	for i, n := range sizes {
		_, clients[i] = scaleAdapter(b, n)
		require.Equal(b, n+1, listAll(b, clients[i])) // and the built-in man
		callScale(b, clients[i])
	}
	times := shuffledTimes(b, len(clients), func(j int) { callScale(b, clients[j]) })
	for i, n := range sizes {
		b.ReportMetric(medianOf(times[i]), fmt.Sprintf("ns-p50@%d", n))
	}
	reportRatio(b, "at1000/at10", times[1], times[0])
	reportRatio(b, "at10000/at10", times[2], times[0])
}

// serveAll lists to the last page as a transport serves the pages: each
// request through MCPServer.HandleMessage and its response encoded to
// JSON; the next cursor is read from the bytes. It returns the pages.
func serveAll(b testing.TB, m *server.MCPServer) int {
	ctx := context.Background()
	cursor := ""
	for pages := 1; ; pages++ {
		body, err := json.Marshal(m.HandleMessage(ctx, listMessage(pages, cursor, "")))
		if err != nil {
			b.Fatal(err)
		}
		const key = `"nextCursor":"`
		i := bytes.Index(body, []byte(key))
		if i < 0 {
			return pages
		}
		rest := body[i+len(key):]
		cursor = string(rest[:bytes.IndexByte(rest, '"')])
	}
}

// httpClient connects an mcp-go client to h over HTTP (a session at
// revision 2025-11-25) and initializes it.
func httpClient(b *testing.B, h http.Handler) *client.Client {
	b.Helper()
	ts := httptest.NewServer(h)
	b.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL)
	require.NoError(b, err)
	c := client.NewClient(tr)
	require.NoError(b, c.Start(context.Background()))
	b.Cleanup(func() { c.Close() })
	_, err = c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "bench", Version: "1"}}})
	require.NoError(b, err)
	return c
}

// BenchmarkToolsListScale lists 10,000 tools to the last page (100
// tools a page, 101 pages with the built-in man) through the adapter and
// through a raw mcp-go server with the same tools registered (converted as
// the adapter converts them, no filter), and reports raw mcp-go's time
// over the adapter's (target: at least 10).
//
//   - "server" serves the pages as a transport does (serveAll:
//     HandleMessage and the response's encoding);
//   - "http" lists with an mcp-go client over HTTP (Handler, and mcp-go's
//     StreamableHTTPServer for raw mcp-go), which also decodes every tool
//     on the client's side (the same work for both servers);
//   - "client" lists with an in-process mcp-go client on the mcp-go
//     server.
//
// ns/op is one round: both full listings.
func BenchmarkToolsListScale(b *testing.B) {
	b.Run("server", func(b *testing.B) { benchListScale(b, "server") })
	b.Run("wire", func(b *testing.B) { benchListScale(b, "wire") })
	b.Run("http", func(b *testing.B) { benchListScale(b, "http") })
	b.Run("client", func(b *testing.B) { benchListScale(b, "client") })
}

// wireLister is an MCP client over streamable HTTP at 2025-11-25 that
// reads every page of tools/list to its last byte and follows the
// cursor, decoding nothing else: the listing as the wire delivers it,
// without a client library's decoding of 10,000 tools into its types
// (the same work for either server, and most of what the "http" path
// measures).
type wireLister struct {
	url, session string
	id           int
	last         []byte // the last answer's body
}

func newWireLister(b *testing.B, h http.Handler) *wireLister {
	b.Helper()
	ts := httptest.NewServer(h)
	b.Cleanup(ts.Close)
	w := &wireLister{url: ts.URL}
	resp := w.post(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	w.session = resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(b, w.session, "the server gave no session")
	w.post(b, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return w
}

// post sends one JSON-RPC message and reads the answer to its end.
func (w *wireLister) post(b testing.TB, body string) *http.Response {
	req, err := http.NewRequest(http.MethodPost, w.url, strings.NewReader(body))
	require.NoError(b, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if w.session != "" {
		req.Header.Set("Mcp-Session-Id", w.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b.Fatalf("%s: %s", resp.Status, buf.Bytes())
	}
	w.last = buf.Bytes()
	return resp
}

// listAll reads every page and returns how many it read, and how many
// tools they listed when count is set (a scan of every byte, left out of
// the timed runs).
func (w *wireLister) listAll(b testing.TB, count bool) (pages, tools int) {
	cursor := ""
	for {
		w.id++
		params := "{}"
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		w.post(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, w.id, params))
		pages++
		if count {
			tools += bytes.Count(w.last, []byte(`"inputSchema"`))
		}
		const key = `"nextCursor":"`
		i := bytes.LastIndex(w.last, []byte(key))
		if i < 0 {
			return pages, tools
		}
		rest := w.last[i+len(key):]
		cursor = string(rest[:bytes.IndexByte(rest, '"')])
	}
}

func benchListScale(b *testing.B, path string) {
	const n = 10000
	reg, adapter, srv := scaleAdapterServer(b, n)
	raw := server.NewMCPServer("raw", "1", server.WithToolCapabilities(false), server.WithPaginationLimit(defaultPageSize))
	specs, err := reg.List(context.Background(), nil)
	require.NoError(b, err)
	for _, sp := range specs {
		raw.AddTool(convertSpec(sp), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("{}"), nil
		})
	}
	clients := []*client.Client{scaleClient(b, raw), adapter}
	if path == "http" {
		clients = []*client.Client{httpClient(b, server.NewStreamableHTTPServer(raw)), httpClient(b, srv.Handler())}
	}
	if path == "wire" {
		wires := []*wireLister{newWireLister(b, server.NewStreamableHTTPServer(raw)), newWireLister(b, srv.Handler())}
		for _, w := range wires {
			pages, tools := w.listAll(b, true)
			require.Equal(b, n/defaultPageSize+1, pages)
			require.Equal(b, n+1, tools)
		}
		times := shuffledTimes(b, len(wires), func(j int) { wires[j].listAll(b, false) })
		b.ReportMetric(medianOf(times[0]), "ns-p50-raw")
		b.ReportMetric(medianOf(times[1]), "ns-p50-adapter")
		reportRatio(b, "raw/adapter", times[0], times[1])
		return
	}
	for _, c := range clients {
		require.Equal(b, n+1, listAll(b, c))
	}
	servers := []*server.MCPServer{raw, srv.mcp}
	for j, m := range servers {
		require.Equal(b, n/defaultPageSize+1, serveAll(b, m), j)
	}
	times := shuffledTimes(b, len(clients), func(j int) {
		if path == "server" {
			serveAll(b, servers[j])
		} else {
			listAll(b, clients[j])
		}
	})
	b.ReportMetric(medianOf(times[0]), "ns-p50-raw")
	b.ReportMetric(medianOf(times[1]), "ns-p50-adapter")
	reportRatio(b, "raw/adapter", times[0], times[1])
}
