package chatadapter_test

import (
	"context"
	"testing"

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
