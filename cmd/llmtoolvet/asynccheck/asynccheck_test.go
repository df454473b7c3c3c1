package asynccheck_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck"
)

// TestAnalyzer checks every report and every look-alike against the
// "// want" comments of the packages under testdata/src. The packages are
// loaded in one run, which shares the loading of the standard library.
func TestAnalyzer(t *testing.T) {
	t.Parallel()
	pkgs := []string{
		"goroutines", // go statements, Go methods, time.AfterFunc and AfterCommit hooks using the ctx
		"stores",     // the ctx stored where it outlives the call, or sent on a channel
		"returns",    // handler results carrying the ctx
		"outtypes",   // Out types holding channels, funcs and iterators
		"callees",    // the ctx passed to functions of the package that misuse it
		"lookalikes", // safe code that resembles the hazards: no report
	}
	results := analysistest.Run(t, analysistest.TestData(), asynccheck.Analyzer, pkgs...)
	if len(results) != len(pkgs) {
		t.Fatalf("analysed %d packages, want %d", len(results), len(pkgs))
	}
}

// TestSuggestedFixes applies the fix offered for goroutines, running the
// call synchronously, and compares with fixes.go.golden.
func TestSuggestedFixes(t *testing.T) {
	t.Parallel()
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), asynccheck.Analyzer, "fixes")
}
