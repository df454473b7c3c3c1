// Command llmtoolvet reports misuse of the transaction an llmtool tool
// handler runs in. It runs two analyzers, each in its own package, which
// documents what it reports and what it does not:
//
//   - asynccheck (flag -asynccheck): work that can outlive the
//     transaction: goroutines and escaping closures that use a handler's
//     ctx or transaction, stores of them where they outlive the call,
//     handlers returning values that carry them, and Out types holding
//     channels, funcs or iterators
//     (github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck);
//   - txcontrol (flag -txcontrol): Commit or Rollback called on the
//     transaction of a WriteCtx, which the registry commits or rolls back
//     itself (github.com/llmtool/llmtool/cmd/llmtoolvet/txcontrol).
//
// A deliberate finding of either is silenced by a comment
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
// It exits non-zero when it reports anything. Both analyzers run by
// default; -asynccheck or -txcontrol alone runs just that one.
package main

import (
	"golang.org/x/tools/go/analysis/multichecker"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck"
	"github.com/llmtool/llmtool/cmd/llmtoolvet/txcontrol"
)

func main() { multichecker.Main(asynccheck.Analyzer, txcontrol.Analyzer) }
