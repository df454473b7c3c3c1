package mcpadapter_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
)

// The client's trace contexts of these tests, as W3C traceparent values.
const (
	metaTrace         = "4bf92f3577b34da6a3ce929d0e0e4736"
	metaParent        = "00f067aa0ba902b7"
	headerTrace       = "0af7651916cd43dd8448eb211c80319c"
	headerParent      = "b7ad6b7169203331"
	metaTraceparent   = "00-" + metaTrace + "-" + metaParent + "-01"
	headerTraceparent = "00-" + headerTrace + "-" + headerParent + "-01"
)

// tracedFixture is a fixture whose registry records its spans.
func tracedFixture(t *testing.T, opts *mcpadapter.Options) (*fixture, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return newFixtureReg(t, &llmtool.Options{TracerProvider: tp}, opts), sr
}

// headerClient is httpClient with extra HTTP headers on every request.
func headerClient(t *testing.T, f *fixture, headers map[string]string) *client.Client {
	t.Helper()
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithHTTPHeaders(headers), transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	c := client.NewClient(tr, clientOptions()...)
	start(t, c)
	return c
}

// callSpan returns the one span named name.
func callSpan(t *testing.T, sr *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

func TestTraceContext(t *testing.T) {
	t.Parallel()
	meta := &mcp.Meta{AdditionalFields: map[string]any{"traceparent": metaTraceparent, "tracestate": "vendor=meta"}}
	headers := map[string]string{"traceparent": headerTraceparent, "tracestate": "vendor=header"}
	tests := []struct {
		name    string
		http    bool              // over HTTP, else in process
		headers map[string]string // HTTP headers
		meta    *mcp.Meta
		tool    string
		// The call span's remote parent; "" for none.
		trace, parent, state string
	}{
		{name: "_meta over HTTP", http: true, meta: meta, tool: "get_note", trace: metaTrace, parent: metaParent, state: "vendor=meta"},
		{name: "_meta in process", meta: meta, tool: "get_note", trace: metaTrace, parent: metaParent, state: "vendor=meta"},
		{name: "HTTP headers", http: true, headers: headers, tool: "get_note", trace: headerTrace, parent: headerParent, state: "vendor=header"},
		{name: "_meta before the headers", http: true, headers: headers, meta: meta, tool: "create_note", trace: metaTrace, parent: metaParent, state: "vendor=meta"},
		{name: "an invalid _meta leaves the headers'", http: true, headers: headers,
			meta: &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-nonsense"}}, tool: "get_note", trace: headerTrace, parent: headerParent, state: "vendor=header"},
		{name: "unknown tool, _meta", http: true, meta: meta, tool: "no_such_tool", trace: metaTrace, parent: metaParent, state: "vendor=meta"},
		{name: "none", http: true, tool: "get_note"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, sr := tracedFixture(t, nil)
			require.NoError(t, f.reg.Tenants().SetWrites(context.Background(), "", true))
			var c *client.Client
			if tc.http {
				c = headerClient(t, f, tc.headers)
			} else {
				c = inProcessClient(t, f)
			}
			args := map[string]any{"id": 1}
			if tc.tool == "create_note" {
				args = map[string]any{"title": "Traced"}
			}
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tc.tool, Arguments: args, Meta: tc.meta}})
			if tc.tool == "no_such_tool" {
				require.EqualError(t, err, `invalid params: Unknown tool "no_such_tool". Call one of the tools you were given.`)
			} else {
				require.NoError(t, err)
				require.False(t, res.IsError, text(t, res))
			}
			s := callSpan(t, sr, "execute_tool "+tc.tool)
			if tc.trace == "" {
				require.False(t, s.Parent().IsValid(), "a call without trace context starts a trace")
				return
			}
			require.Equal(t, tc.trace, s.SpanContext().TraceID().String())
			require.Equal(t, tc.parent, s.Parent().SpanID().String())
			require.True(t, s.Parent().IsRemote())
			require.Equal(t, tc.state, s.Parent().TraceState().String())
			require.Equal(t, trace.FlagsSampled, s.Parent().TraceFlags())
		})
	}
}

// openSessions collects the adapter's llmtool.mcp.sessions.
func openSessions(t *testing.T, reader *sdkmetric.ManualReader) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var n int64
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "llmtool.mcp.sessions" {
				continue
			}
			found = true
			require.Equal(t, "{session}", m.Unit)
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "data is %T", m.Data)
			require.False(t, sum.IsMonotonic)
			for _, p := range sum.DataPoints {
				n += p.Value
			}
		}
	}
	require.True(t, found, "no llmtool.mcp.sessions metric")
	return n
}

func TestSessionsMetric(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	f := newFixture(t, &mcpadapter.Options{MeterProvider: mp})
	first := headerClient(t, f, nil)
	require.Equal(t, int64(1), openSessions(t, reader))
	second := headerClient(t, f, nil)
	require.Equal(t, int64(2), openSessions(t, reader))
	// Close ends the session with DELETE, which returns once the adapter
	// forgot it.
	require.NoError(t, first.Close())
	require.Equal(t, int64(1), openSessions(t, reader))
	require.NoError(t, second.Close())
	require.Equal(t, int64(0), openSessions(t, reader))
}
