// Command llmtoolvet reports misuse of the transaction an llmtool tool
// handler runs in. Its analyzer, asynccheck, in a package of its own that
// documents what it reports and what it does not
// (github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck), finds work that
// can outlive the transaction: goroutines and escaping closures that use
// a handler's ctx or transaction, stores of them where they outlive the
// call, handlers returning values that carry them, and Out types holding
// channels, funcs or iterators.
//
// A deliberate finding is silenced by a comment
// //llmtoolvet:ignore, followed by the reason, on the reported line or on
// the line above it.
//
// Run it through go vet, which applies it to every package, tests included:
//
//	go install github.com/llmtool/llmtool/cmd/llmtoolvet@latest
//	go vet -vettool="$(command -v llmtoolvet)" ./...
//
// or on its own, which also offers -fix to apply the suggested fixes:
//
//	llmtoolvet ./...
//
// It exits non-zero when it reports anything.
package main

import (
	"golang.org/x/tools/go/analysis/multichecker"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck"
)

func main() { multichecker.Main(asynccheck.Analyzer) }
