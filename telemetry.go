package llmtool

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/internal/callinfo"
	"github.com/llmtool/llmtool/internal/dbconn"
)

// Telemetry: the spans and metrics of the call path, through the
// OpenTelemetry API, with the providers of Options.TracerProvider and
// Options.MeterProvider. Neither is read from OpenTelemetry's globals, so a
// registry without them starts no span, records no measurement and
// allocates nothing more per call: every hook below is behind a nil check.
//
// A call's span starts in Invoke once the registry found what the call
// names (dated from the call's start, so it covers the lookup), and is the
// parent of the middleware and the call path: a middleware's spans, and
// those of database instrumentation under the handler's queries, nest in
// it. Inside, when the span is recording, the call path adds child spans
// for the wait for the write lock, the guards, the handler and the commit,
// again for each run of a write that lost to other writes and ran again.

// instrumentationScope names the tracer and the meter.
const instrumentationScope = "github.com/llmtool/llmtool"

// The attributes of a call's span and of the metrics. gen_ai.* and
// enduser.id follow OpenTelemetry's semantic conventions; llmtool.* are
// the registry's own.
const (
	attrOperation  = attribute.Key("gen_ai.operation.name")
	attrTool       = attribute.Key("gen_ai.tool.name")
	attrModule     = attribute.Key("llmtool.module")
	attrTenant     = attribute.Key("llmtool.tenant")
	attrPrincipal  = attribute.Key("enduser.id")
	attrOutcome    = attribute.Key("llmtool.outcome")
	attrAttempts   = attribute.Key("llmtool.attempts")
	attrRetryWait  = attribute.Key("llmtool.retry_wait_ms")
	attrWrite      = attribute.Key("llmtool.write")
	attrCommitted  = attribute.Key("llmtool.committed")
	attrBytes      = attribute.Key("llmtool.result.bytes")
	attrApproval   = attribute.Key("llmtool.approval")
	attrResource   = attribute.Key("llmtool.resource.uri")
	attrErrorType  = attribute.Key("error.type")
	attrAttempt    = attribute.Key("llmtool.attempt")
	otherTool      = "_OTHER" // the metrics' tool name of a call whose tool was not found
	spanLockWait   = "llmtool.lock_wait"
	spanGuards     = "llmtool.guards"
	spanHandler    = "llmtool.handler"
	spanCommit     = "llmtool.commit"
	eventRetry     = "retry"
	metricCalls    = "llmtool.calls"
	metricDuration = "llmtool.call.duration"
	metricLockWait = "llmtool.lock.wait"
	metricRetries  = "llmtool.retries"
	metricRetry    = "llmtool.retry.wait"
	metricSize     = "llmtool.result.size"
)

// internalKind is the kind of a call's span, made once.
var internalKind = trace.WithSpanKind(trace.SpanKindInternal)

// operations name what a call does, by the kind of definition it calls:
// the first word of its span's name and its gen_ai.operation.name.
var operations = [...]string{
	kindTool:     "execute_tool",
	kindResource: "read_resource",
	kindPrompt:   "get_prompt",
}

// telemetry is a registry's tracer and instruments; the zero value is off.
type telemetry struct {
	tracer trace.Tracer // nil: no spans
	m      *instruments // nil: no metrics

	tools   sync.Map // *Tool → *toolTel, made on the tool's first call
	unknown toolTel  // the calls that found nothing
}

// instruments are the registry's metrics, made once at NewRegistry.
type instruments struct {
	calls    metric.Int64Counter
	duration metric.Float64Histogram
	lockWait metric.Float64Histogram
	size     metric.Int64Histogram
	retries  metric.Int64Counter     // runs again of write calls
	retry    metric.Float64Histogram // the wait of write calls run again
}

// toolTel is what the spans and measurements of a tool's calls share,
// made once: a span's name and the attributes its definition fixes, and
// the attribute sets of its measurements.
type toolTel struct {
	tool       *Tool // nil: the calls that found nothing
	span       string
	attrs      []attribute.KeyValue
	byTool     *measureOpts // its lock wait and result size; nil until metrics need it
	byToolOnce sync.Once

	mu       sync.Mutex                              // serializes additions to byOutcome
	outcomes atomic.Pointer[map[string]*measureOpts] // its calls by outcome, copied on write
}

// toolTel returns t's shared telemetry; t nil is the calls that found
// nothing.
func (tel *telemetry) toolTel(t *Tool) *toolTel {
	if t == nil {
		return &tel.unknown
	}
	if v, ok := tel.tools.Load(t); ok {
		return v.(*toolTel)
	}
	s := &t.spec
	tt := &toolTel{tool: t, span: operations[t.kind] + " " + s.Name, attrs: []attribute.KeyValue{
		attrOperation.String(operations[t.kind]), attrTool.String(s.Name), attrModule.String(s.Module), attrWrite.Bool(!s.ReadOnly)}}
	v, _ := tel.tools.LoadOrStore(t, tt)
	return v.(*toolTel)
}

// measureOpts are one attribute set as the options of both kinds of
// instruments, so recording allocates nothing.
type measureOpts struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

func newMeasureOpts(kv ...attribute.KeyValue) *measureOpts {
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	return &measureOpts{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}}
}

// callOpts returns the attributes of the tool's calls with outcome.
func (tt *toolTel) callOpts(outcome string) *measureOpts {
	if m := tt.outcomes.Load(); m != nil {
		if o := (*m)[outcome]; o != nil {
			return o
		}
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	old := tt.outcomes.Load()
	if old != nil {
		if o := (*old)[outcome]; o != nil {
			return o
		}
	}
	var o *measureOpts
	if t := tt.tool; t == nil {
		// The name of a tool that was not found is the caller's: it would
		// make a series per name.
		o = newMeasureOpts(attrTool.String(otherTool), attrModule.String(""), attrOutcome.String(outcome), attrWrite.Bool(false))
	} else {
		o = newMeasureOpts(attrTool.String(t.spec.Name), attrModule.String(t.spec.Module), attrOutcome.String(outcome), attrWrite.Bool(!t.spec.ReadOnly))
	}
	m := make(map[string]*measureOpts, 1)
	if old != nil {
		maps.Copy(m, *old)
	}
	m[outcome] = o
	tt.outcomes.Store(&m)
	return o
}

// toolOpts returns the attributes of the tool's lock wait and result size.
func (tt *toolTel) toolOpts() *measureOpts {
	tt.byToolOnce.Do(func() { tt.byTool = newMeasureOpts(attrTool.String(tt.tool.spec.Name)) })
	return tt.byTool
}

// secondsBuckets are the bucket boundaries of the duration histograms, in
// seconds: from a 100 µs read to a 30 s call.
var secondsBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// bytesBuckets are the bucket boundaries of the result sizes: 64 B to 1 MiB.
var bytesBuckets = []float64{64, 256, 1024, 4096, 16384, 65536, 262144, 1048576}

// init sets the tracer and makes the instruments of o's providers. An
// instrument the provider refuses is reported; OpenTelemetry's API still
// returns one that records nothing.
func (tel *telemetry) init(o *Options) error {
	if o.TracerProvider != nil {
		tel.tracer = o.TracerProvider.Tracer(instrumentationScope)
	}
	if o.MeterProvider == nil {
		return nil
	}
	meter := o.MeterProvider.Meter(instrumentationScope)
	m := &instruments{}
	var errs [6]error
	m.calls, errs[0] = meter.Int64Counter(metricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Calls of tools, resources and prompts, by tool, module, outcome and whether the tool writes."))
	m.duration, errs[1] = meter.Float64Histogram(metricDuration, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(secondsBuckets...),
		metric.WithDescription("Duration of calls, from Invoke to their audit record, by tool, module, outcome and whether the tool writes."))
	m.lockWait, errs[2] = meter.Float64Histogram(metricLockWait, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(secondsBuckets...),
		metric.WithDescription("Wait of write calls for their transaction: the write lock (SQLite), a connection and BEGIN, by tool, per run."))
	m.size, errs[3] = meter.Int64Histogram(metricSize, metric.WithUnit("By"), metric.WithExplicitBucketBoundaries(bytesBuckets...),
		metric.WithDescription("Size of the JSON of call results, by tool."))
	m.retries, errs[4] = meter.Int64Counter(metricRetries, metric.WithUnit("{run}"),
		metric.WithDescription("Runs again of write calls after a run lost to other writes, by tool."))
	m.retry, errs[5] = meter.Float64Histogram(metricRetry, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(secondsBuckets...),
		metric.WithDescription("Time write calls that ran again lost to other writes (the audit record's RetryWait), by tool, per call."))
	tel.m = m
	return errors.Join(errs[:]...)
}

// startSpan starts the span of a call that began at start, named for what
// it calls: "execute_tool <tool>", "read_resource <resource>" or
// "get_prompt <prompt>". e is nil when the call found nothing.
func (r *Registry) startSpan(ctx context.Context, start time.Time, call *Call, e *entry, name string, kind toolKind) (context.Context, trace.Span) {
	var spanName string
	var attrs []attribute.KeyValue
	if e != nil {
		tt := r.tel.toolTel(e.tool)
		spanName = tt.span
		attrs = append(make([]attribute.KeyValue, 0, len(tt.attrs)+3), tt.attrs...)
	} else {
		op := operations[kind]
		spanName = op
		attrs = make([]attribute.KeyValue, 0, 5)
		attrs = append(attrs, attrOperation.String(op))
		if kind != kindResource { // a URI that matched nothing is no name: it may hold IDs
			spanName += " " + name
			attrs = append(attrs, attrTool.String(name))
		}
	}
	attrs = append(attrs, attrTenant.String(TenantFrom(ctx)))
	if id := principalID(ctx); id != "" {
		attrs = append(attrs, attrPrincipal.String(id))
	}
	if kind == kindResource {
		attrs = append(attrs, attrResource.String(call.Resource))
	}
	return r.tel.tracer.Start(ctx, spanName, internalKind, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
}

// endCall ends a call's span, if it has one, and records its metrics, with
// what its audit record says. t is nil when the call found nothing.
func (r *Registry) endCall(ctx context.Context, span trace.Span, t *Tool, rec *audit.Record, res *Result) {
	if span != nil {
		if span.IsRecording() {
			endSpan(span, rec, res)
		}
		span.End()
	}
	if m := r.tel.m; m != nil {
		tt := r.tel.toolTel(t)
		o := tt.callOpts(rec.Outcome)
		m.calls.Add(ctx, 1, o.add...)
		m.duration.Record(ctx, rec.Duration.Seconds(), o.rec...)
		if t != nil {
			m.size.Record(ctx, int64(len(res.JSON)), tt.toolOpts().rec...)
		}
		if rec.Attempts > 1 {
			o := tt.toolOpts()
			m.retries.Add(ctx, int64(rec.Attempts-1), o.add...)
			m.retry.Record(ctx, rec.RetryWait.Seconds(), o.rec...)
		}
	}
}

// endSpan sets the attributes and status of a call's recording span.
func endSpan(span trace.Span, rec *audit.Record, res *Result) {
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, attrOutcome.String(rec.Outcome), attrCommitted.Bool(rec.Committed), attrBytes.Int(len(res.JSON)))
	if rec.Write {
		attrs = append(attrs, attrAttempts.Int(rec.Attempts))
	}
	if rec.Attempts > 1 {
		attrs = append(attrs, attrRetryWait.Float64(float64(rec.RetryWait)/float64(time.Millisecond)))
	}
	if rec.Approval != "" {
		attrs = append(attrs, attrApproval.String(rec.Approval))
	}
	// A call that asks its client (ask.Elicit) or a person's approval is
	// waiting for an answer, not failing: it runs again with it.
	failed := res.IsError && !errors.Is(res.Err, callinfo.ErrInputRequired) && !errors.Is(res.Err, approval.ErrRequired)
	if failed {
		attrs = append(attrs, attrErrorType.String(KindOf(res.Err).String()))
	}
	span.SetAttributes(attrs...)
	if failed {
		span.SetStatus(codes.Error, res.Text())
	}
}

// traced reports whether the call path under ctx adds child spans: the
// registry has a tracer and the call's span is recording.
func (r *Registry) traced(ctx context.Context) bool {
	return r.tel.tracer != nil && trace.SpanFromContext(ctx).IsRecording()
}

// startChild starts a child span of the call's span when traced; it
// returns a nil span otherwise.
func (r *Registry) startChild(ctx context.Context, traced bool, name string) (context.Context, trace.Span) {
	if !traced {
		return ctx, nil
	}
	return r.tel.tracer.Start(ctx, name)
}

// endChild ends a child span, if there is one, with err's status.
func endChild(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetAttributes(attrErrorType.String(KindOf(err).String()))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// beginWrite begins a write call's transaction: the write token (SQLite),
// a connection and BEGIN, in the span llmtool.lock_wait when traced,
// recording the wait in llmtool.lock.wait when metrics are on.
func (r *Registry) beginWrite(ctx context.Context, t *Tool, traced bool) (*dbconn.WriteTx, error) {
	m := r.tel.m
	if !traced && m == nil {
		return r.tx.BeginWrite(ctx)
	}
	start := time.Now()
	bctx, span := r.startChild(ctx, traced, spanLockWait)
	wt, err := r.tx.BeginWrite(bctx)
	endChild(span, err)
	if m != nil {
		m.lockWait.Record(ctx, time.Since(start).Seconds(), r.tel.toolTel(t).toolOpts().rec...)
	}
	return wt, err
}

// retried marks, on the call's span, a write run again after a run lost
// to other writes.
func retried(ctx context.Context, traced bool, attempt int) {
	if traced {
		trace.SpanFromContext(ctx).AddEvent(eventRetry, trace.WithAttributes(attrAttempt.Int(attempt)))
	}
}

// child returns c for a child span of its call named name: a copy of c
// whose context carries the span, so the guards' or the handler's queries
// nest in it.
func (c *ReadCtx) child(name string) (*ReadCtx, trace.Span) {
	ctx, span := c.call.reg.tel.tracer.Start(c.parent, name)
	if c.write != nil {
		w := &WriteCtx{*c}
		w.parent, w.write = ctx, w
		return &w.ReadCtx, span
	}
	cp := *c
	cp.parent = ctx
	return &cp, span
}

// handleTraced runs a traced call's handler in the span llmtool.handler.
func handleTraced[In, Out any](c *ReadCtx, in In, handler func(*ReadCtx, In) (Out, error)) (out Out, err error) {
	c, span := c.child(spanHandler)
	defer func() { endChild(span, err) }() // a panic ends the span too
	return handler(c, in)
}
