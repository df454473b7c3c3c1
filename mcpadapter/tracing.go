package mcpadapter

import (
	"context"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry. The spans and metrics of calls are the registry's
// (llmtool.Options.TracerProvider and MeterProvider); the adapter gives
// each call the client's trace context, so the call's span continues the
// client's trace, and counts the open sessions.
//
// The trace context is W3C Trace Context (traceparent, tracestate), taken
// first from the request's params._meta, where MCP clients instrumented
// with OpenTelemetry put it for each tools/call, resources/read and
// prompts/get, else from the HTTP request's headers. The headers are not
// read when the request's context already carries a span, such as that of
// the host's HTTP instrumentation (otelhttp), which continues them itself.
// No global propagator is consulted: only Trace Context is understood.

// traceContext reads W3C Trace Context.
var traceContext propagation.TraceContext

// The W3C Trace Context fields, as _meta keys.
const (
	metaTraceparent = "traceparent"
	metaTracestate  = "tracestate"
)

// withHeaderTrace returns ctx with the remote span context of an HTTP
// request's traceparent and tracestate headers, unless ctx already
// carries a span or the request has no traceparent.
func withHeaderTrace(ctx context.Context, h http.Header) context.Context {
	if len(h["Traceparent"]) == 0 || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.HeaderCarrier(h))
}

// withMetaTrace returns ctx with the remote span context of a request's
// _meta traceparent and tracestate, which take precedence over the HTTP
// headers': they are the client's context for this one request. A _meta
// without a valid traceparent leaves ctx as it is.
func withMetaTrace(ctx context.Context, meta *mcp.Meta) context.Context {
	if meta == nil {
		return ctx
	}
	tp, _ := meta.AdditionalFields[metaTraceparent].(string)
	if tp == "" {
		return ctx
	}
	ts, _ := meta.AdditionalFields[metaTracestate].(string)
	return traceContext.Extract(ctx, propagation.MapCarrier{metaTraceparent: tp, metaTracestate: ts})
}

// metricSessions is the up-down counter of open sessions.
const metricSessions = "llmtool.mcp.sessions"

// initMetrics makes the adapter's instruments, when Options.MeterProvider
// is set.
func (s *Server) initMetrics() {
	if s.cfg.MeterProvider == nil {
		return
	}
	c, err := s.cfg.MeterProvider.Meter("github.com/llmtool/llmtool/mcpadapter").Int64UpDownCounter(metricSessions,
		metric.WithUnit("{session}"), metric.WithDescription("MCP sessions open."))
	if err != nil {
		s.cfg.Logger.Warn("mcpadapter: an OpenTelemetry instrument was refused; its measurements are not recorded", "err", err)
	}
	s.openSessions = c
}

// countSession adds n to the open sessions' metric.
func (s *Server) countSession(n int64) {
	if s.openSessions != nil {
		s.openSessions.Add(context.Background(), n)
	}
}
