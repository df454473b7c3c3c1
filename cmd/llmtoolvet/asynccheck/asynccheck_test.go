package asynccheck_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck"
)

func TestAnalyzer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pkg  string
		what string
	}{
		{"goroutines", "go statements, Go methods, time.AfterFunc and AfterCommit hooks using the ctx"},
		{"stores", "the ctx stored where it outlives the call, or sent on a channel"},
		{"returns", "handler results carrying the ctx"},
		{"outtypes", "Out types holding channels, funcs and iterators"},
		{"callees", "the ctx passed to functions of the package that misuse it"},
		{"lookalikes", "safe code that resembles the hazards"},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			t.Parallel()
			analysistest.Run(t, analysistest.TestData(), asynccheck.Analyzer, tt.pkg)
		})
	}
}

func TestSuggestedFixes(t *testing.T) {
	t.Parallel()
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), asynccheck.Analyzer, "fixes")
}
