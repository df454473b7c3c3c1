package txcontrol_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/txcontrol"
)

// TestAnalyzer checks every report and every look-alike against the
// "// want" comments of the packages under testdata/src, loaded in one run.
func TestAnalyzer(t *testing.T) {
	t.Parallel()
	pkgs := []string{
		"direct",       // Commit and Rollback on c.Tx(), through variables, fields, getters and interfaces
		"methodvalues", // tx.Commit and tx.Rollback taken as method values
		"callees",      // the transaction passed to functions of the package that commit it
		"ignored",      // //llmtoolvet:ignore silences a finding on its line and the next
		"example",      // the package the Example runs over
		"lookalikes",   // transactions begun by the code itself, other types named Tx: no report
		"nohandlers",   // a package that never touches a WriteCtx: no report
	}
	results := analysistest.Run(t, analysistest.TestData(), txcontrol.Analyzer, pkgs...)
	if len(results) != len(pkgs) {
		t.Fatalf("analysed %d packages, want %d", len(results), len(pkgs))
	}
}
