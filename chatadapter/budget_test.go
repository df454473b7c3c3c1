package chatadapter_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/stretchr/testify/require"
)

type pageIn struct {
	Offset int `json:"offset,omitempty" minimum:"0"`
	N      int `json:"n" minimum:"0"`
}

type pageOut struct {
	IDs       []int              `json:"ids"`
	Truncated *llmtool.Truncated `json:"truncated,omitempty"`
}

var pagedTools = llmtool.DefineTools("paged", llmtool.Read("list_ids", "List IDs.",
	func(_ *llmtool.ReadCtx, in pageIn) (pageOut, error) {
		out := pageOut{IDs: []int{}}
		for i := range in.N {
			out.IDs = append(out.IDs, in.Offset+i+1)
		}
		return out, nil
	}, llmtool.Continue(func(in pageIn, shown int) pageIn { in.Offset += shown; return in })))

// A chat adapter with an output budget gets the cut result, in the
// provider's shape; without one, the whole result.
func TestOutputBudgetChat(t *testing.T) {
	t.Parallel()
	// 249 bytes: one more ID, 252.
	cut := `{"ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36],"truncated":{"shown":36,"total":100,"list":"ids","next":"Showing 36 of 100 ids; call list_ids with {\"offset\":36,\"n\":100} for the rest."}}`
	tests := []struct {
		name   string
		shape  chatadapter.Shape
		budget int
		turn   string
		want   string // the one message to send back
	}{
		{"OpenAI Chat", chatadapter.OpenAIChat, 250,
			`[{"id":"c1","type":"function","function":{"name":"list_ids","arguments":"{\"n\":100}"}}]`,
			`{"role":"tool","tool_call_id":"c1","content":` + quote(t, cut) + `}`},
		{"Anthropic", chatadapter.Anthropic, 250,
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"list_ids","input":{"n":100}}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":` + quote(t, cut) + `}],"is_error":false}]}`},
		{"no budget", chatadapter.OpenAIChat, 0,
			`[{"id":"c1","type":"function","function":{"name":"list_ids","arguments":"{\"n\":3}"}}]`,
			`{"role":"tool","tool_call_id":"c1","content":"{\"ids\":[1,2,3]}"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg, err := llmtool.NewRegistry(openDB(t), &llmtool.Options{ValidateOutput: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, pagedTools)
			require.NoError(t, err)
			ctx := context.Background()
			r, err := chatadapter.New(reg, &chatadapter.Options{OutputBudget: tt.budget}).Dispatch(ctx, tt.shape, []byte(tt.turn))
			require.NoError(t, err)
			require.Len(t, r.Outcomes, 1)
			res := r.Outcomes[0].Result
			require.False(t, res.IsError, res.Text())
			if tt.budget > 0 {
				require.LessOrEqual(t, len(res.JSON), tt.budget)
			}
			var m map[string]any
			require.NoError(t, json.Unmarshal(res.JSON, &m))
			require.NotContains(t, m, "error")
			require.Len(t, r.Messages, 1)
			require.Equal(t, tt.want, string(r.Messages[0]))
		})
	}
}

func quote(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}
