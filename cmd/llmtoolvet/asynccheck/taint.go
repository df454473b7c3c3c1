package asynccheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/internal/typesx"
)

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
