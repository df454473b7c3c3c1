// Command counts holds llmtool to its size budget, and fails when the
// budget is exceeded:
//
//   - the root package exports at most 110 names (functions, types,
//     variables, constants and methods of exported types);
//
//   - the whole public surface, every non-internal package of the module
//     counted the same way, exports at most 380 names (not the examples,
//     testdata, the nested modules or the commands' package main);
//
//   - *Registry has at most 15 methods;
//
//   - no non-test Go file of the library (every package but the examples
//     and testdata) is longer than 600 lines.
//
//     go run ./.ci/counts
//
// .ci/run runs it from the module root. It lives under .ci, which ./...
// skips.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// The budget.
const (
	maxRootNames       = 110
	maxSurfaceNames    = 380
	maxRegistryMethods = 15
	maxFileLines       = 600
)

func main() {
	problems, err := run(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "counts:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "counts: over budget:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

// run prints the figures of the module at root and returns what exceeds
// the budget.
func run(root string) ([]string, error) {
	var problems []string
	names, methods, _, err := exported(root, "Registry")
	if err != nil {
		return nil, err
	}
	fmt.Printf("package llmtool: %d exported names (budget %d), %d methods of Registry (budget %d)\n",
		names, maxRootNames, methods, maxRegistryMethods)
	if names > maxRootNames {
		problems = append(problems, fmt.Sprintf("the root package exports %d names; at most %d (move a feature to its own package, or unexport what no caller needs)", names, maxRootNames))
	}
	if methods > maxRegistryMethods {
		problems = append(problems, fmt.Sprintf("*Registry has %d methods; at most %d (give the feature a handle or a package of its own)", methods, maxRegistryMethods))
	}
	dirs, err := libraryDirs(root)
	if err != nil {
		return nil, err
	}
	pkgs, err := surface(root, dirs)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, p := range pkgs {
		fmt.Printf("  %-28s %3d\n", p.dir, p.names)
		total += p.names
	}
	fmt.Printf("public surface: %d exported names over %d packages (budget %d)\n", total, len(pkgs), maxSurfaceNames)
	if total > maxSurfaceNames {
		problems = append(problems, fmt.Sprintf("the public surface exports %d names; at most %d (move what only llmtool uses to internal/, or unexport it)", total, maxSurfaceNames))
	}
	long, err := longFiles(dirs)
	if err != nil {
		return nil, err
	}
	for _, f := range long {
		problems = append(problems, fmt.Sprintf("%s has %d lines; at most %d (split it by concern)", f.path, f.lines, maxFileLines))
	}
	fmt.Printf("library files over %d lines: %d\n", maxFileLines, len(long))
	return problems, nil
}

// errNoFiles is exported's answer for a directory without a package.
var errNoFiles = errors.New("no non-test Go files")

// exported counts the exported names of the package in dir and the
// methods of its type typ.
func exported(dir, typ string) (names, methods int, pkgName string, err error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, 0, "", err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return 0, 0, "", err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return 0, 0, "", fmt.Errorf("%s: %w", dir, errNoFiles)
	}
	d, err := doc.NewFromFiles(fset, files, "x")
	if err != nil {
		return 0, 0, "", err
	}
	for _, c := range d.Consts {
		names += len(c.Names)
	}
	for _, v := range d.Vars {
		names += len(v.Names)
	}
	names += len(d.Funcs)
	for _, t := range d.Types {
		names++
		for _, c := range t.Consts {
			names += len(c.Names)
		}
		for _, v := range t.Vars {
			names += len(v.Names)
		}
		names += len(t.Funcs) + len(t.Methods)
		if t.Name == typ {
			methods = len(t.Methods)
		}
	}
	return names, methods, d.Name, nil
}

// pkg is one package of the public surface and its count.
type pkg struct {
	dir   string
	names int
}

// surface counts the exported names of every public package under root:
// every library directory (libraryDirs) with non-test Go files, except
// internal/ trees, nested modules (a go.mod of their own) and package
// main.
func surface(root string, dirs []string) ([]pkg, error) {
	var pkgs []pkg
	var private []string // internal/ trees and nested modules
	for _, dir := range dirs {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return nil, err
		}
		rel = filepath.ToSlash(rel)
		if slices.ContainsFunc(private, func(p string) bool { return strings.HasPrefix(rel+"/", p+"/") }) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); (err == nil && rel != ".") || filepath.Base(dir) == "internal" {
			private = append(private, rel)
			continue
		}
		n, _, pkgName, err := exported(dir, "")
		if errors.Is(err, errNoFiles) || pkgName == "main" {
			continue
		}
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, pkg{rel, n})
	}
	return pkgs, nil
}

// libraryDirs returns the directories of the library under root, in
// lexical order: every one but hidden ones (.ci itself), testdata and the
// examples.
func libraryDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "examples") {
			return filepath.SkipDir
		}
		dirs = append(dirs, path)
		return nil
	})
	return dirs, err
}

type file struct {
	path  string
	lines int
}

// longFiles returns the library's non-test Go files over the budget,
// longest first: every file in dirs except tests.
func longFiles(dirs []string) ([]file, error) {
	var long []file
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			if n := bytes.Count(src, []byte("\n")); n > maxFileLines {
				long = append(long, file{path, n})
			}
		}
	}
	sort.Slice(long, func(i, j int) bool { return long[i].lines > long[j].lines })
	return long, nil
}
