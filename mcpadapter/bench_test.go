package mcpadapter_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/sqlite"
)

// The benchmarks compare a tools/call of a one-row read tool through
// mcpadapter with the same call to a raw mcp-go structured tool handler
// doing the same SQLite read (same database, same query), each from an
// in-process mcp-go client. The adapter adds argument validation, a
// read-only transaction, the policy check and the audit record.

type benchIn struct {
	ID int64 `json:"id" desc:"ID of the note."`
}

type benchOut struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

const benchQuery = "SELECT title, body FROM notes WHERE id = ?"

var benchGet = llmtool.Read("get_note", "Read a note's title and body.",
	func(c *llmtool.ReadCtx, in benchIn) (benchOut, error) {
		out := benchOut{ID: in.ID}
		err := c.QueryRow(benchQuery, in.ID).Scan(&out.Title, &out.Body)
		return out, err
	})

type benchClients struct {
	raw, invoke, adapter *client.Client
}

// benchServers are the servers the benchmarks call: the registry (with
// the one-row read tool) and its adapter, and a raw mcp-go server whose
// structured tool handler does the same read on the same database.
type benchServers struct {
	reg *llmtool.Registry
	srv *mcpadapter.Server
	raw *server.MCPServer
}

func newBenchServers(b *testing.B) benchServers {
	b.Helper()
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
	require.NoError(b, err)
	b.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL);
		INSERT INTO notes VALUES (1, 'Hello', 'World')`)
	require.NoError(b, err)

	// The raw handler below does the same query on the same database as
	// the tool, with database/sql as a raw mcp-go host would.
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)},
		llmtool.DefineTools("bench", benchGet))
	require.NoError(b, err)
	srv := mcpadapter.New(reg, &mcpadapter.Options{Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(func() { srv.Close() })

	raw := server.NewMCPServer("raw", "1", server.WithToolCapabilities(false))
	raw.AddTool(mcp.NewTool("get_note", mcp.WithDescription("Read a note's title and body."),
		mcp.WithInputSchema[benchIn](), mcp.WithOutputSchema[benchOut]()),
		mcp.NewStructuredToolHandler(func(ctx context.Context, _ mcp.CallToolRequest, in benchIn) (benchOut, error) {
			out := benchOut{ID: in.ID}
			err := db.QueryRowContext(ctx, benchQuery, in.ID).Scan(&out.Title, &out.Body)
			return out, err
		}))
	return benchServers{reg: reg, srv: srv, raw: raw}
}

func newBench(b *testing.B) benchClients {
	b.Helper()
	s := newBenchServers(b)
	reg, srv, raw := s.reg, s.srv, s.raw

	// invoke is mcp-go with a handler that calls Registry.Invoke itself: the
	// core's cost without the adapter's.
	invoke := server.NewMCPServer("invoke", "1", server.WithToolCapabilities(false))
	invoke.AddTool(mcp.NewTool("get_note", mcp.WithDescription("Read a note's title and body."),
		mcp.WithInputSchema[benchIn](), mcp.WithOutputSchema[benchOut]()),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := reg.Invoke(ctx, llmtool.Call{Tool: "get_note", Args: req.Params.RawArguments})
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent{Type: "text", Text: string(res.JSON)}}, RawStructuredContent: res.JSON}, nil
		})

	connect := func(s *server.MCPServer) *client.Client {
		c, err := client.NewInProcessClientWithOptions(s, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
		require.NoError(b, err)
		require.NoError(b, c.Start(context.Background()))
		b.Cleanup(func() { c.Close() })
		_, err = c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "bench", Version: "1"}}})
		require.NoError(b, err)
		return c
	}
	bc := benchClients{raw: connect(raw), invoke: connect(invoke), adapter: connect(mcpadapter.MCPServer(srv))}
	for _, c := range []*client.Client{bc.raw, bc.invoke, bc.adapter} {
		res := benchCall(b, c)
		require.False(b, res.IsError)
		require.JSONEq(b, `{"id":1,"title":"Hello","body":"World"}`, structured(b, res))
	}
	return bc
}

var benchReq = mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_note", Arguments: map[string]any{"id": 1}}}

func benchCall(b testing.TB, c *client.Client) *mcp.CallToolResult {
	res, err := c.CallTool(context.Background(), benchReq)
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		b.Fatal(res.Content)
	}
	return res
}

// BenchmarkToolsCall measures each path on its own: ns/op and allocs/op.
func BenchmarkToolsCall(b *testing.B) {
	bc := newBench(b)
	b.Run("raw-mcp-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			benchCall(b, bc.raw)
		}
	})
	b.Run("mcp-go+Invoke", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			benchCall(b, bc.invoke)
		}
	})
	b.Run("mcpadapter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			benchCall(b, bc.adapter)
		}
	})
}

// BenchmarkToolsCallRatio runs the three paths one call each per round, in
// an order shuffled every round by a seeded generator (a fixed rotation
// moved the ratios), so all see the same machine load, and reports the
// adapter's time over the raw handler's (target: at most 1.10), and the
// share of it that is the core's (Registry.Invoke from a plain mcp-go
// handler over the raw handler): the ratios of the totals, and as "-p50"
// of the median call times.
func BenchmarkToolsCallRatio(b *testing.B) {
	bc := newBench(b)
	clients := [3]*client.Client{bc.raw, bc.invoke, bc.adapter}
	var times [3][]time.Duration // raw, invoke, adapter
	rng := rand.New(rand.NewPCG(2026, 3))
	order := []int{0, 1, 2}
	for b.Loop() {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, j := range order {
			t0 := time.Now()
			benchCall(b, clients[j])
			times[j] = append(times[j], time.Since(t0))
		}
	}
	var sum, median [3]float64
	for i, ts := range times {
		for _, d := range ts {
			sum[i] += float64(d)
		}
		s := slices.Clone(ts)
		slices.Sort(s)
		median[i] = float64(s[len(s)/2])
	}
	const raw, invoke, adapter = 0, 1, 2
	b.ReportMetric(sum[adapter]/sum[raw], "adapter/raw")
	b.ReportMetric(median[adapter]/median[raw], "adapter/raw-p50")
	b.ReportMetric(sum[invoke]/sum[raw], "invoke/raw")
	b.ReportMetric(median[invoke]/median[raw], "invoke/raw-p50")
	b.ReportMetric(sum[adapter]/sum[invoke], "adapter/invoke")
	b.ReportMetric(median[adapter]/median[invoke], "adapter/invoke-p50")
}

// The HTTP benchmarks make the same comparison over real HTTP: an
// httptest server on loopback, an mcp-go streamable HTTP client, at
// protocol revision 2026-07-28 (stateless core: every request carries the
// client's _meta, no session) and at 2025-11-25 (a session). The adapter
// is mcpadapter's Handler(); the raw path is mcp-go's StreamableHTTPServer
// serving the raw server above, whose handler runs the same SQLite read.

// httpBenchRevisions are the revisions the HTTP benchmarks run at.
var httpBenchRevisions = []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125}

// httpBenchPath is one client of the HTTP benchmarks.
type httpBenchPath struct {
	name string // raw-mcp-go@REVISION or mcpadapter@REVISION
	c    *client.Client
}

// newHTTPBench serves the adapter and the raw server over HTTP and returns
// a client of each at each revision, in the order raw, adapter per
// revision of httpBenchRevisions; each has made one checked call.
func newHTTPBench(b *testing.B) []httpBenchPath {
	b.Helper()
	s := newBenchServers(b)
	adapter := httptest.NewServer(s.srv.Handler())
	b.Cleanup(adapter.Close)
	raw := httptest.NewServer(server.NewStreamableHTTPServer(s.raw, server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler))))
	b.Cleanup(raw.Close)

	connect := func(url, version string) *client.Client {
		tr, err := transport.NewStreamableHTTP(url,
			transport.WithHTTPBasicClient(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}),
			transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
		require.NoError(b, err)
		c := client.NewClient(tr)
		require.NoError(b, c.Start(context.Background()))
		b.Cleanup(func() { c.Close() })
		res, err := c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: version, ClientInfo: mcp.Implementation{Name: "bench", Version: "1"}}})
		require.NoError(b, err)
		require.Equal(b, version, res.ProtocolVersion)
		require.Equal(b, version, c.ProtocolVersion())
		return c
	}
	var paths []httpBenchPath
	for _, v := range httpBenchRevisions {
		paths = append(paths,
			httpBenchPath{"raw-mcp-go@" + v, connect(raw.URL, v)},
			httpBenchPath{"mcpadapter@" + v, connect(adapter.URL, v)})
	}
	for _, p := range paths {
		res := benchCall(b, p.c)
		require.JSONEq(b, `{"id":1,"title":"Hello","body":"World"}`, structured(b, res), p.name)
		require.NotContains(b, structured(b, res), `"error"`, p.name)
	}
	return paths
}

// BenchmarkHTTPToolsCall measures each HTTP path on its own: ns/op and
// allocs/op (client and server together: both run in this process).
func BenchmarkHTTPToolsCall(b *testing.B) {
	for _, p := range newHTTPBench(b) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchCall(b, p.c)
			}
		})
	}
}

// BenchmarkHTTPToolsCallRatio runs the four HTTP paths one call each per
// round, in an order shuffled every round by a seeded generator (every run
// sees the same sequence), so all see the same machine load, and reports
// the adapter's time over the raw handler's at each revision (target: at
// most 1.10): the ratio of total times ("adapter/raw@REVISION") and of
// median call times ("...-p50"), which a few calls stalled by a shared
// machine do not move. ns/op is one round: the four calls.
func BenchmarkHTTPToolsCallRatio(b *testing.B) {
	paths := newHTTPBench(b)
	times := make([][]time.Duration, len(paths))
	rng := rand.New(rand.NewPCG(2026, 7))
	order := make([]int, len(paths))
	for i := range order {
		order[i] = i
	}
	for b.Loop() {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, j := range order {
			t0 := time.Now()
			benchCall(b, paths[j].c)
			times[j] = append(times[j], time.Since(t0))
		}
	}
	sum := func(i int) float64 {
		var s time.Duration
		for _, d := range times[i] {
			s += d
		}
		return float64(s)
	}
	median := func(i int) float64 {
		s := slices.Clone(times[i])
		slices.Sort(s)
		return float64(s[len(s)/2])
	}
	for k, v := range httpBenchRevisions {
		raw, adapter := 2*k, 2*k+1
		b.ReportMetric(sum(adapter)/sum(raw), "adapter/raw@"+v)
		b.ReportMetric(median(adapter)/median(raw), "adapter/raw@"+v+"-p50")
		b.ReportMetric(median(raw), "ns-p50-raw@"+v)
		b.ReportMetric(median(adapter), "ns-p50-adapter@"+v)
	}
}
