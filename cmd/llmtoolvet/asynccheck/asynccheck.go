// Package asynccheck defines an llmtoolvet analyzer, which reports llmtool
// tool handlers whose work can outlive their transaction.
//
// An llmtool handler gets a *llmtool.ReadCtx or *llmtool.WriteCtx that is
// valid only while the handler runs: when it returns, the registry commits
// or rolls back the transaction and every later use of the ctx, its
// *sql.Tx or rows read from it fails with sql.ErrTxDone. Work that runs
// later therefore either fails at run time or, worse, reads and writes
// outside the transaction that was supposed to hold it. The analyzer finds
// the ways Go code defers work past the return:
//
//   - a go statement whose function or arguments use the handler's ctx, its
//     transaction, or a value derived from them (c.Tx(), rows, a
//     context.WithTimeout(c, ...), a data layer built with New(c.Tx()), a
//     closure capturing any of these), in the handler itself or in a
//     function of the same package that the handler passes them to;
//     likewise such a closure given to a method named Go or TryGo
//     (sync.WaitGroup, errgroup.Group and the like) or to time.AfterFunc;
//   - a closure using the ctx or transaction registered with
//     (*llmtool.WriteCtx).AfterCommit, which runs after the commit;
//   - the ctx or transaction (or a value derived from it) stored where it
//     outlives the call: a package-level variable, a variable captured from
//     outside the handler, a field or element reached through a pointer,
//     map or slice parameter or receiver, or sent on a channel;
//   - a tool handler that returns a value carrying its ctx or transaction,
//     such as a closure capturing it or a type whose MarshalJSON would
//     query through it;
//   - an Out type (the second type argument of llmtool.Read or
//     llmtool.Write) that contains a channel, a func or an iterator
//     (iter.Seq, iter.Seq2) at any depth: values that do their work after
//     the transaction ended. llmtool.Read and llmtool.Write panic on such a
//     type when the tool is defined; the analyzer reports it before any
//     test runs.
//
// Handlers are function literals and declared functions whose first
// parameter is *llmtool.ReadCtx or *llmtool.WriteCtx (tool handlers,
// guards and helpers alike); they are matched by the package path
// github.com/llmtool/llmtool and the type name.
//
// Not reported, by design:
//
//   - a go statement that uses only plain values, such as strings and
//     numbers copied out of the ctx or out of query results
//     (go notify(llmtool.ScopeFrom(c), note.ID) evaluates its arguments before the
//     goroutine starts);
//   - a closure capturing the ctx that is called synchronously, or
//     deferred: a deferred call runs before the handler returns, inside
//     the transaction;
//   - passing the ctx to a function that uses it synchronously;
//   - storing the ctx or a derived value into a local variable, struct or
//     slice of the handler: the local becomes call-scoped itself and is
//     reported if it escapes in turn.
//
// A goroutine that uses the ctx or transaction is reported even when the
// handler joins it (sync.WaitGroup.Wait, errgroup.Group.Wait) before
// returning. Joining keeps it inside the transaction only on the paths that
// reach the Wait; a panic in the goroutine escapes the registry's recovery
// and ends the process; and a transaction runs its statements one at a time
// anyway, so the goroutine buys no parallelism. Run such queries in the
// handler's own goroutine.
//
// A finding that is deliberate, such as a test proving that the registry
// catches a leaked goroutine at run time, is silenced by a comment
// //llmtoolvet:ignore, followed by the reason, on the reported line or on
// the line above it.
//
// The analysis is syntactic and flow-insensitive within a function, and
// follows calls only into functions and methods declared in the package
// being analyzed. Work deferred by code of other packages, by interface
// method calls or through function values is not seen; the registry's
// run-time check (sql.ErrTxDone, logged with the tool's name) and the llmtooltest
// harness catch what escapes it.
package asynccheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"reflect"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/internal/ignore"
	"github.com/llmtool/llmtool/cmd/llmtoolvet/internal/typesx"
)

// PkgPath is the import path of the llmtool package whose ReadCtx and
// WriteCtx mark handlers.
const PkgPath = "github.com/llmtool/llmtool"

// Analyzer reports llmtool handlers whose work can outlive their
// transaction. Run it with go vet -vettool, or as a standalone command
// (see cmd/llmtoolvet).
var Analyzer = &analysis.Analyzer{
	Name:     "asynccheck",
	Doc:      "report llmtool handlers whose ctx or transaction outlives the call\n\nasynccheck reports go statements and escaping closures that use an llmtool handler's ctx or transaction, stores of them into places that outlive the call, handlers returning values that carry them, and Out types containing channels, funcs or iterators.",
	URL:      "https://pkg.go.dev/github.com/llmtool/llmtool/cmd/llmtoolvet/asynccheck",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

func run(pass *analysis.Pass) (any, error) {
	if !importsLLMTool(pass.Pkg) {
		return nil, nil
	}
	insp := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	c := &checker{
		pass:      pass,
		decls:     make(map[*types.Func]*ast.FuncDecl),
		reported:  make(map[string]bool),
		summaries: make(map[summaryKey]*summary),
		toolNames: make(map[*ast.FuncLit]string),
		ignored:   ignore.Collect(pass),
	}
	insp.Preorder([]ast.Node{(*ast.FuncDecl)(nil)}, func(n ast.Node) {
		fd := n.(*ast.FuncDecl)
		if fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func); ok && fd.Body != nil {
			c.decls[fn] = fd
		}
	})
	insp.Preorder([]ast.Node{(*ast.FuncDecl)(nil), (*ast.FuncLit)(nil), (*ast.CallExpr)(nil)}, func(n ast.Node) {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if fn, ok := pass.TypesInfo.Defs[n.Name].(*types.Func); ok && n.Body != nil {
				c.checkHandler(n, fn.Signature(), n.Body)
			}
		case *ast.FuncLit:
			if sig, ok := pass.TypesInfo.TypeOf(n).(*types.Signature); ok {
				c.checkHandler(n, sig, n.Body)
			}
		case *ast.CallExpr:
			c.checkDefinition(n)
		}
	})
	return nil, nil
}

func importsLLMTool(pkg *types.Package) bool {
	if pkg.Path() == PkgPath {
		return true
	}
	for _, p := range pkg.Imports() {
		if p.Path() == PkgPath {
			return true
		}
	}
	return false
}

// checker holds the state of one pass.
type checker struct {
	pass      *analysis.Pass
	decls     map[*types.Func]*ast.FuncDecl // functions declared in the package
	reported  map[string]bool               // position and category, to report once
	summaries map[summaryKey]*summary       // callee analyses, by tainted parameters
	toolNames map[*ast.FuncLit]string       // handler literals given to Read or Write, by tool name
	ignored   ignore.Lines                  // lines silenced by //llmtoolvet:ignore
}

// IgnoreDirective, in a comment on the reported line or the line above it,
// silences a finding of this or any other llmtoolvet analyzer. Follow it
// with the reason.
const IgnoreDirective = ignore.Directive

// summaryKey names the analysis of a callee with some parameters tainted:
// bit 0 is the receiver, bit i+1 parameter i.
type summaryKey struct {
	fn   *types.Func
	mask uint64
}

// summary is what a caller needs to know about a callee analysed with some
// parameters tainted.
type summary struct {
	results  []bool // result i may carry a tainted value
	paramOut uint64 // parameters (bits as in summaryKey) through which a tainted value was stored
}

func (c *checker) report(pos, end token.Pos, category, msg string, fixes ...analysis.SuggestedFix) {
	key := fmt.Sprintf("%d/%s", pos, category)
	if c.reported[key] {
		return
	}
	if c.ignored.Silenced(c.pass.Fset, pos) {
		return
	}
	c.reported[key] = true
	c.pass.Report(analysis.Diagnostic{Pos: pos, End: end, Category: category, Message: msg, SuggestedFixes: fixes})
}

// checkHandler analyses a function whose first parameter is a *ReadCtx or
// *WriteCtx.
func (c *checker) checkHandler(node ast.Node, sig *types.Signature, body *ast.BlockStmt) {
	if sig.Params().Len() == 0 || !isCtxPtr(sig.Params().At(0).Type()) {
		return
	}
	s := c.newScope(node, sig, body)
	for i := range sig.Params().Len() {
		if p := sig.Params().At(i); isCtxPtr(p.Type()) {
			s.tainted[p] = true
		}
	}
	s.handler = isToolHandler(sig)
	switch n := node.(type) {
	case *ast.FuncDecl:
		s.what = n.Name.Name
	case *ast.FuncLit:
		s.what = "the handler"
		if name := c.toolNames[n]; name != "" {
			s.what = "the handler of " + name
		}
	}
	s.analyse()
}

// isToolHandler reports whether sig has a tool handler's shape:
// (ctx, In) (Out, error), where Out is a struct or a map, as llmtool.Read
// and llmtool.Write require. Helpers that return rows to their caller have
// other result types.
func isToolHandler(sig *types.Signature) bool {
	if sig.Params().Len() != 2 || sig.Results().Len() != 2 || !isError(sig.Results().At(1).Type()) {
		return false
	}
	switch sig.Results().At(0).Type().Underlying().(type) {
	case *types.Struct, *types.Map:
		return true
	}
	return false
}

// scope is the analysis of one function body with some variables tainted:
// holding the call's ctx or transaction, or a value derived from them.
type scope struct {
	c       *checker
	node    ast.Node // *ast.FuncDecl or *ast.FuncLit
	body    *ast.BlockStmt
	sig     *types.Signature
	params  map[types.Object]int // receiver (0) and parameters (i+1)
	tainted map[types.Object]bool
	handler bool     // a tool handler: report tainted results
	sum     *summary // set when analysing a callee for a caller
	what    string   // the handler, for messages: "getNote" or "the handler of get_note"
	via     string   // for callees: how the handler's ctx got here
}

func (c *checker) newScope(node ast.Node, sig *types.Signature, body *ast.BlockStmt) *scope {
	s := &scope{c: c, node: node, body: body, sig: sig, params: make(map[types.Object]int), tainted: make(map[types.Object]bool)}
	if r := sig.Recv(); r != nil {
		s.params[r] = 0
	}
	for i := range sig.Params().Len() {
		s.params[sig.Params().At(i)] = i + 1
	}
	return s
}

func (s *scope) info() *types.Info { return s.c.pass.TypesInfo }

// analyse propagates taint through the body, then reports the sinks.
func (s *scope) analyse() {
	for range 20 {
		if !s.propagate() {
			break
		}
	}
	s.sinks()
}

// propagate makes one pass over the body, tainting variables assigned
// tainted values. It reports whether anything changed.
func (s *scope) propagate() bool {
	changed := false
	taint := func(lhs ast.Expr) {
		if obj, kind := s.root(lhs); obj != nil && (kind == rootLocal || kind == rootParamValue) && !s.tainted[obj] {
			s.tainted[obj] = true
			changed = true
		}
	}
	ast.Inspect(s.body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.ASSIGN && n.Tok != token.DEFINE {
				return true
			}
			for i, lhs := range n.Lhs {
				if s.assigned(n.Rhs, len(n.Lhs), i) {
					taint(lhs)
				}
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if s.assigned(n.Values, len(n.Names), i) {
					taint(name)
				}
			}
		case *ast.RangeStmt:
			if s.expr(n.X) {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if e != nil && carries(s.info().TypeOf(e)) {
						taint(e)
					}
				}
			}
		case *ast.CallExpr:
			// A callee of this package that stores a tainted value through
			// a pointer argument taints that argument.
			if sum, args := s.callee(n); sum != nil {
				for bit, arg := range args {
					if sum.paramOut&(1<<bit) != 0 && arg != nil {
						taint(arg)
					}
				}
			}
		}
		return true
	})
	return changed
}

// assigned reports whether the i-th of n left-hand sides gets a tainted
// value from rhs.
func (s *scope) assigned(rhs []ast.Expr, n, i int) bool {
	if len(rhs) == n {
		return s.expr(rhs[i])
	}
	if len(rhs) != 1 {
		return false
	}
	switch r := ast.Unparen(rhs[0]).(type) {
	case *ast.CallExpr:
		return s.result(r, i)
	case *ast.TypeAssertExpr, *ast.IndexExpr, *ast.UnaryExpr:
		return i == 0 && s.expr(r)
	}
	return false
}

// expr reports whether e's value may hold the call's ctx or transaction.
func (s *scope) expr(e ast.Expr) bool {
	switch e := e.(type) {
	case nil:
		return false
	case *ast.Ident:
		obj := s.info().ObjectOf(e)
		return obj != nil && s.tainted[obj]
	case *ast.ParenExpr:
		return s.expr(e.X)
	case *ast.SelectorExpr:
		if sel, ok := s.info().Selections[e]; ok {
			switch sel.Kind() {
			case types.FieldVal:
				return s.expr(e.X) && carries(s.info().TypeOf(e))
			default: // a method value is bound to its receiver
				return s.expr(e.X)
			}
		}
		return false // a qualified identifier: a package-level name
	case *ast.CallExpr:
		return s.result(e, 0)
	case *ast.UnaryExpr:
		switch e.Op {
		case token.AND:
			return s.expr(e.X)
		case token.ARROW:
			return s.expr(e.X) && carries(s.info().TypeOf(e))
		}
		return false
	case *ast.StarExpr:
		return s.expr(e.X) && carries(s.info().TypeOf(e))
	case *ast.IndexExpr:
		if tv, ok := s.info().Types[e.X]; ok && !tv.IsValue() {
			return false
		}
		return s.expr(e.X) && carries(s.info().TypeOf(e))
	case *ast.SliceExpr:
		return s.expr(e.X)
	case *ast.TypeAssertExpr:
		return s.expr(e.X) && carries(s.info().TypeOf(e))
	case *ast.CompositeLit:
		for _, elt := range e.Elts {
			if kv, ok := elt.(*ast.KeyValueExpr); ok {
				elt = kv.Value
			}
			if s.expr(elt) {
				return true
			}
		}
		return false
	case *ast.FuncLit:
		return s.captures(e) != nil
	}
	return false
}

// captures returns the first identifier in lit that refers to a tainted
// variable declared outside lit, or nil.
func (s *scope) captures(lit *ast.FuncLit) *ast.Ident {
	var found *ast.Ident
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if id, ok := n.(*ast.Ident); ok {
			if obj := s.info().Uses[id]; obj != nil && s.tainted[obj] && !within(obj.Pos(), lit) {
				found = id
			}
		}
		return true
	})
	return found
}

// result reports whether the i-th result of call may hold a tainted value.
func (s *scope) result(call *ast.CallExpr, i int) bool {
	info := s.info()
	fun := ast.Unparen(call.Fun)
	if tv, ok := info.Types[fun]; ok && tv.IsType() { // a conversion
		return len(call.Args) == 1 && s.expr(call.Args[0])
	}
	resT := typesx.ResultType(info.TypeOf(call), i)
	if id, ok := fun.(*ast.Ident); ok {
		if b, ok := info.Uses[id].(*types.Builtin); ok {
			switch b.Name() {
			case "append":
				for _, a := range call.Args {
					if s.expr(a) {
						return true
					}
				}
			}
			return false
		}
	}
	// A method of a tainted receiver: llmtool, database/sql and context
	// hand out call-scoped values only as resource types (Tx, Rows, Row,
	// Stmt, Context); other receivers (data layers over the tx) may return
	// anything that holds it.
	if sel, ok := fun.(*ast.SelectorExpr); ok {
		if selection, ok := info.Selections[sel]; ok && selection.Kind() == types.MethodVal && s.expr(sel.X) {
			if isResource(resT) {
				return true
			}
			if isResourcePkg(selection.Recv()) {
				return false
			}
			return carries(resT)
		}
	}
	// A call of a tainted function value (a closure capturing the ctx).
	if s.expr(fun) {
		return carries(resT)
	}
	anyArg := false
	for _, a := range call.Args {
		if s.expr(a) {
			anyArg = true
			break
		}
	}
	if !anyArg {
		return false
	}
	if sum, _ := s.callee(call); sum != nil {
		return i < len(sum.results) && sum.results[i]
	}
	return carries(resT)
}

// callee returns the summary of a call of a function or method declared in
// this package, given which of its arguments are tainted, and the argument
// expressions by summary bit. It returns nil if no argument is tainted or
// the callee is not declared here.
func (s *scope) callee(call *ast.CallExpr) (*summary, map[int]ast.Expr) {
	info := s.info()
	var fn *types.Func
	var recv ast.Expr
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		fn, _ = info.Uses[f].(*types.Func)
	case *ast.SelectorExpr:
		fn, _ = info.Uses[f.Sel].(*types.Func)
		if sel, ok := info.Selections[f]; ok && sel.Kind() == types.MethodVal {
			recv = f.X
		}
	case *ast.IndexExpr:
		if id, ok := f.X.(*ast.Ident); ok {
			fn, _ = info.Uses[id].(*types.Func)
		}
	case *ast.IndexListExpr:
		if id, ok := f.X.(*ast.Ident); ok {
			fn, _ = info.Uses[id].(*types.Func)
		}
	}
	if fn == nil {
		return nil, nil
	}
	fn = fn.Origin()
	fd := s.c.decls[fn]
	if fd == nil {
		return nil, nil
	}
	sig := fn.Signature()
	args := make(map[int]ast.Expr)
	var mask uint64
	if recv != nil {
		args[0] = recv
		if s.expr(recv) {
			mask |= 1
		}
	}
	for j, a := range call.Args {
		bit := j + 1
		if sig.Variadic() && j >= sig.Params().Len()-1 {
			bit = sig.Params().Len()
		}
		if bit >= 64 {
			break
		}
		if _, ok := args[bit]; !ok {
			args[bit] = a
		}
		if s.expr(a) {
			mask |= 1 << bit
		}
	}
	if mask == 0 {
		return nil, nil
	}
	return s.c.summarize(fn, fd, mask, s, call), args
}

// summarize analyses fd with the parameters in mask tainted, reporting the
// sinks it finds there, and returns what the caller needs to know.
func (c *checker) summarize(fn *types.Func, fd *ast.FuncDecl, mask uint64, caller *scope, call *ast.CallExpr) *summary {
	key := summaryKey{fn, mask}
	if sum := c.summaries[key]; sum != nil {
		return sum
	}
	sig := fn.Signature()
	sum := &summary{results: make([]bool, sig.Results().Len())}
	// While the callee is being analysed (recursion), assume its results
	// carry the taint when their type can.
	for i := range sum.results {
		sum.results[i] = carries(sig.Results().At(i).Type())
	}
	c.summaries[key] = sum
	s := c.newScope(fd, sig, fd.Body)
	s.sum = sum
	s.what = caller.what
	s.via = fmt.Sprintf(" (passed to %s at %s%s)", fd.Name.Name, c.position(call.Pos()), strings.TrimSuffix(strings.Replace(caller.via, " (passed", ", passed", 1), ")"))
	for obj, bit := range s.params {
		if mask&(1<<bit) != 0 {
			s.tainted[obj] = true
		}
	}
	for i := range sum.results {
		sum.results[i] = false
	}
	s.analyse()
	return sum
}

// position renders pos as file:line:col with the file's base name.
func (c *checker) position(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d:%d", filepath.Base(p.Filename), p.Line, p.Column)
}

// rootKind classifies where an assignment's target lives.
type rootKind int

const (
	rootNone       rootKind = iota
	rootLocal               // a variable declared in the function
	rootParamValue          // a parameter itself, or a part of it held by value
	rootParamRef            // memory reached through a pointer, map or slice parameter
	rootOuter               // a variable of an enclosing function
	rootPackage             // a package-level variable
)

// root returns the variable at the root of an assignment target and where
// the assigned memory lives.
func (s *scope) root(e ast.Expr) (types.Object, rootKind) {
	indirect := false
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
			continue
		case *ast.SelectorExpr:
			if sel, ok := s.info().Selections[x]; ok && sel.Kind() == types.FieldVal {
				if sel.Indirect() || isPointer(s.info().TypeOf(x.X)) {
					indirect = true
				}
				e = x.X
				continue
			}
			// A qualified identifier: another package's variable.
			if v, ok := s.info().Uses[x.Sel].(*types.Var); ok {
				return v, rootPackage
			}
			return nil, rootNone
		case *ast.IndexExpr:
			switch typesx.Underlying(s.info().TypeOf(x.X)).(type) {
			case *types.Map, *types.Slice, *types.Pointer:
				indirect = true
			}
			e = x.X
			continue
		case *ast.StarExpr:
			indirect = true
			e = x.X
			continue
		case *ast.Ident:
			obj := s.info().ObjectOf(x)
			v, ok := obj.(*types.Var)
			if !ok || x.Name == "_" {
				return nil, rootNone
			}
			if v.Parent() == v.Pkg().Scope() {
				return v, rootPackage
			}
			if _, ok := s.params[v]; ok {
				if indirect {
					return v, rootParamRef
				}
				return v, rootParamValue
			}
			if within(v.Pos(), s.node) {
				return v, rootLocal
			}
			return v, rootOuter
		}
		return nil, rootNone
	}
}

// sinks reports the places where a tainted value outlives the call.
func (s *scope) sinks() {
	ast.Inspect(s.body, func(n ast.Node) bool { return s.visit(n, true) })
}

// visit checks one node of the body; top is false inside function
// literals, whose return statements are their own.
func (s *scope) visit(n ast.Node, top bool) bool {
	switch n := n.(type) {
	case *ast.GoStmt:
		if id := s.goUses(n.Call); id != nil {
			s.reportGo(n, id)
			return false
		}
	case *ast.SendStmt:
		if s.expr(n.Value) {
			s.c.report(n.Pos(), n.End(), "send",
				fmt.Sprintf("the ctx or transaction of %s (%s)%s is sent on a channel, so it may be used after the handler returned, when it is dead (sql.ErrTxDone); send only plain values read from it",
					s.what, s.name(n.Value), s.via))
		}
	case *ast.AssignStmt:
		if n.Tok == token.ASSIGN || n.Tok == token.DEFINE {
			for i, lhs := range n.Lhs {
				if s.assigned(n.Rhs, len(n.Lhs), i) {
					rhs := n.Rhs[0]
					if len(n.Rhs) == len(n.Lhs) {
						rhs = n.Rhs[i]
					}
					s.store(lhs, rhs)
				}
			}
		}
	case *ast.ValueSpec:
		for i, name := range n.Names {
			if s.assigned(n.Values, len(n.Names), i) {
				s.store(name, n.Values[min(i, len(n.Values)-1)])
			}
		}
	case *ast.CallExpr:
		s.asyncCall(n)
		s.callee(n) // analyse callees of this package given tainted arguments
	case *ast.FuncLit:
		ast.Inspect(n.Body, func(m ast.Node) bool { return s.visit(m, false) })
		return false
	case *ast.ReturnStmt:
		if top {
			s.ret(n)
		}
	}
	return true
}

// goUses returns the identifier through which a go statement's call uses a
// tainted value, or nil. The function value and the arguments are
// evaluated before the goroutine starts, so only values that may hold the
// ctx count, not plain values computed from it.
func (s *scope) goUses(call *ast.CallExpr) *ast.Ident {
	fun := ast.Unparen(call.Fun)
	if lit, ok := fun.(*ast.FuncLit); ok {
		if id := s.captures(lit); id != nil {
			return id
		}
	} else if s.expr(fun) {
		return s.firstTainted(fun)
	}
	for _, a := range call.Args {
		if s.expr(a) {
			return s.firstTainted(a)
		}
	}
	return nil
}

// firstTainted returns the first identifier in e that refers to a tainted
// variable.
func (s *scope) firstTainted(e ast.Node) *ast.Ident {
	var found *ast.Ident
	ast.Inspect(e, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if id, ok := n.(*ast.Ident); ok {
			if obj := s.info().Uses[id]; obj != nil && s.tainted[obj] {
				found = id
			}
		}
		return true
	})
	return found
}

// name describes a tainted expression for a message.
func (s *scope) name(e ast.Expr) string {
	if lit, ok := ast.Unparen(e).(*ast.FuncLit); ok {
		if id := s.captures(lit); id != nil {
			return "a closure capturing " + id.Name
		}
	}
	if len(types.ExprString(e)) <= 40 {
		return types.ExprString(e)
	}
	if id := s.firstTainted(e); id != nil {
		return "a value holding " + id.Name
	}
	return "a value holding it"
}

// goAdvice ends the messages about goroutines.
const goAdvice = "it is dead once the handler returns (sql.ErrTxDone), and a panic in a goroutine escapes the registry's recovery even if the goroutine is joined before the return; do the work in the handler's own goroutine, or hand the goroutine only plain values"

func (s *scope) reportGo(g *ast.GoStmt, id *ast.Ident) {
	fix := analysis.SuggestedFix{
		Message:   "Run the call synchronously, before the handler returns",
		TextEdits: []analysis.TextEdit{{Pos: g.Go, End: g.Call.Pos()}},
	}
	s.c.report(g.Pos(), g.End(), "goroutine",
		fmt.Sprintf("goroutine uses the ctx or transaction of %s (%s)%s: %s",
			s.what, id.Name, s.via, goAdvice), fix)
}

// asyncCall reports a tainted function value handed to something that runs
// it later or on another goroutine.
func (s *scope) asyncCall(call *ast.CallExpr) {
	info := s.info()
	var fn *types.Func
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.SelectorExpr:
		fn, _ = info.Uses[f.Sel].(*types.Func)
	case *ast.Ident:
		fn, _ = info.Uses[f].(*types.Func)
	}
	if fn == nil {
		return
	}
	sig := fn.Signature()
	var kind string
	switch {
	case sig.Recv() != nil && fn.Name() == "AfterCommit" && typesx.IsNamed(typesx.Deref(sig.Recv().Type()), PkgPath, "WriteCtx"):
		kind = "aftercommit"
	case sig.Recv() != nil && (fn.Name() == "Go" || fn.Name() == "TryGo"):
		kind = "goroutine"
	case fn.Pkg() != nil && fn.Pkg().Path() == "time" && fn.Name() == "AfterFunc":
		kind = "goroutine"
	default:
		return
	}
	for _, a := range call.Args {
		if _, ok := typesx.Underlying(info.TypeOf(a)).(*types.Signature); !ok || !s.expr(a) {
			continue
		}
		id := s.firstTainted(a)
		if lit, ok := ast.Unparen(a).(*ast.FuncLit); ok {
			id = s.captures(lit)
		}
		name := "it"
		if id != nil {
			name = id.Name
		}
		switch kind {
		case "aftercommit":
			s.c.report(a.Pos(), a.End(), "aftercommit",
				fmt.Sprintf("AfterCommit hook uses the ctx or transaction of %s (%s)%s, which is dead after the commit (sql.ErrTxDone); do the database work in the handler and let the hook capture only plain values",
					s.what, name, s.via))
		default:
			s.c.report(a.Pos(), a.End(), "goroutine",
				fmt.Sprintf("%s runs this function on another goroutine, but it uses the ctx or transaction of %s (%s)%s: %s",
					types.ExprString(call.Fun), s.what, name, s.via, goAdvice))
		}
	}
}

// store reports a tainted value assigned where it outlives the call.
func (s *scope) store(lhs, rhs ast.Expr) {
	obj, kind := s.root(lhs)
	var where string
	switch kind {
	case rootPackage:
		where = "package-level variable " + obj.Name()
	case rootOuter:
		where = "variable " + obj.Name() + ", declared outside the handler"
	case rootParamRef:
		if s.sum != nil {
			s.sum.paramOut |= 1 << s.params[obj]
			return
		}
		where = types.ExprString(lhs) + ", reachable by the caller"
	default:
		return
	}
	s.c.report(lhs.Pos(), rhs.End(), "store",
		fmt.Sprintf("the ctx or transaction of %s (%s)%s is stored in %s, which outlives the call, but it is dead once the handler returns (sql.ErrTxDone); keep it in local variables and store only plain values read from it",
			s.what, s.name(rhs), s.via, where))
}

// ret handles a return statement of the analysed function itself.
func (s *scope) ret(r *ast.ReturnStmt) {
	for i, e := range r.Results {
		var t bool
		if len(r.Results) == 1 && s.sig.Results().Len() > 1 {
			if call, ok := ast.Unparen(e).(*ast.CallExpr); ok {
				for j := range s.sig.Results().Len() {
					if s.result(call, j) {
						if s.sum != nil && j < len(s.sum.results) {
							s.sum.results[j] = true
						}
						t = true
					}
				}
			}
		} else {
			t = s.expr(e)
			if t && s.sum != nil && i < len(s.sum.results) {
				s.sum.results[i] = true
			}
		}
		if t && s.handler && s.sum == nil {
			s.c.report(e.Pos(), e.End(), "return",
				fmt.Sprintf("%s returns %s, which carries its ctx or transaction past the return, when they are dead (sql.ErrTxDone); read everything inside the handler and return plain values",
					s.what, s.name(e)))
		}
	}
}

// checkDefinition reports an Out type, given to llmtool.Read or
// llmtool.Write, that holds work to run later.
func (c *checker) checkDefinition(call *ast.CallExpr) {
	fun := ast.Unparen(call.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	var id *ast.Ident
	switch f := fun.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		return
	}
	fn, ok := c.pass.TypesInfo.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != PkgPath || (fn.Name() != "Read" && fn.Name() != "Write") {
		return
	}
	if len(call.Args) >= 3 {
		if lit, ok := ast.Unparen(call.Args[2]).(*ast.FuncLit); ok {
			c.toolNames[lit] = "tool " + toolName(call.Args[0])
		}
	}
	inst, ok := c.pass.TypesInfo.Instances[id]
	if !ok || inst.TypeArgs.Len() != 2 {
		return
	}
	out := inst.TypeArgs.At(1)
	what, path := lazyPart(out, "", make(map[types.Type]bool))
	if what == "" {
		return
	}
	at := ast.Node(call)
	if len(call.Args) >= 3 {
		at = call.Args[2]
	}
	verb, field := "contains", ""
	if path != "" {
		field = " at " + strings.TrimPrefix(path, ".")
	} else {
		switch lazyRoot(out).Underlying().(type) {
		case *types.Chan, *types.Signature, *types.Basic:
			verb = "is"
		}
	}
	c.report(at.Pos(), at.End(), "out",
		fmt.Sprintf("Out type %s %s %s%s, which does its work after the transaction ended (llmtool.%s panics on it at definition); collect the values inside the handler and return them as plain fields (a slice instead of a channel or iterator)",
			types.TypeString(out, types.RelativeTo(c.pass.Pkg)), verb, what, field, fn.Name()))
}

// lazyRoot returns t without its pointers.
func lazyRoot(t types.Type) types.Type {
	for {
		p, ok := t.Underlying().(*types.Pointer)
		if !ok {
			return t
		}
		t = p.Elem()
	}
}

// toolName returns a tool's name as written at its definition.
func toolName(e ast.Expr) string {
	if lit, ok := ast.Unparen(e).(*ast.BasicLit); ok && lit.Kind == token.STRING {
		return lit.Value
	}
	return types.ExprString(e)
}

// lazyPart returns what in t cannot be encoded when the handler returns (a
// channel, a func, an iterator, an unsafe.Pointer) and the field path to it,
// or "" if there is none. It follows the fields encoding/json encodes.
func lazyPart(t types.Type, path string, seen map[types.Type]bool) (string, string) {
	if seen[t] {
		return "", ""
	}
	seen[t] = true
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "iter" && (n.Obj().Name() == "Seq" || n.Obj().Name() == "Seq2") {
		return "an iterator (iter." + n.Obj().Name() + ")", path
	}
	switch u := t.Underlying().(type) {
	case *types.Chan:
		return "a channel (" + types.TypeString(t, nil) + ")", path
	case *types.Signature:
		return "a func (" + types.TypeString(t, nil) + ")", path
	case *types.Basic:
		if u.Kind() == types.UnsafePointer {
			return "an unsafe.Pointer", path
		}
		return "", ""
	}
	if hasMethod(t, "MarshalJSON") || hasMethod(t, "MarshalText") {
		return "", "" // encodes itself
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return lazyPart(u.Elem(), path, seen)
	case *types.Slice:
		return lazyPart(u.Elem(), path+"[]", seen)
	case *types.Array:
		return lazyPart(u.Elem(), path+"[]", seen)
	case *types.Map:
		return lazyPart(u.Elem(), path+"[key]", seen)
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			tag := reflect.StructTag(u.Tag(i)).Get("json")
			if tag == "-" || (!f.Exported() && !f.Embedded()) {
				continue
			}
			p := path + "." + f.Name()
			if f.Embedded() {
				p = path
			}
			if what, at := lazyPart(f.Type(), p, seen); what != "" {
				return what, at
			}
		}
	}
	return "", ""
}

func hasMethod(t types.Type, name string) bool {
	for _, tt := range []types.Type{t, types.NewPointer(t)} {
		if _, isPtr := t.(*types.Pointer); isPtr && tt != t {
			break
		}
		ms := types.NewMethodSet(tt)
		for i := range ms.Len() {
			if ms.At(i).Obj().Name() == name {
				return true
			}
		}
	}
	return false
}

// isCtxPtr reports whether t is *llmtool.ReadCtx or *llmtool.WriteCtx.
func isCtxPtr(t types.Type) bool {
	p, ok := types.Unalias(t).(*types.Pointer)
	return ok && (typesx.IsNamed(p.Elem(), PkgPath, "ReadCtx") || typesx.IsNamed(p.Elem(), PkgPath, "WriteCtx"))
}

func isPointer(t types.Type) bool {
	if t == nil {
		return false
	}
	_, ok := t.Underlying().(*types.Pointer)
	return ok
}

func isError(t types.Type) bool {
	return types.Identical(t, types.Universe.Lookup("error").Type())
}

// isResource reports whether t is one of the types through which a call's
// transaction is reached: the ctx types, context.Context, and database/sql's
// Tx, Conn, Rows, Row and Stmt.
func isResource(t types.Type) bool {
	if t == nil {
		return false
	}
	e := typesx.Deref(t)
	switch {
	case typesx.IsNamed(e, PkgPath, "ReadCtx"), typesx.IsNamed(e, PkgPath, "WriteCtx"), typesx.IsNamed(t, "context", "Context"):
		return true
	}
	if _, ok := types.Unalias(t).(*types.Pointer); ok {
		for _, n := range []string{"Tx", "Conn", "Rows", "Row", "Stmt"} {
			if typesx.IsNamed(e, "database/sql", n) {
				return true
			}
		}
	}
	return false
}

// isResourcePkg reports whether a method receiver belongs to llmtool,
// database/sql or context, whose methods return call-scoped values only as
// resource types.
func isResourcePkg(recv types.Type) bool {
	n, ok := types.Unalias(typesx.Deref(recv)).(*types.Named)
	if !ok {
		return typesx.IsNamed(recv, "context", "Context")
	}
	if n.Obj().Pkg() == nil {
		return false
	}
	switch n.Obj().Pkg().Path() {
	case PkgPath, "database/sql", "context":
		return true
	}
	return false
}

// carries reports whether a value of type t can hold a reference to the
// call's ctx or transaction: plain data (numbers, strings, errors and
// structs, slices and maps of them) cannot.
func carries(t types.Type) bool {
	return carriesSeen(t, make(map[types.Type]bool))
}

func carriesSeen(t types.Type, seen map[types.Type]bool) bool {
	if t == nil {
		return false
	}
	if isResource(t) {
		return true
	}
	if isError(t) || typesx.IsNamed(t, "context", "CancelFunc") || typesx.IsNamed(t, "context", "CancelCauseFunc") ||
		typesx.IsNamed(typesx.Deref(t), PkgPath, "Principal") || typesx.IsNamed(typesx.Deref(t), "log/slog", "Logger") {
		return false
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return false
	case *types.Pointer:
		return carriesSeen(u.Elem(), seen)
	case *types.Slice:
		return carriesSeen(u.Elem(), seen)
	case *types.Array:
		return carriesSeen(u.Elem(), seen)
	case *types.Map:
		return carriesSeen(u.Key(), seen) || carriesSeen(u.Elem(), seen)
	case *types.Chan:
		return carriesSeen(u.Elem(), seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if carriesSeen(u.Field(i).Type(), seen) {
				return true
			}
		}
		return false
	case *types.Tuple:
		for i := range u.Len() {
			if carriesSeen(u.At(i).Type(), seen) {
				return true
			}
		}
		return false
	}
	return true // interfaces, funcs, type parameters
}

// within reports whether pos lies inside n.
func within(pos token.Pos, n ast.Node) bool {
	return pos.IsValid() && n.Pos() <= pos && pos < n.End()
}
