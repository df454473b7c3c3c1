package chatadapter_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
)

// BenchmarkTools compares a request's tool set from the adapter's cache
// with the baseline of converting every definition again (a new Adapter
// per request), over the notes tools.
func BenchmarkTools(b *testing.B) {
	reg := newNotesRegistry(b)
	ctx := llmtool.WithTenant(context.Background(), tenant)
	for _, shape := range []chatadapter.Shape{chatadapter.OpenAIChat, chatadapter.OpenAIChatStrict, chatadapter.Gemini} {
		b.Run(shape.String()+"/rebuilt", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := chatadapter.New(reg, nil).Tools(ctx, shape); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(shape.String()+"/cached", func(b *testing.B) {
			a := chatadapter.New(reg, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Tools(ctx, shape); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDispatch compares dispatching a one-call OpenAI turn (parse,
// Invoke, render) with the baseline of calling Invoke directly.
func BenchmarkDispatch(b *testing.B) {
	reg := newNotesRegistry(b)
	ctx := llmtool.WithTenant(context.Background(), tenant)
	a := chatadapter.New(reg, nil)
	args := []byte(`{"noteId":"roadmap"}`)
	turn := []byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_note","arguments":"{\"noteId\":\"roadmap\"}"}}]}`)
	b.Run("invoke", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := reg.Invoke(ctx, llmtool.Call{Tool: "get_note", Args: args}); res.IsError {
				b.Fatal(res.Text())
			}
		}
	})
	b.Run("dispatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := a.Dispatch(ctx, chatadapter.OpenAIChat, turn)
			if err != nil || r.Outcomes[0].Result.IsError {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDispatchRatio times Dispatch and direct Invoke alternately in
// one loop, so that both meet the same machine, and reports the ratio of
// their medians (the overhead budget is 1.15), for each API's turn.
func BenchmarkDispatchRatio(b *testing.B) {
	reg := newNotesRegistry(b)
	ctx := llmtool.WithTenant(context.Background(), tenant)
	a := chatadapter.New(reg, nil)
	args := []byte(`{"noteId":"roadmap"}`)
	turns := map[chatadapter.Shape]string{
		chatadapter.OpenAIChat:      `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_note","arguments":"{\"noteId\":\"roadmap\"}"}}]}`,
		chatadapter.OpenAIResponses: `{"object":"response","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_note","arguments":"{\"noteId\":\"roadmap\"}"}]}`,
		chatadapter.Anthropic:       `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_note","input":{"noteId":"roadmap"}}]}`,
		chatadapter.Gemini:          `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_note","args":{"noteId":"roadmap"}}}]}}]}`,
	}
	for _, shape := range []chatadapter.Shape{chatadapter.OpenAIChat, chatadapter.OpenAIResponses, chatadapter.Anthropic, chatadapter.Gemini} {
		turn := []byte(turns[shape])
		b.Run(shape.String(), func(b *testing.B) {
			var invoke, dispatch []time.Duration
			timeInvoke := func() {
				t := time.Now()
				if res := reg.Invoke(ctx, llmtool.Call{Tool: "get_note", Args: args}); res.IsError {
					b.Fatal(res.Text())
				}
				invoke = append(invoke, time.Since(t))
			}
			timeDispatch := func() {
				t := time.Now()
				if r, err := a.Dispatch(ctx, shape, turn); err != nil || r.Outcomes[0].Result.IsError {
					b.Fatal(err)
				}
				dispatch = append(dispatch, time.Since(t))
			}
			// Each goes first every other time, so neither pays for the
			// other's leftovers (a warm cache, a collection it set off).
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					timeInvoke()
					timeDispatch()
				} else {
					timeDispatch()
					timeInvoke()
				}
			}
			b.ReportMetric(float64(median(dispatch))/float64(median(invoke)), "dispatch/invoke-p50")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
