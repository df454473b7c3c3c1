package asynccheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/internal/typesx"
)

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
	case sig.Recv() != nil && fn.Name() == "AfterCommit" && typesx.IsNamed(typesx.Deref(sig.Recv().Type()), pkgPath, "WriteCtx"):
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
