// Command llmtoolvet reports llmtool tool handlers whose work can outlive
// their transaction: goroutines and escaping closures that use a handler's
// ctx or transaction, stores of them where they outlive the call, handlers
// returning values that carry them, and Out types holding channels, funcs
// or iterators. See package
// github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck for what is reported
// and what is not.
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
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck"
)

func main() { singlechecker.Main(asynccheck.Analyzer) }
