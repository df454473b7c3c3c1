package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmtool/llmtool"
)

// spanProbe records, from inside a call, the spans its guard and its
// handler ran under, and counts the handler's runs.
type spanProbe struct {
	guard, handler trace.SpanID
	runs           atomic.Int32
}

type spanProbeKey struct{}

func probeFrom(c *llmtool.ReadCtx) *spanProbe {
	p, _ := c.Value(spanProbeKey{}).(*spanProbe)
	if p == nil {
		p = &spanProbe{}
	}
	return p
}

// serializationErr is a PostgreSQL serialization failure (40001), which
// makes the registry run a write again, on any engine.
type serializationErr struct{}

func (serializationErr) Error() string    { return "could not serialize access due to concurrent update" }
func (serializationErr) SQLState() string { return "40001" }

var (
	// guardedAdd inserts an item after a guard, recording the spans its
	// guard and handler see.
	guardedAdd = llmtool.Write("guarded_add", "Add an item after a guard.",
		func(c *llmtool.WriteCtx, in AddItemIn) (ItemOut, error) {
			probeFrom(&c.ReadCtx).handler = trace.SpanFromContext(c).SpanContext().SpanID()
			var id int64
			err := c.QueryRow(`INSERT INTO items (name, qty) VALUES (?, ?) RETURNING id`, in.Name, in.Qty).Scan(&id)
			return ItemOut{ID: int(id), Name: in.Name, Qty: in.Qty}, err
		},
		llmtool.Guards(func(c *llmtool.ReadCtx, in AddItemIn) error {
			probeFrom(c).guard = trace.SpanFromContext(c).SpanContext().SpanID()
			if in.Qty > 100 {
				return llmtool.Conflict("At most 100 items fit on a shelf.").Next("Send a qty of 100 or less.")
			}
			return nil
		}))

	// flakyAdd loses a race on its first run, as a PostgreSQL write can,
	// and inserts on the next.
	flakyAdd = llmtool.Write("flaky_add", "Add an item, losing a race once.",
		func(c *llmtool.WriteCtx, in AddItemIn) (ItemOut, error) {
			if probeFrom(&c.ReadCtx).runs.Add(1) == 1 {
				return ItemOut{}, serializationErr{}
			}
			var id int64
			err := c.QueryRow(`INSERT INTO items (name, qty) VALUES (?, ?) RETURNING id`, in.Name, in.Qty).Scan(&id)
			return ItemOut{ID: int(id), Name: in.Name, Qty: in.Qty}, err
		})

	telemetryTools = llmtool.DefineTools("telemetry", guardedAdd, flakyAdd)
)

// traced is a registry whose spans a recorder keeps and whose metrics a
// manual reader collects.
type traced struct {
	reg    *llmtool.Registry
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
}

func newTraced(t *testing.T, db *sql.DB, opts *llmtool.Options) *traced {
	t.Helper()
	tr := &traced{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tr.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tr.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tr.reader))
	t.Cleanup(func() {
		_ = tr.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	o := llmtool.Options{ValidateOutput: true}
	if opts != nil {
		o = *opts
	}
	o.TracerProvider, o.MeterProvider = tr.tp, mp
	tr.reg = newRegistryOpts(t, db, &o, itemTools, telemetryTools)
	return tr
}

// only returns the one ended span named name.
func (tr *traced) only(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range tr.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

// named returns the ended spans named name, in the order they started.
func (tr *traced) named(name string) []sdktrace.ReadOnlySpan {
	var found []sdktrace.ReadOnlySpan
	for _, s := range tr.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].StartTime().Before(found[j].StartTime()) })
	return found
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func TestTelemetryCallSpan(t *testing.T) {
	t.Parallel()
	const (
		writesOff = `Tool "add_item" changes data, and write tools are off in tenant "locked". Ask the user to enable write tools for this tenant, then call add_item again.`
		internal  = "Internal error in add_item; the details were logged. Try again once; if it fails again, tell the user the tool is failing."
	)
	ada := &llmtool.Principal{ID: "ada"}
	tests := []struct {
		name     string
		ctx      context.Context
		call     llmtool.Call
		span     string
		attrs    map[string]any
		errType  string // "" for a success
		errorMsg string
	}{
		{
			name: "read", ctx: llmtool.WithPrincipal(context.Background(), ada),
			call: llmtool.Call{Tool: "get_item", Args: []byte(`{"id": 1}`)},
			span: "execute_tool get_item",
			attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_item", "llmtool.module": "items",
				"llmtool.tenant": "", "enduser.id": "ada", "llmtool.outcome": "ok", "llmtool.write": false, "llmtool.committed": false,
				"llmtool.result.bytes": int64(len(`{"id":1,"name":"apple","qty":3}`))},
		},
		{
			name: "write", ctx: context.Background(),
			call: llmtool.Call{Tool: "add_item", Args: []byte(`{"name": "pear"}`)},
			span: "execute_tool add_item",
			attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add_item", "llmtool.module": "items",
				"llmtool.tenant": "", "llmtool.outcome": "ok", "llmtool.write": true, "llmtool.committed": true, "llmtool.attempts": int64(1),
				"llmtool.result.bytes": int64(len(`{"id":2,"name":"pear","qty":1}`))},
		},
		{
			name: "writes off", ctx: llmtool.WithTenant(llmtool.WithPrincipal(context.Background(), ada), "locked"),
			call: llmtool.Call{Tool: "add_item", Args: []byte(`{"name": "pear"}`)},
			span: "execute_tool add_item",
			attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add_item", "llmtool.module": "items",
				"llmtool.tenant": "locked", "enduser.id": "ada", "llmtool.outcome": "refused", "llmtool.write": true, "llmtool.committed": false,
				"llmtool.attempts": int64(0), "llmtool.result.bytes": int64(len(`{"error":` + quote(writesOff) + `}`)), "error.type": "denied"},
			errType: "denied", errorMsg: writesOff,
		},
		{
			name: "not found", ctx: context.Background(),
			call: llmtool.Call{Tool: "add_item", Args: []byte(`{"name": "pear", "fail": "notfound"}`)},
			span: "execute_tool add_item",
			attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add_item", "llmtool.module": "items",
				"llmtool.tenant": "", "llmtool.outcome": "not_found", "llmtool.write": true, "llmtool.committed": false,
				"llmtool.attempts": int64(1), "llmtool.result.bytes": int64(len(`{"error":"Shelf not found. Call list_shelves first."}`)), "error.type": "not_found"},
			errType: "not_found", errorMsg: "Shelf not found. Call list_shelves first.",
		},
		{
			name: "panic", ctx: context.Background(),
			call: llmtool.Call{Tool: "add_item", Args: []byte(`{"name": "pear", "fail": "panic"}`)},
			span: "execute_tool add_item",
			attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add_item", "llmtool.module": "items",
				"llmtool.tenant": "", "llmtool.outcome": "panic", "llmtool.write": true, "llmtool.committed": false,
				"llmtool.attempts": int64(1), "llmtool.result.bytes": int64(len(`{"error":` + quote(internal) + `}`)), "error.type": "internal"},
			errType: "internal", errorMsg: internal,
		},
		{
			name: "invalid arguments", ctx: context.Background(),
			call: llmtool.Call{Tool: "get_item", Args: []byte(`{"id": 0}`)},
			span: "execute_tool get_item",
			attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_item", "llmtool.module": "items",
				"llmtool.tenant": "", "llmtool.outcome": "invalid_args", "llmtool.write": false, "llmtool.committed": false,
				"llmtool.result.bytes": int64(len(`{"error":"Error: /id: 0 is below the minimum 1. Send an integer of at least 1."}`)), "error.type": "invalid_args"},
			errType: "invalid_args", errorMsg: "Error: /id: 0 is below the minimum 1. Send an integer of at least 1.",
		},
		{
			name: "unknown tool", ctx: context.Background(),
			call: llmtool.Call{Tool: "no_such_tool", Args: []byte(`{}`)},
			span: "execute_tool no_such_tool",
			attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "no_such_tool",
				"llmtool.tenant": "", "llmtool.outcome": "not_found", "llmtool.committed": false,
				"llmtool.result.bytes": int64(len(`{"error":"Unknown tool \"no_such_tool\". Call one of the tools you were given."}`)), "error.type": "not_found"},
			errType: "not_found", errorMsg: `Unknown tool "no_such_tool". Call one of the tools you were given.`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTraced(t, openDB(t), &llmtool.Options{Logger: quietLogger()})
			res := tr.reg.Invoke(tc.ctx, tc.call)
			require.Equal(t, tc.errType != "", res.IsError, res.Text())
			if tc.errType == "" {
				require.NotContains(t, decodeObj(t, res.JSON), "error")
			} else {
				require.Equal(t, tc.errorMsg, res.Text())
			}
			s := tr.only(t, tc.span)
			require.Equal(t, trace.SpanKindInternal, s.SpanKind())
			require.Equal(t, tc.attrs, attrMap(s.Attributes()))
			require.False(t, s.Parent().IsValid(), "a call without a span in its context starts a trace")
			require.Equal(t, "github.com/llmtool/llmtool", s.InstrumentationScope().Name)
			if tc.errType == "" {
				require.Equal(t, sdktrace.Status{Code: codes.Unset}, s.Status())
			} else {
				require.Equal(t, sdktrace.Status{Code: codes.Error, Description: tc.errorMsg}, s.Status())
			}
		})
	}
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestTelemetryChildSpans(t *testing.T) {
	t.Parallel()
	tr := newTraced(t, openDB(t), nil)
	// The host's span, as a chat's request handler would have.
	host, hostSpan := tr.tp.Tracer("host").Start(context.Background(), "host request")
	probe := &spanProbe{}
	res := tr.reg.Invoke(context.WithValue(host, spanProbeKey{}, probe), llmtool.Call{Tool: "guarded_add", Args: []byte(`{"name": "pear"}`)})
	hostSpan.End()
	require.False(t, res.IsError, res.Text())
	require.NotContains(t, decodeObj(t, res.JSON), "error")

	call := tr.only(t, "execute_tool guarded_add")
	require.Equal(t, hostSpan.SpanContext().SpanID(), call.Parent().SpanID(), "the host's span is the call's parent")
	require.Equal(t, hostSpan.SpanContext().TraceID(), call.SpanContext().TraceID())
	var names []string
	for _, s := range tr.spans.Ended() {
		if s.Parent().SpanID() == call.SpanContext().SpanID() {
			names = append(names, s.Name())
		}
	}
	require.Equal(t, []string{"llmtool.lock_wait", "llmtool.guards", "llmtool.handler", "llmtool.commit"}, names,
		"the children of the call's span, in the order they ended")
	require.Equal(t, tr.only(t, "llmtool.guards").SpanContext().SpanID(), probe.guard, "guards run under their span")
	require.Equal(t, tr.only(t, "llmtool.handler").SpanContext().SpanID(), probe.handler, "the handler runs under its span")
	for _, name := range names {
		require.Equal(t, sdktrace.Status{Code: codes.Unset}, tr.only(t, name).Status(), name)
	}
	require.Empty(t, call.Events())
}

func TestTelemetryGuardRefusal(t *testing.T) {
	t.Parallel()
	tr := newTraced(t, openDB(t), nil)
	res := tr.reg.Invoke(context.Background(), llmtool.Call{Tool: "guarded_add", Args: []byte(`{"name": "pear", "qty": 101}`)})
	require.True(t, res.IsError)
	require.Equal(t, "At most 100 items fit on a shelf. Send a qty of 100 or less.", res.Text())
	guards := tr.only(t, "llmtool.guards")
	require.Equal(t, sdktrace.Status{Code: codes.Error, Description: "At most 100 items fit on a shelf. Send a qty of 100 or less."}, guards.Status())
	require.Equal(t, map[string]any{"error.type": "conflict"}, attrMap(guards.Attributes()))
	require.Empty(t, tr.named("llmtool.handler"), "the handler did not run")
	require.Empty(t, tr.named("llmtool.commit"), "nothing was committed")
	require.Equal(t, "conflict", attrMap(tr.only(t, "execute_tool guarded_add").Attributes())["llmtool.outcome"])
}

func TestTelemetryRetry(t *testing.T) {
	t.Parallel()
	tr := newTraced(t, openDB(t), nil)
	res := tr.reg.Invoke(context.WithValue(context.Background(), spanProbeKey{}, &spanProbe{}),
		llmtool.Call{Tool: "flaky_add", Args: []byte(`{"name": "pear"}`)})
	require.False(t, res.IsError, res.Text())
	require.NotContains(t, decodeObj(t, res.JSON), "error")

	call := tr.only(t, "execute_tool flaky_add")
	attrs := attrMap(call.Attributes())
	require.Equal(t, int64(2), attrs["llmtool.attempts"])
	require.Equal(t, true, attrs["llmtool.committed"])
	wait, ok := attrs["llmtool.retry_wait_ms"].(float64)
	require.True(t, ok, "a write run again has its wait: %v", attrs)
	require.Greater(t, wait, 0.5, "at least the pause after the first run (1 to 2 ms)")
	require.Len(t, call.Events(), 1)
	require.Equal(t, "retry", call.Events()[0].Name)
	require.Equal(t, map[string]any{"llmtool.attempt": int64(2)}, attrMap(call.Events()[0].Attributes))
	// Each run has its own wait and handler; only the second commits.
	require.Len(t, tr.named("llmtool.lock_wait"), 2)
	handlers := tr.named("llmtool.handler")
	require.Len(t, handlers, 2)
	require.Equal(t, sdktrace.Status{Code: codes.Error, Description: "could not serialize access due to concurrent update"}, handlers[0].Status())
	require.Equal(t, sdktrace.Status{Code: codes.Unset}, handlers[1].Status())
	require.Len(t, tr.named("llmtool.commit"), 1)

	unit, points := dataPoints(t, tr.reader, "llmtool.retries")
	require.Equal(t, "{run}", unit)
	require.Equal(t, map[string]int64{"flaky_add": 1}, points, "one run again")
	unit, points = dataPoints(t, tr.reader, "llmtool.retry.wait")
	require.Equal(t, "s", unit)
	require.Equal(t, map[string]int64{"flaky_add": 1}, points, "one call run again")
}

func TestTelemetryMiddlewareUnderCallSpan(t *testing.T) {
	t.Parallel()
	mw := func(next llmtool.InvokeFunc) llmtool.InvokeFunc {
		return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
			ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("mw").Start(ctx, "middleware")
			defer span.End()
			return next(ctx, req)
		}
	}
	tr := newTraced(t, openDB(t), &llmtool.Options{Middleware: []llmtool.Middleware{mw}})
	res := tr.reg.Invoke(context.Background(), llmtool.Call{Tool: "add_item", Args: []byte(`{"name": "pear"}`)})
	require.False(t, res.IsError, res.Text())
	call, mwSpan := tr.only(t, "execute_tool add_item"), tr.only(t, "middleware")
	require.Equal(t, call.SpanContext().SpanID(), mwSpan.Parent().SpanID(), "the call's span is the middleware's parent")
	require.Equal(t, mwSpan.SpanContext().SpanID(), tr.only(t, "llmtool.handler").Parent().SpanID(), "the call path runs in the middleware's context")
}

func TestTelemetryResourceAndPromptSpans(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	item := llmtool.Resource("item", "items://{id}", "An item.",
		func(c *llmtool.ReadCtx, in struct {
			ID string `json:"id"`
		}) (llmtool.Rich, error) {
			return llmtool.Rich{Content: []llmtool.Content{llmtool.TextContent("apple")}}, nil
		})
	greet := llmtool.Prompt("greet", "Greet someone.",
		func(c *llmtool.ReadCtx, in struct {
			Name string `json:"name"`
		}) ([]llmtool.Message, error) {
			return []llmtool.Message{{Role: "user", Content: llmtool.TextContent("Hello " + in.Name)}}, nil
		})
	reg := newRegistryOpts(t, db, &llmtool.Options{TracerProvider: tp}, llmtool.DefineTools("things", item, greet))
	ctx := context.Background()
	require.False(t, reg.Invoke(ctx, llmtool.Call{Resource: "items://1"}).IsError)
	require.False(t, reg.Invoke(ctx, llmtool.Call{Prompt: "greet", Args: []byte(`{"name": "Ada"}`)}).IsError)
	res := reg.Invoke(ctx, llmtool.Call{Resource: "nothing://here"})
	require.True(t, res.IsError)
	got := map[string]map[string]any{}
	for _, s := range sr.Ended() {
		if s.Parent().IsValid() {
			continue // the handlers' spans
		}
		a := attrMap(s.Attributes())
		got[s.Name()] = map[string]any{"op": a["gen_ai.operation.name"], "tool": a["gen_ai.tool.name"], "uri": a["llmtool.resource.uri"], "outcome": a["llmtool.outcome"]}
	}
	require.Equal(t, map[string]map[string]any{
		"read_resource item": {"op": "read_resource", "tool": "item", "uri": "items://1", "outcome": "ok"},
		"get_prompt greet":   {"op": "get_prompt", "tool": "greet", "uri": nil, "outcome": "ok"},
		"read_resource":      {"op": "read_resource", "tool": nil, "uri": "nothing://here", "outcome": "not_found"},
	}, got)
}

// TestTelemetryOff checks that a registry without providers neither starts
// spans nor records metrics, even with OpenTelemetry's global providers
// set and a recording span in the call's context. It sets the globals, so
// it does not run in parallel.
func TestTelemetryOff(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prevTP, prevMP := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetMeterProvider(prevMP)
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	reg := newRegistry(t, openDB(t), itemTools, telemetryTools)
	host, hostSpan := tp.Tracer("host").Start(context.Background(), "host request")
	for _, c := range []llmtool.Call{
		{Tool: "get_item", Args: []byte(`{"id": 1}`)},
		{Tool: "guarded_add", Args: []byte(`{"name": "pear"}`)},
		{Tool: "no_such_tool"},
	} {
		reg.Invoke(host, c)
	}
	hostSpan.End()
	require.Len(t, sr.Ended(), 1, "only the host's own span")
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	require.Empty(t, rm.ScopeMetrics)
}

// dataPoints returns the data points of the registry's metric name, by
// their attributes written as "tool/module/outcome/write" (or "tool" for
// the per-tool metrics): the count of a histogram, the value of a sum.
func dataPoints(t *testing.T, reader *sdkmetric.ManualReader, name string) (unit string, points map[string]int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	key := func(set attribute.Set) string {
		var parts []string
		for _, a := range []attribute.Key{"gen_ai.tool.name", "llmtool.module", "llmtool.outcome", "llmtool.write"} {
			if v, ok := set.Value(a); ok {
				parts = append(parts, v.String())
			}
		}
		require.Len(t, set.ToSlice(), len(parts), "no other attributes")
		return strings.Join(parts, "/")
	}
	points = map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, "github.com/llmtool/llmtool", sm.Scope.Name)
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			unit = m.Unit
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.True(t, d.IsMonotonic)
				for _, p := range d.DataPoints {
					points[key(p.Attributes)] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					points[key(p.Attributes)] += int64(p.Count)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					points[key(p.Attributes)] += int64(p.Count)
				}
			default:
				t.Fatalf("metric %s has data %T", name, m.Data)
			}
		}
	}
	return unit, points
}

func TestTelemetryMetrics(t *testing.T) {
	t.Parallel()
	tr := newTraced(t, openDB(t), &llmtool.Options{Logger: quietLogger()})
	ctx := context.Background()
	calls := []struct {
		ctx  context.Context
		call llmtool.Call
	}{
		{ctx, llmtool.Call{Tool: "get_item", Args: []byte(`{"id": 1}`)}},
		{ctx, llmtool.Call{Tool: "get_item", Args: []byte(`{"id": 1}`)}},
		{ctx, llmtool.Call{Tool: "get_item", Args: []byte(`{"id": 9}`)}},
		{ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name": "pear"}`)}},
		{llmtool.WithTenant(ctx, "locked"), llmtool.Call{Tool: "add_item", Args: []byte(`{"name": "pear"}`)}},
		{ctx, llmtool.Call{Tool: "no_such_tool"}},
		{ctx, llmtool.Call{Tool: "another_unknown_tool"}},
	}
	for _, c := range calls {
		tr.reg.Invoke(c.ctx, c.call)
	}
	byCall := map[string]int64{
		"get_item/items/ok/false":        2,
		"get_item/items/not_found/false": 1,
		"add_item/items/ok/true":         1,
		"add_item/items/refused/true":    1,
		"_OTHER//not_found/false":        2, // unknown names make no series of their own
	}
	unit, points := dataPoints(t, tr.reader, "llmtool.calls")
	require.Equal(t, "{call}", unit)
	require.Equal(t, byCall, points)
	unit, points = dataPoints(t, tr.reader, "llmtool.call.duration")
	require.Equal(t, "s", unit)
	require.Equal(t, byCall, points)
	unit, points = dataPoints(t, tr.reader, "llmtool.lock.wait")
	require.Equal(t, "s", unit)
	require.Equal(t, map[string]int64{"add_item": 1}, points, "the refused write began no transaction")
	unit, points = dataPoints(t, tr.reader, "llmtool.result.size")
	require.Equal(t, "By", unit)
	require.Equal(t, map[string]int64{"get_item": 3, "add_item": 2}, points)
	_, points = dataPoints(t, tr.reader, "llmtool.retries")
	require.Empty(t, points, "no call ran again")
}
