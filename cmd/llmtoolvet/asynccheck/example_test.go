package asynccheck_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck"
)

// The analyzer runs like any go/analysis analyzer: here over the fixes
// package of its testdata (a GOPATH tree with a stub of llmtool), the way
// `go vet -vettool=$(command -v llmtoolvet) ./...` runs it over a module.
func Example() {
	gopath, err := filepath.Abs("testdata")
	if err != nil {
		log.Fatal(err)
	}
	cfg := &packages.Config{
		Mode: packages.LoadAllSyntax,
		Dir:  filepath.Join(gopath, "src", "fixes"),
		Env:  append(os.Environ(), "GOPATH="+gopath, "GO111MODULE=off", "GOFLAGS="),
	}
	pkgs, err := packages.Load(cfg, "fixes")
	if err != nil {
		log.Fatal(err)
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{asynccheck.Analyzer}, pkgs, nil)
	if err != nil {
		log.Fatal(err)
	}
	for act := range graph.All() {
		for _, d := range act.Diagnostics {
			pos := act.Package.Fset.Position(d.Pos)
			fmt.Printf("%s:%d: %.60s…\n", filepath.Base(pos.Filename), pos.Line, d.Message)
		}
	}
	// Output:
	// fixes.go:12: goroutine uses the ctx or transaction of the handler of tool…
	// fixes.go:13: goroutine uses the ctx or transaction of the handler of tool…
}
