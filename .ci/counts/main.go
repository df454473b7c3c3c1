// Command counts prints the size of a package's exported API: exported
// names (functions, types, variables, constants and methods of exported
// types), the methods of one type, and the longest non-test Go file.
//
//	go run ./.ci/counts [-dir .] [-type Registry]
//
// .ci/run prints it for the root package, so a change that grows the API
// or a file shows in CI's log. It lives under .ci, which ./... skips.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	dir := flag.String("dir", ".", "package directory")
	typ := flag.String("type", "Registry", "type whose methods to count")
	flag.Parse()
	if err := run(*dir, *typ); err != nil {
		fmt.Fprintln(os.Stderr, "counts:", err)
		os.Exit(1)
	}
}

func run(dir, typ string) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	sort.Strings(names)
	fset := token.NewFileSet()
	files := map[string][]*ast.File{} // by package name
	longest, lines := "", 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			return err
		}
		files[f.Name.Name] = append(files[f.Name.Name], f)
		if n := bytes.Count(src, []byte("\n")); n > lines {
			longest, lines = filepath.Base(name), n
		}
	}
	if len(files) == 0 {
		return fmt.Errorf("no non-test Go files in %s", dir)
	}
	pkgs := make([]string, 0, len(files))
	for p := range files {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		d, err := doc.NewFromFiles(fset, files[p], "x")
		if err != nil {
			return err
		}
		n := 0
		for _, c := range d.Consts {
			n += len(c.Names)
		}
		for _, v := range d.Vars {
			n += len(v.Names)
		}
		n += len(d.Funcs)
		methods := 0
		for _, t := range d.Types {
			n++
			for _, c := range t.Consts {
				n += len(c.Names)
			}
			for _, v := range t.Vars {
				n += len(v.Names)
			}
			n += len(t.Funcs) + len(t.Methods)
			if t.Name == typ {
				methods = len(t.Methods)
			}
		}
		fmt.Printf("package %s: %d exported names, %d methods of %s, longest file %s (%d lines)\n", p, n, methods, typ, longest, lines)
	}
	return nil
}
