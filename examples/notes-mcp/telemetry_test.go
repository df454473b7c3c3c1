package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP receiver (protobuf, as otlptracehttp and
// otlpmetrichttp send it) that keeps what it is sent.
type collector struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.ResourceSpans
	metrics []*metricspb.ResourceMetrics
	errs    []string // requests it could not take
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) serve(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		c.fail(w, "%s %s: read the body: %v", r.Method, r.URL.Path, err)
		return
	}
	var resp proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			c.fail(w, "decode traces: %v", err)
			return
		}
		c.mu.Lock()
		c.spans = append(c.spans, req.ResourceSpans...)
		c.mu.Unlock()
		resp = &collectortrace.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req collectormetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			c.fail(w, "decode metrics: %v", err)
			return
		}
		c.mu.Lock()
		c.metrics = append(c.metrics, req.ResourceMetrics...)
		c.mu.Unlock()
		resp = &collectormetrics.ExportMetricsServiceResponse{}
	default:
		c.fail(w, "unexpected request %s %s", r.Method, r.URL.Path)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (c *collector) fail(w http.ResponseWriter, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.mu.Lock()
	c.errs = append(c.errs, msg)
	c.mu.Unlock()
	http.Error(w, msg, http.StatusBadRequest)
}

// readBody reads a request's body, gzip or not.
func readBody(r *http.Request) ([]byte, error) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	}
	return io.ReadAll(body)
}

// spanNames returns the names of the spans received, each with the
// service.name of its resource.
func (c *collector) spanNames() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := map[string]string{}
	for _, rs := range c.spans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				names[s.Name] = serviceOf(rs.Resource)
			}
		}
	}
	return names
}

// span returns the last span received named name.
func (c *collector) span(name string) *tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var found *tracepb.Span
	for _, rs := range c.spans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				if s.Name == name {
					found = s
				}
			}
		}
	}
	return found
}

// sum returns the value of the last data point received of the sum
// (counter) named name whose attributes include attrs, and the
// service.name of its resource; ok is false when there is none.
func (c *collector) sum(name string, attrs map[string]string) (value float64, service string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rm := range c.metrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != name || m.GetSum() == nil {
					continue
				}
				for _, dp := range m.GetSum().DataPoints {
					if !hasAttrs(dp.Attributes, attrs) {
						continue
					}
					value, service, ok = dp.GetAsDouble(), serviceOf(rm.Resource), true
					if _, isInt := dp.Value.(*metricspb.NumberDataPoint_AsInt); isInt {
						value = float64(dp.GetAsInt())
					}
				}
			}
		}
	}
	return value, service, ok
}

// metricNames returns the names of the metrics received.
func (c *collector) metricNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	var names []string
	for _, rm := range c.metrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if !seen[m.Name] {
					seen[m.Name] = true
					names = append(names, m.Name)
				}
			}
		}
	}
	return names
}

func (c *collector) errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errs...)
}

func hasAttrs(kvs []*commonpb.KeyValue, want map[string]string) bool {
	n := 0
	for _, kv := range kvs {
		if v, ok := want[kv.Key]; ok && kv.Value.GetStringValue() == v {
			n++
		}
	}
	return n == len(want)
}

func attrOf(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

func serviceOf(r *resourcepb.Resource) string { return attrOf(r.GetAttributes(), "service.name") }

// scrape gets url (a -metrics endpoint) and parses the Prometheus text.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain"), res.Header.Get("Content-Type"))
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err, string(body))
	return families
}

// promSample returns the metric of family f whose labels include labels,
// or nil.
func promSample(f *dto.MetricFamily, labels map[string]string) *dto.Metric {
	if f == nil {
		return nil
	}
	for _, m := range f.Metric {
		n := 0
		for _, lp := range m.Label {
			if v, ok := labels[lp.GetName()]; ok && lp.GetValue() == v {
				n++
			}
		}
		if n == len(labels) {
			return m
		}
	}
	return nil
}

// TestTelemetry runs notes-mcp with -metrics and -otlp, makes real MCP
// calls, and reads the metrics from the Prometheus endpoint and the spans
// and metrics from an OTLP/HTTP receiver, which gets them when the
// program stops.
func TestTelemetry(t *testing.T) {
	bin := buildBinary(t)

	t.Run("http, -metrics and -otlp", func(t *testing.T) {
		t.Parallel()
		col := newCollector(t)
		db := filepath.Join(t.TempDir(), "notes.db")
		s := pgServeHTTP(t, bin, pgEnv(), "-db", db, "-addr", "127.0.0.1:0", "-metrics", "127.0.0.1:0", "-otlp", col.URL)
		m := regexp.MustCompile(`Metrics:\s+(\S+)  \(Prometheus\)`).FindStringSubmatch(s.banner)
		require.NotNil(t, m, s.banner)
		metricsURL := m[1]
		require.Regexp(t, `^http://127\.0\.0\.1:\d+/metrics$`, metricsURL)
		require.Contains(t, s.banner, "  OTLP/HTTP:     "+col.URL+"  (traces and metrics)\n")

		c := pgClient(t, s)
		found := callOK(t, c, "search_notes", map[string]any{"query": "flour"})
		require.NotEmpty(t, found["results"])
		callError(t, c, "get_note", map[string]any{"noteId": "nope"})

		// Prometheus: the call counted once, ok, with its duration; the
		// failed one apart; the resource and the Go runtime too.
		families := scrape(t, metricsURL)
		calls := families["llmtool_calls_total"]
		require.NotNil(t, calls, "families: %v", keys(families))
		require.Equal(t, dto.MetricType_COUNTER, calls.GetType())
		ok := promSample(calls, map[string]string{"gen_ai_tool_name": "search_notes", "llmtool_outcome": "ok"})
		require.NotNil(t, ok, "llmtool_calls_total: %v", calls.Metric)
		require.Equal(t, 1.0, ok.GetCounter().GetValue())
		require.NotNil(t, promSample(calls, map[string]string{"gen_ai_tool_name": "get_note"}), "the failed call is counted too: %v", calls.Metric)
		require.Nil(t, promSample(calls, map[string]string{"gen_ai_tool_name": "get_note", "llmtool_outcome": "ok"}), "the failed call is not ok: %v", calls.Metric)
		duration := families["llmtool_call_duration_seconds"]
		require.NotNil(t, duration, "families: %v", keys(families))
		require.Equal(t, dto.MetricType_HISTOGRAM, duration.GetType())
		hist := promSample(duration, map[string]string{"gen_ai_tool_name": "search_notes"})
		require.NotNil(t, hist, "llmtool_call_duration_seconds: %v", duration.Metric)
		require.Equal(t, uint64(1), hist.GetHistogram().GetSampleCount())
		require.NotNil(t, promSample(families["target_info"], map[string]string{"service_name": "notes-mcp"}), "target_info: %v", families["target_info"])
		require.Contains(t, families, "go_goroutines")
		sessions := families["llmtool_mcp_sessions"]
		require.NotNil(t, sessions, "families: %v", keys(families))
		require.Equal(t, dto.MetricType_GAUGE, sessions.GetType())
		require.Len(t, sessions.Metric, 1)
		require.Equal(t, 1.0, sessions.Metric[0].GetGauge().GetValue(), "the test's client holds the one session")

		// OTLP: sent when the program stops (Ctrl+C), not before the
		// 10 s interval.
		s.stop()
		require.Empty(t, col.errors())
		require.Equal(t, "notes-mcp", col.spanNames()["execute_tool search_notes"], "spans: %v", col.spanNames())
		span := col.span("execute_tool search_notes")
		require.Equal(t, "search_notes", attrOf(span.Attributes, "gen_ai.tool.name"))
		n, service, found2 := col.sum("llmtool.calls", map[string]string{"gen_ai.tool.name": "search_notes", "llmtool.outcome": "ok"})
		require.True(t, found2, "metrics: %v", col.metricNames())
		require.Equal(t, 1.0, n)
		require.Equal(t, "notes-mcp", service)
		require.Contains(t, col.metricNames(), "llmtool.call.duration")
	})

	t.Run("stdio, -otlp", func(t *testing.T) {
		t.Parallel()
		col := newCollector(t)
		db := filepath.Join(t.TempDir(), "notes.db")
		cmd := exec.CommandContext(t.Context(), bin, "-stdio", "-db", db, "-otlp", col.URL)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		c := client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))))
		require.NoError(t, c.Start(t.Context()))
		initialize(t, c)
		note := callOK(t, c, "get_note", map[string]any{"noteId": "roadmap"})
		require.Equal(t, "Roadmap", note["title"])

		// Closing stdin ends the program, which sends what it holds.
		require.NoError(t, c.Close())
		require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
		require.Contains(t, stderr.String(), "sending traces and metrics over OTLP/HTTP")
		require.Empty(t, col.errors())
		require.Equal(t, "notes-mcp", col.spanNames()["execute_tool get_note"], "spans: %v", col.spanNames())
		n, _, found := col.sum("llmtool.calls", map[string]string{"gen_ai.tool.name": "get_note", "llmtool.outcome": "ok"})
		require.True(t, found, "metrics: %v", col.metricNames())
		require.Equal(t, 1.0, n)
	})
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestTelemetryErrors: the flags' usage errors, and a -metrics address in
// use.
func TestTelemetryErrors(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	db := filepath.Join(t.TempDir(), "notes.db")
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{args: []string{"-otlp", "localhost:4318"}, code: 2,
			stderr: `notes-mcp: -otlp wants the base URL of an OTLP/HTTP collector, such as http://localhost:4318 (traces go to /v1/traces and metrics to /v1/metrics under it); got "localhost:4318" (run notes-mcp -h for help)`},
		{args: []string{"-otlp", "http://collector:4318/?x=1"}, code: 2,
			stderr: `notes-mcp: -otlp wants the base URL of an OTLP/HTTP collector, such as http://localhost:4318 (traces go to /v1/traces and metrics to /v1/metrics under it); got "http://collector:4318/?x=1" (run notes-mcp -h for help)`},
		{args: []string{"-stdio", "-metrics", "9464"}, code: 2,
			stderr: `notes-mcp: -metrics wants HOST:PORT to serve Prometheus metrics on, such as 127.0.0.1:9464; got "9464" (run notes-mcp -h for help)`},
		{args: []string{"-stdio", "-db", db, "-metrics", busy.Addr().String()}, code: 1,
			stderr: "notes-mcp: listen on " + busy.Addr().String() + " for metrics: listen tcp " + busy.Addr().String() + ": bind: address already in use (choose another address with -metrics)"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, tt.code, code, "%v: %s", tt.args, stderr.String())
		require.Equal(t, tt.stderr+"\n", lastLine(stderr.String()), tt.args)
		require.Empty(t, stdout.String(), tt.args)
	}
	_, err = os.Stat(db)
	require.ErrorIs(t, err, os.ErrNotExist, "no database is opened when -metrics cannot listen")

	// -h documents both flags.
	var stdout bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"-h"}, strings.NewReader(""), &stdout, io.Discard))
	for _, want := range []string{
		"  -metrics host:port\n    \tserve Prometheus metrics at http://host:port/metrics, such as 127.0.0.1:9464\n",
		"  -otlp URL\n    \tsend traces and metrics over OTLP/HTTP to the collector at URL, such as http://localhost:4318 (to /v1/traces and /v1/metrics under it)\n",
		"Telemetry is off by default.",
	} {
		require.Contains(t, stdout.String(), want)
	}
}

// lastLine returns the last line of s (the error; the log lines before it
// are not the test's subject), with its newline.
func lastLine(s string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	return strings.TrimSuffix(lines[len(lines)-1], "\n") + "\n"
}

// TestStartTelemetry checks the plumbing on its own, with instruments of
// the test's making named as llmtool's: the Prometheus names the exporter
// gives them, and the flush of both providers on stop.
func TestStartTelemetry(t *testing.T) {
	t.Parallel()
	col := newCollector(t)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	tel, err := startTelemetry(t.Context(), col.URL+"/", "127.0.0.1:0", logger)
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			tel.stop(t.Context(), logger)
		}
	}()
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/metrics$`, tel.metricsURL)
	require.Contains(t, logs.String(), `msg="notes-mcp: serving Prometheus metrics" url=`+tel.metricsURL)

	meter := tel.meter.Meter("test")
	calls, err := meter.Int64Counter("llmtool.calls")
	require.NoError(t, err)
	calls.Add(t.Context(), 2, metric.WithAttributes(attribute.String("gen_ai.tool.name", "x"), attribute.String("llmtool.outcome", "ok")))
	duration, err := meter.Float64Histogram("llmtool.call.duration", metric.WithUnit("s"))
	require.NoError(t, err)
	duration.Record(t.Context(), 0.25, metric.WithAttributes(attribute.String("gen_ai.tool.name", "x")))
	_, span := tel.tracer.Tracer("test").Start(t.Context(), "execute_tool x")
	span.End()

	families := scrape(t, tel.metricsURL)
	got := promSample(families["llmtool_calls_total"], map[string]string{"gen_ai_tool_name": "x", "llmtool_outcome": "ok", "otel_scope_name": "test"})
	require.NotNil(t, got, "families: %v", keys(families))
	require.Equal(t, 2.0, got.GetCounter().GetValue())
	hist := promSample(families["llmtool_call_duration_seconds"], map[string]string{"gen_ai_tool_name": "x"})
	require.NotNil(t, hist, "families: %v", keys(families))
	require.Equal(t, 0.25, hist.GetHistogram().GetSampleSum())

	// stop sends what the providers hold, spans and metrics.
	tel.stop(t.Context(), logger)
	stopped = true
	require.Empty(t, col.errors())
	require.Equal(t, "notes-mcp", col.spanNames()["execute_tool x"])
	n, service, ok := col.sum("llmtool.calls", map[string]string{"gen_ai.tool.name": "x", "llmtool.outcome": "ok"})
	require.True(t, ok, "metrics: %v", col.metricNames())
	require.Equal(t, 2.0, n)
	require.Equal(t, "notes-mcp", service)
	require.NotContains(t, logs.String(), "level=WARN")

	// The listener is closed.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, tel.metricsURL, nil)
	require.NoError(t, err)
	_, err = http.DefaultClient.Do(req)
	require.ErrorContains(t, err, "connection refused")

	// Neither flag: no providers, nothing to stop.
	none, err := startTelemetry(t.Context(), "", "", logger)
	require.NoError(t, err)
	require.Nil(t, none.tracer)
	require.Nil(t, none.meter)
	none.stop(t.Context(), logger)
}

func TestBannerTelemetry(t *testing.T) {
	t.Parallel()
	b := banner{url: "http://127.0.0.1:8080/mcp", token: "tok123", tokenSource: "from -token", db: "notes.db", tenant: "default"}
	var out bytes.Buffer
	printBanner(&out, b)
	require.Contains(t, out.String(), "  Bearer token:  tok123  (from -token)\n\nWrite tools are off", "no telemetry lines without the flags")

	b.metricsURL, b.otlpURL = "http://127.0.0.1:9464/metrics", "http://localhost:4318"
	out.Reset()
	printBanner(&out, b)
	require.Contains(t, out.String(), "  Bearer token:  tok123  (from -token)\n"+
		"  Metrics:       http://127.0.0.1:9464/metrics  (Prometheus)\n"+
		"  OTLP/HTTP:     http://localhost:4318  (traces and metrics)\n\nWrite tools are off")
}
