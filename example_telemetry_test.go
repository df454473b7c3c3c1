package llmtool_test

import (
	"context"
	"fmt"
	"log"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/llmtool/llmtool"
)

// With a TracerProvider, every call gets a span named after the GenAI
// semantic conventions, with the call's outcome among its attributes, and
// child spans for the phases of the call path (a write adds the wait for
// the write lock and the commit; a tool with guards, their run). Here the spans go to a
// recorder; a host passes its own provider (otel.GetTracerProvider()) with
// an exporter, and a MeterProvider for the metrics.
func ExampleOptions_telemetry() {
	db, done := exampleDB()
	defer done()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger(), TracerProvider: tp}, Books)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	reg.Invoke(context.Background(), llmtool.Call{Tool: "get_book", Args: []byte(`{"id": 2}`)})

	for _, s := range spans.Ended() {
		fmt.Print(s.Name())
		for _, a := range s.Attributes() {
			if a.Key == "llmtool.outcome" {
				fmt.Print(": ", a.Value.AsString())
			}
		}
		fmt.Println()
	}
	// Output:
	// llmtool.handler
	// execute_tool get_book: not_found
}
