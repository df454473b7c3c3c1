package txcontrol_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/txcontrol"
)

// The analyzer runs like any go/analysis analyzer: here over the example
// package of its testdata (a GOPATH tree with a stub of llmtool), the way
// `go vet -vettool=$(command -v llmtoolvet) ./...` runs it over a module.
// The handler rolls back the transaction of its WriteCtx in a defer, and
// passes it to a helper that rolls it back or commits it.
func Example() {
	gopath, err := filepath.Abs("testdata")
	if err != nil {
		log.Fatal(err)
	}
	cfg := &packages.Config{
		Mode: packages.LoadAllSyntax,
		Dir:  filepath.Join(gopath, "src", "example"),
		Env:  append(os.Environ(), "GOPATH="+gopath, "GO111MODULE=off", "GOFLAGS="),
	}
	pkgs, err := packages.Load(cfg, "example")
	if err != nil {
		log.Fatal(err)
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{txcontrol.Analyzer}, pkgs, nil)
	if err != nil {
		log.Fatal(err)
	}
	for act := range graph.All() {
		if act.Analyzer != txcontrol.Analyzer {
			continue
		}
		for _, d := range act.Diagnostics {
			pos := act.Package.Fset.Position(d.Pos)
			msg, advice, _ := strings.Cut(d.Message, ": the registry")
			fmt.Printf("%s:%d:%d: %s\n", filepath.Base(pos.Filename), pos.Line, pos.Column, msg)
			fmt.Printf("\tthe registry%s\n", advice)
		}
	}
	// Output:
	// example.go:24:17: llmtoolvet: Rollback on the transaction of a WriteCtx
	// 	the registry commits when the handler returns nil and rolls back on an error; return an error instead of rolling back, and never commit yourself
	// example.go:26:32: llmtoolvet: Rollback and Commit on the transaction of a WriteCtx (passed to finish, which calls Rollback at example.go:15:6 and Commit at example.go:18:12)
	// 	the registry commits when the handler returns nil and rolls back on an error; return an error instead of rolling back, and never commit yourself
}
