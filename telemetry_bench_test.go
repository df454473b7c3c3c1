package llmtool_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

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
	times := make([][]time.Duration, len(paths))
	rng := rand.New(rand.NewPCG(2026, 12))
	order := []int{0, 1, 2}
	for b.Loop() {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, j := range order {
			t0 := time.Now()
			paths[j]()
			times[j] = append(times[j], time.Since(t0))
		}
	}
	pct := func(i int, p float64) float64 {
		s := slices.Sorted(slices.Values(times[i]))
		return float64(s[int(p*float64(len(s)-1))])
	}
	b.ReportMetric(pct(1, .5)/pct(0, .5), "noop/off-p50")
	b.ReportMetric(pct(2, .5)/pct(0, .5), "sdk/off-p50")
	for i, name := range names {
		b.ReportMetric(pct(i, .1), "ns-p10-"+name)
		b.ReportMetric(pct(i, .5), "ns-p50-"+name)
		b.ReportMetric(pct(i, .9), "ns-p90-"+name)
	}
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
