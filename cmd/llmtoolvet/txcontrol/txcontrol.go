// Package txcontrol defines an llmtoolvet analyzer that reports Commit and
// Rollback called on the transaction of an llmtool write call.
//
// (*llmtool.WriteCtx).Tx hands a write handler the call's *sql.Tx, for code
// that wants one (sqlc's New(tx), for instance). The transaction belongs to
// the registry: it commits it when the handler returns nil and rolls it
// back when the handler returns an error. A handler that commits it itself
// makes its writes permanent before the registry's guards, AfterCommit
// hooks and result encoding have run, and a handler that rolls it back
// hides its failure from the registry; the registry refuses either at run
// time, but only once the call is made. The analyzer reports, in any
// function of the package (handlers, guards, helpers, tests):
//
//   - a call of (*sql.Tx).Commit or Rollback on a value that came from
//     (*llmtool.WriteCtx).Tx: c.Tx().Commit(), tx := c.Tx(); tx.Rollback(),
//     defer c.Tx().Rollback(), including through local variables, struct
//     fields and slices that hold it, an embedded *sql.Tx, an interface
//     variable it was assigned to, and a method expression
//     (*sql.Tx).Commit(tx);
//   - the method value tx.Commit or tx.Rollback taken of that transaction
//     (f := tx.Commit; f()), wherever it is called later;
//   - a call that passes that transaction (or a value holding it) to a
//     function or method declared in the same package, or to a function
//     literal bound to a local variable, that commits or rolls it back,
//     at any depth; the finding is on the call, which names the callee
//     and the position of its Commit or Rollback.
//
// The transaction is also followed out of same-package functions that
// return it (func (s *store) tx() *sql.Tx { return s.c.Tx() }) and into
// values that same-package methods store it in.
//
// Not reported, by design:
//
//   - Commit and Rollback on a *sql.Tx the code began itself
//     (db.BeginTx(c, nil) on a *sql.DB it got elsewhere), even inside a
//     handler and even when the handler's ctx is the BeginTx context;
//   - a helper that commits whatever transaction it is given, when no call
//     in the package gives it a WriteCtx's transaction;
//   - methods named Commit or Rollback of other types, including types
//     named Tx in other packages;
//   - other uses of the transaction: c.Tx().Exec, c.Tx().Prepare and
//     handing it to a query layer are what Tx is for.
//
// A finding that is deliberate, such as a test proving that the registry
// refuses a handler's own commit at run time, is silenced by a comment
// //llmtoolvet:ignore, followed by the reason, on the reported line or on
// the line above it (the same directive as for every llmtoolvet analyzer).
//
// The analysis is flow-insensitive within a function: a variable that
// holds the WriteCtx's transaction anywhere in a function holds it
// everywhere in it, so reassigning it a transaction begun elsewhere and
// committing that is still reported; likewise a struct, slice or map
// holding the transaction is taken to hold it in every field and element
// that can hold a *sql.Tx. It follows calls only into functions
// and methods declared in the package being analyzed; a transaction
// committed by code of another package, through an interface method call
// or through a function value other than a local literal is not seen.
package txcontrol

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/internal/ignore"
)

// pkgPath is the import path of the llmtool package whose WriteCtx hands
// out the transaction.
const pkgPath = "github.com/llmtool/llmtool"

// Analyzer reports Commit and Rollback on the transaction of an llmtool
// WriteCtx. Run it with go vet -vettool through cmd/llmtoolvet.
var Analyzer = &analysis.Analyzer{
	Name: "txcontrol",
	Doc:  "report Commit and Rollback on the transaction of an llmtool WriteCtx\n\nThe registry commits a write call's transaction when the handler returns nil and rolls it back when it returns an error. txcontrol reports calls of Commit or Rollback, and their method values, on a *sql.Tx that came from (*llmtool.WriteCtx).Tx, directly or in a function of the package it is passed to.",
	URL:  "https://pkg.go.dev/github.com/llmtool/llmtool/cmd/llmtoolvet/txcontrol",
	Run:  run,
}

// advice ends every message.
const advice = "the registry commits when the handler returns nil and rolls back on an error; return an error instead of rolling back, and never commit yourself"

func run(pass *analysis.Pass) (any, error) {
	if !usesWriteCtxTx(pass.TypesInfo) {
		return nil, nil
	}
	c := &checker{
		pass:      pass,
		decls:     make(map[*types.Func]*ast.FuncDecl),
		summaries: make(map[summaryKey]*summary),
		ignored:   ignore.Collect(pass),
	}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func); ok {
					c.decls[fn] = fd
				}
			}
		}
	}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if fn, ok := pass.TypesInfo.Defs[d.Name].(*types.Func); ok && d.Body != nil {
					c.reportAll(c.summarize(d, fn.Signature(), 0).findings)
				}
			case *ast.GenDecl:
				if d.Tok == token.VAR { // handlers given to llmtool.Write at package level
					s := c.newScope(d, nil)
					s.analyse()
					c.reportAll(s.findings)
				}
			}
		}
	}
	return nil, nil
}

// usesWriteCtxTx reports whether the package calls or names
// (*llmtool.WriteCtx).Tx at all; without it there is nothing to find.
func usesWriteCtxTx(info *types.Info) bool {
	for _, obj := range info.Uses {
		if isWriteCtxTx(obj) {
			return true
		}
	}
	return false
}

// checker holds the state of one pass.
type checker struct {
	pass      *analysis.Pass
	decls     map[*types.Func]*ast.FuncDecl // functions declared in the package
	summaries map[summaryKey]*summary       // functions analysed with some parameters holding the tx
	ignored   ignore.Lines
}

// summaryKey names the analysis of a function (a *ast.FuncDecl or
// *ast.FuncLit) with some parameters holding the transaction: bit 0 is the
// receiver, bit i+1 parameter i.
type summaryKey struct {
	fn   ast.Node
	mask uint64
}

// summary is what a caller needs to know about a function analysed with
// some parameters holding the transaction.
type summary struct {
	results  []bool    // result i may hold the transaction
	paramOut uint64    // parameters (bits as in summaryKey) the function stores the transaction through
	findings []finding // Commit and Rollback found in it
}

// finding is a Commit or Rollback on the transaction, seen from one
// function.
type finding struct {
	op       string    // "Commit" or "Rollback"
	at, end  token.Pos // where in this function: the method, or the call passing the tx on
	opPos    token.Pos // the Commit or Rollback itself
	value    bool      // a method value, not a call
	chain    []string  // the functions the tx was passed through to reach opPos, outermost first
	callText string    // the method value's text, for messages
}

func (f finding) key() string { return fmt.Sprintf("%d/%d/%s", f.at, f.opPos, f.op) }

// summarize analyses fn (a *ast.FuncDecl or *ast.FuncLit of signature sig)
// with the parameters in mask holding the transaction.
func (c *checker) summarize(fn ast.Node, sig *types.Signature, mask uint64) *summary {
	key := summaryKey{fn, mask}
	if sum := c.summaries[key]; sum != nil {
		return sum
	}
	// While fn is being analysed (recursion), its results hold nothing.
	sum := &summary{results: make([]bool, sig.Results().Len())}
	c.summaries[key] = sum
	s := c.newScope(fn, sig)
	for obj, bit := range s.params {
		if mask&(1<<bit) != 0 {
			s.tainted[obj] = true
		}
	}
	s.sum = sum
	s.analyse()
	sum.findings = s.findings
	return sum
}

// reportAll reports findings, one diagnostic per place.
func (c *checker) reportAll(fs []finding) {
	var order []token.Pos
	byAt := make(map[token.Pos][]finding)
	for _, f := range fs {
		if byAt[f.at] == nil {
			order = append(order, f.at)
		}
		byAt[f.at] = append(byAt[f.at], f)
	}
	for _, at := range order {
		if c.ignored.Silenced(c.pass.Fset, at) {
			continue
		}
		group := byAt[at]
		c.pass.Report(analysis.Diagnostic{Pos: at, End: group[0].end, Category: "txcontrol", Message: c.message(group)})
	}
}

// message describes the findings at one place.
func (c *checker) message(group []finding) string {
	f := group[0]
	if f.chain == nil {
		if f.value {
			return fmt.Sprintf("llmtoolvet: %s on the transaction of a WriteCtx, taken as a method value (%s): %s", f.op, f.callText, advice)
		}
		return fmt.Sprintf("llmtoolvet: %s on the transaction of a WriteCtx: %s", f.op, advice)
	}
	// Passed on to callees: name each operation once, with where it is,
	// grouped by the functions it was passed through.
	type uses struct{ calls, values []string }
	var ops, chains []string
	byChain := make(map[string]*uses)
	for _, f := range group {
		if slices.Contains(ops, f.op) {
			continue
		}
		ops = append(ops, f.op)
		chain := strings.Join(f.chain, ", then to ")
		u := byChain[chain]
		if u == nil {
			u = new(uses)
			byChain[chain] = u
			chains = append(chains, chain)
		}
		use := f.op + " at " + c.position(f.opPos)
		if f.value {
			u.values = append(u.values, use)
		} else {
			u.calls = append(u.calls, use)
		}
	}
	var paths []string
	for _, chain := range chains {
		var does []string
		if u := byChain[chain]; len(u.calls) > 0 {
			does = append(does, "calls "+strings.Join(u.calls, " and "))
		}
		if u := byChain[chain]; len(u.values) > 0 {
			does = append(does, "takes the method value "+strings.Join(u.values, " and "))
		}
		paths = append(paths, fmt.Sprintf("passed to %s, which %s", chain, strings.Join(does, " and ")))
	}
	return fmt.Sprintf("llmtoolvet: %s on the transaction of a WriteCtx (%s): %s", strings.Join(ops, " and "), strings.Join(paths, "; "), advice)
}

// position renders pos as file:line:col with the file's base name.
func (c *checker) position(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d:%d", filepath.Base(p.Filename), p.Line, p.Column)
}

// visit collects the findings of one node of the body.
func (s *scope) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.CallExpr:
		if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
			s.called[sel] = true
			// (*sql.Tx).Commit(tx): a method expression called on it.
			if selection, ok := s.info().Selections[sel]; ok && selection.Kind() == types.MethodExpr &&
				isTxControl(selection.Obj()) && len(n.Args) > 0 && s.holds(n.Args[0]) {
				s.add(finding{op: sel.Sel.Name, at: sel.Sel.Pos(), end: n.End(), opPos: sel.Sel.Pos()})
			}
		}
		s.passedOn(n)
	case *ast.SelectorExpr:
		selection, ok := s.info().Selections[n]
		if !ok || selection.Kind() != types.MethodVal || !s.controls(n, selection) {
			return true
		}
		f := finding{op: n.Sel.Name, at: n.Sel.Pos(), end: n.End(), opPos: n.Sel.Pos()}
		if !s.called[n] {
			f.value, f.callText = true, types.ExprString(n)
		}
		s.add(f)
	}
	return true
}

// controls reports whether the method selected by sel is Commit or
// Rollback of the WriteCtx's transaction.
func (s *scope) controls(sel *ast.SelectorExpr, selection *types.Selection) bool {
	if isTxControl(selection.Obj()) {
		return s.holds(sel.X)
	}
	// An interface variable the transaction was assigned to:
	// var t interface{ Commit() error } = c.Tx(); t.Commit().
	if fn, ok := selection.Obj().(*types.Func); ok && types.IsInterface(selection.Recv()) &&
		(fn.Name() == "Commit" || fn.Name() == "Rollback") {
		switch x := ast.Unparen(sel.X).(type) {
		case *ast.Ident, *ast.CallExpr:
			return s.holds(x)
		}
	}
	return false
}

// passedOn collects what a function of the package does with the
// transaction this call passes it, beyond what it does on its own.
func (s *scope) passedOn(call *ast.CallExpr) {
	t := s.target(call)
	if t == nil || t.mask == 0 {
		return
	}
	own := make(map[string]bool) // found with no argument holding the tx
	for _, f := range s.c.summarize(t.fn, t.sig, 0).findings {
		own[f.key()] = true
	}
	for _, f := range s.c.summarize(t.fn, t.sig, t.mask).findings {
		if own[f.key()] {
			continue
		}
		s.add(finding{op: f.op, at: call.Pos(), end: call.End(), opPos: f.opPos, value: f.value,
			chain: append([]string{t.name}, f.chain...)})
	}
}

func (s *scope) add(f finding) {
	if k := f.key(); !s.found[k] {
		s.found[k] = true
		s.findings = append(s.findings, f)
	}
}
