package llmtool_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// TestCategoryDefault: a tool's Spec names its man catalog group from
// definition on; "General" when the tool sets none.
func TestCategoryDefault(t *testing.T) {
	t.Parallel()
	noop := func(*llmtool.ReadCtx, struct{}) (struct{}, error) { return struct{}{}, nil }
	write := func(*llmtool.WriteCtx, struct{}) (struct{}, error) { return struct{}{}, nil }
	tests := []struct {
		name string
		tool *llmtool.Tool
		want string
	}{
		{"read tool without Category", llmtool.Read("cat_read", "Read.", noop), "General"},
		{"write tool without Category", llmtool.Write("cat_write", "Write.", write), "General"},
		{"empty Category", llmtool.Read("cat_empty", "Read.", noop, llmtool.Category("")), "General"},
		{"Category set", llmtool.Read("cat_books", "Read.", noop, llmtool.Category("Books")), "Books"},
		{"Category General", llmtool.Read("cat_general", "Read.", noop, llmtool.Category("General")), "General"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.tool.Spec().Category)
		})
	}
}
