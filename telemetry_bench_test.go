package llmtool_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/llmtool/llmtool"
)

// BenchmarkTelemetryOverhead compares a read Invoke (get_item) on three
// registries over the same SQLite file: without providers (the default),
// with OpenTelemetry's no-op providers (what a host that passes the global
// providers without installing an SDK gets), and with the SDK's providers
// recording (every span sampled, metrics aggregated by a manual reader;
// nothing exported). One call of each per round, in an order shuffled every
// round by a seeded generator, so all see the same machine load. It
// reports each path's median over the default's ("noop/off-p50",
// "sdk/off-p50"), and each path's p10, p50 and p90 in ns. ns/op is one
// round: all three paths.
//
// What no provider costs against the code before telemetry cannot be
// measured in one binary; BENCHMARKS.md compares BenchmarkRead of both.
func BenchmarkTelemetryOverhead(b *testing.B) {
	db := benchDB(b)
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tp := sdktrace.NewTracerProvider()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	names := []string{"off", "noop", "sdk"}
	opts := []llmtool.Options{
		{Logger: logger},
		{Logger: logger, TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()},
		{Logger: logger, TracerProvider: tp, MeterProvider: mp},
	}
	ctx := context.Background()
	paths := make([]func(), len(opts))
	for i := range opts {
		reg, err := llmtool.NewRegistry(db, &opts[i], itemTools)
		require.NoError(b, err)
		paths[i] = invokePath(b, ctx, reg, "get_item", readArgs)
		paths[i]() // reserve the read connections outside the timing
	}
	t := shuffledRounds(b, len(paths), func(j int) { paths[j]() })
	b.ReportMetric(t.pct(1, .5)/t.pct(0, .5), "noop/off-p50")
	b.ReportMetric(t.pct(2, .5)/t.pct(0, .5), "sdk/off-p50")
	t.reportSpread(b, names, "ns", 1)
}

// BenchmarkTelemetryAllocs reports the allocations of one read Invoke with
// each of BenchmarkTelemetryOverhead's registries, one sub-benchmark each
// (allocs/op; ns/op is noisier than the shuffled comparison).
func BenchmarkTelemetryAllocs(b *testing.B) {
	db := benchDB(b)
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tp := sdktrace.NewTracerProvider()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	for _, p := range []struct {
		name string
		opts llmtool.Options
	}{
		{"off", llmtool.Options{Logger: logger}},
		{"noop", llmtool.Options{Logger: logger, TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}},
		{"sdk", llmtool.Options{Logger: logger, TracerProvider: tp, MeterProvider: mp}},
	} {
		reg, err := llmtool.NewRegistry(db, &p.opts, itemTools)
		require.NoError(b, err)
		run := invokePath(b, context.Background(), reg, "get_item", readArgs)
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
		})
	}
}
