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
// Run it through go vet, which applies it to every package, tests included.
// Track it as a tool of the module, so that its version matches the
// llmtool the module uses:
//
//	go get -tool github.com/llmtool/llmtool/cmd/llmtoolvet
//	go vet -vettool="$(go tool -n llmtoolvet || echo missing-llmtoolvet)" ./...
//
// The "|| echo missing-llmtoolvet" matters: where llmtoolvet is not a tool
// of the module, go tool -n prints nothing to standard output, and a bare
// -vettool="" runs plain go vet, which exits 0 as if the analyzer had
// passed. With it, go vet fails with go: no such tool "llmtoolvet" and
// fork/exec .../missing-llmtoolvet: no such file or directory. Installed
// instead:
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
