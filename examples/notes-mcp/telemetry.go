package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry defaults.
const (
	// serviceName is the service.name of the telemetry's resource
	// (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it).
	serviceName = "notes-mcp"
	// otlpInterval is how often metrics go to the collector, unless
	// OTEL_METRIC_EXPORT_INTERVAL (milliseconds) says otherwise. What is
	// left is sent when the program stops.
	otlpInterval = 10 * time.Second
	// metricsPath is the path of the Prometheus endpoint on -metrics.
	metricsPath = "/metrics"
	// telemetryStopTimeout bounds the flush on exit, so an unreachable
	// collector does not hold the program up.
	telemetryStopTimeout = 5 * time.Second
)

// telemetry is what -otlp and -metrics set up: the providers given to the
// registry and the MCP server, and the Prometheus listener. The zero
// value (neither flag) has nil providers, so nothing is recorded.
type telemetry struct {
	tracer trace.TracerProvider // nil without -otlp
	meter  metric.MeterProvider // nil without -otlp and -metrics

	// metricsURL is the Prometheus endpoint, "" without -metrics.
	metricsURL string

	// stops end what was started, in order: the Prometheus listener,
	// then the providers, which send what they still hold.
	stops []func(context.Context) error
}

// checkOTLPURL returns a usage error unless raw is the base URL of an
// OTLP/HTTP collector: http or https, a host, no query or fragment.
func checkOTLPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return usageError("-otlp wants the base URL of an OTLP/HTTP collector, such as http://localhost:4318 (traces go to /v1/traces and metrics to /v1/metrics under it); got %q", raw)
	}
	return nil
}

// checkMetricsAddr returns a usage error unless addr is HOST:PORT.
func checkMetricsAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usageError("-metrics wants HOST:PORT to serve Prometheus metrics on, such as 127.0.0.1:9464; got %q", addr)
	}
	return nil
}

// startTelemetry sets up what -otlp (otlpURL) and -metrics (metricsAddr)
// ask for; both "" gives the zero telemetry. On success the caller must
// call stop when the program ends; on error, nothing is left running.
func startTelemetry(ctx context.Context, otlpURL, metricsAddr string, logger *slog.Logger) (_ *telemetry, err error) {
	t := &telemetry{}
	if otlpURL == "" && metricsAddr == "" {
		return t, nil
	}
	defer func() {
		if err != nil {
			t.stop(context.Background(), logger)
		}
	}()

	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", serviceName), attribute.String("service.version", version)),
		resource.WithFromEnv(), // last: the environment overrides
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}

	var readers []sdkmetric.Option
	if metricsAddr != "" {
		// A registry of its own, not Prometheus's global default one:
		// the llmtool metrics and the Go runtime's and the process's.
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, fmt.Errorf("prometheus exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(exp))

		ln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s for metrics: %w (choose another address with -metrics)", metricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle(metricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}))
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("notes-mcp: serving metrics stopped", "err", err)
			}
		}()
		t.stops = append(t.stops, hs.Shutdown)
		t.metricsURL = "http://" + ln.Addr().String() + metricsPath
		if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
			logger.Warn("notes-mcp: serving metrics beyond loopback without authentication; keep the port from untrusted networks", "url", t.metricsURL)
		}
		logger.Info("notes-mcp: serving Prometheus metrics", "url", t.metricsURL)
	}

	if otlpURL != "" {
		base := strings.TrimSuffix(otlpURL, "/")
		spans, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(base+"/v1/traces"))
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter for %s: %w", otlpURL, err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
		t.tracer = tp
		// Stopped after the meter provider (stops run in reverse).
		t.stops = append(t.stops, tp.Shutdown)

		metrics, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(base+"/v1/metrics"))
		if err != nil {
			return nil, fmt.Errorf("OTLP metric exporter for %s: %w", otlpURL, err)
		}
		var opts []sdkmetric.PeriodicReaderOption
		if os.Getenv("OTEL_METRIC_EXPORT_INTERVAL") == "" {
			opts = append(opts, sdkmetric.WithInterval(otlpInterval))
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics, opts...)))
		logger.Info("notes-mcp: sending traces and metrics over OTLP/HTTP", "collector", otlpURL)
	}

	mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
	t.meter = mp
	t.stops = append(t.stops, mp.Shutdown)
	return t, nil
}

// stop ends the telemetry: the Prometheus listener stops and the
// providers send what they hold (the last metrics, the spans still
// batched), within telemetryStopTimeout. A failure is logged, not
// returned: the notes were served, only their telemetry is missing.
func (t *telemetry) stop(ctx context.Context, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryStopTimeout)
	defer cancel()
	// In reverse: the meter provider, the tracer provider, then the
	// listener (appended first, so scrapes keep working until the end).
	for i := len(t.stops) - 1; i >= 0; i-- {
		if err := t.stops[i](ctx); err != nil {
			logger.Warn("notes-mcp: stopping telemetry", "err", err)
		}
	}
	t.stops = nil
}
