package txcontrol

// How the transaction flows through a function: which variables, results
// and arguments hold it.

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"golang.org/x/tools/go/types/typeutil"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/internal/typesx"
)

// scope is the analysis of one function body, or of a package-level var
// declaration, with the variables that hold the transaction.
type scope struct {
	c        *checker
	node     ast.Node                      // *ast.FuncDecl, *ast.FuncLit or *ast.GenDecl
	sig      *types.Signature              // nil for a *ast.GenDecl
	params   map[types.Object]int          // receiver (0) and parameters (i+1)
	tainted  map[types.Object]bool         // variables holding the transaction, or a value holding it
	txFuncs  map[types.Object]bool         // variables holding the method value c.Tx
	lits     map[types.Object]*ast.FuncLit // local variables bound to a function literal
	sum      *summary                      // nil for a *ast.GenDecl
	called   map[*ast.SelectorExpr]bool    // selectors in call position
	found    map[string]bool               // findings' keys
	findings []finding
}

func (c *checker) newScope(node ast.Node, sig *types.Signature) *scope {
	s := &scope{
		c: c, node: node, sig: sig,
		params:  make(map[types.Object]int),
		tainted: make(map[types.Object]bool),
		txFuncs: make(map[types.Object]bool),
		lits:    make(map[types.Object]*ast.FuncLit),
		found:   make(map[string]bool),
		called:  make(map[*ast.SelectorExpr]bool),
	}
	if sig != nil {
		if r := sig.Recv(); r != nil {
			s.params[r] = 0
		}
		for i := range sig.Params().Len() {
			s.params[sig.Params().At(i)] = i + 1
		}
	}
	return s
}

func (s *scope) info() *types.Info { return s.c.pass.TypesInfo }

// body is what the scope walks: a function's body or a var declaration.
func (s *scope) body() ast.Node {
	switch n := s.node.(type) {
	case *ast.FuncDecl:
		return n.Body
	case *ast.FuncLit:
		return n.Body
	}
	return s.node
}

// analyse propagates the transaction through the body, then collects the
// findings and, for a function, which results hold it.
func (s *scope) analyse() {
	for range 20 {
		if !s.propagate() {
			break
		}
	}
	ast.Inspect(s.body(), s.visit)
	if s.sum != nil {
		s.returns()
	}
}

// propagate makes one pass over the body, marking the variables assigned
// the transaction or a value holding it. It reports whether anything
// changed.
func (s *scope) propagate() bool {
	changed := false
	set := func(m map[types.Object]bool, obj types.Object) {
		if obj != nil && !m[obj] {
			m[obj] = true
			changed = true
		}
	}
	mark := func(lhs ast.Expr) {
		obj, indirect := s.root(lhs)
		if bit, ok := s.params[obj]; ok && indirect && s.sum != nil {
			s.sum.paramOut |= 1 << bit // stored where the caller sees it
		}
		set(s.tainted, obj)
	}
	assign := func(lhs []ast.Expr, rhs []ast.Expr) {
		for i, l := range lhs {
			switch {
			case s.assigned(rhs, len(lhs), i):
				mark(l)
			case len(rhs) == len(lhs) && s.isTxFunc(rhs[i]):
				obj, _ := s.root(l)
				set(s.txFuncs, obj)
			}
			if len(rhs) == len(lhs) {
				if lit, ok := ast.Unparen(rhs[i]).(*ast.FuncLit); ok {
					if id, ok := l.(*ast.Ident); ok {
						if obj := s.info().ObjectOf(id); obj != nil && s.lits[obj] == nil {
							s.lits[obj] = lit
							changed = true
						}
					}
				}
			}
		}
	}
	ast.Inspect(s.body(), func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.ASSIGN || n.Tok == token.DEFINE {
				assign(n.Lhs, n.Rhs)
			}
		case *ast.ValueSpec:
			lhs := make([]ast.Expr, len(n.Names))
			for i, id := range n.Names {
				lhs[i] = id
			}
			assign(lhs, n.Values)
		case *ast.RangeStmt:
			if s.holds(n.X) {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if e != nil && carries(s.info().TypeOf(e)) {
						mark(e)
					}
				}
			}
		case *ast.CallExpr:
			// A function of the package that stores the transaction
			// through an argument marks that argument.
			if t := s.target(n); t != nil {
				sum := s.c.summarize(t.fn, t.sig, t.mask)
				for bit, arg := range t.args {
					if sum.paramOut&(1<<bit) != 0 {
						mark(arg)
					}
				}
			}
		}
		return true
	})
	return changed
}

// assigned reports whether the i-th of n left-hand sides is assigned the
// transaction or a value holding it.
func (s *scope) assigned(rhs []ast.Expr, n, i int) bool {
	if len(rhs) == n {
		return s.holds(rhs[i])
	}
	if len(rhs) == 1 {
		if call, ok := ast.Unparen(rhs[0]).(*ast.CallExpr); ok {
			return s.result(call, i)
		}
	}
	return false
}

// root returns the variable at the root of an expression (x in x.f[i].g)
// and whether the expression reaches memory through a pointer, slice or
// map rather than the variable itself.
func (s *scope) root(e ast.Expr) (types.Object, bool) {
	indirect := false
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.SelectorExpr:
			sel, ok := s.info().Selections[x]
			if !ok { // a qualified identifier: another package's variable
				v, _ := s.info().Uses[x.Sel].(*types.Var)
				return v, false
			}
			if sel.Kind() != types.FieldVal {
				return nil, false
			}
			if sel.Indirect() || isPointer(s.info().TypeOf(x.X)) {
				indirect = true
			}
			e = x.X
		case *ast.IndexExpr:
			switch typesx.Underlying(s.info().TypeOf(x.X)).(type) {
			case *types.Map, *types.Slice, *types.Pointer:
				indirect = true
			}
			e = x.X
		case *ast.StarExpr:
			indirect = true
			e = x.X
		case *ast.Ident:
			v, ok := s.info().ObjectOf(x).(*types.Var)
			if !ok || x.Name == "_" {
				return nil, false
			}
			return v, indirect
		default:
			return nil, false
		}
	}
}

// holds reports whether e may evaluate to the WriteCtx's transaction or to
// a value holding it.
func (s *scope) holds(e ast.Expr) bool {
	e = ast.Unparen(e)
	if call, ok := e.(*ast.CallExpr); ok {
		return s.result(call, 0)
	}
	if !carries(s.info().TypeOf(e)) {
		return false
	}
	switch x := e.(type) {
	case *ast.Ident:
		return s.tainted[s.info().ObjectOf(x)]
	case *ast.SelectorExpr, *ast.IndexExpr, *ast.StarExpr:
		obj, _ := s.root(x)
		return obj != nil && s.tainted[obj]
	case *ast.SliceExpr:
		return s.holds(x.X)
	case *ast.TypeAssertExpr:
		return s.holds(x.X)
	case *ast.UnaryExpr:
		return x.Op == token.AND && s.holds(x.X)
	case *ast.CompositeLit:
		for _, el := range x.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value
			}
			if s.holds(el) {
				return true
			}
		}
	}
	return false
}

// isTxFunc reports whether e is the method value x.Tx of a WriteCtx, or a
// variable holding one.
func (s *scope) isTxFunc(e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		sel, ok := s.info().Selections[x]
		return ok && sel.Kind() == types.MethodVal && isWriteCtxTx(sel.Obj())
	case *ast.Ident:
		return s.txFuncs[s.info().ObjectOf(x)]
	}
	return false
}

// result reports whether the i-th result of call may hold the transaction.
func (s *scope) result(call *ast.CallExpr, i int) bool {
	info := s.info()
	fun := ast.Unparen(call.Fun)
	if tv, ok := info.Types[fun]; ok && tv.IsType() { // a conversion
		return i == 0 && len(call.Args) == 1 && s.holds(call.Args[0])
	}
	switch callee := typeutil.Callee(info, call).(type) {
	case *types.Builtin:
		if callee.Name() == "append" {
			return slices.ContainsFunc(call.Args, s.holds)
		}
		return false
	case *types.Func:
		if isWriteCtxTx(callee) {
			return i == 0 // the source: c.Tx()
		}
	case *types.Var:
		if s.txFuncs[callee] {
			return i == 0 // tx := f() after f := c.Tx
		}
	}
	if !carries(typesx.ResultType(info.TypeOf(call), i)) {
		return false
	}
	if t := s.target(call); t != nil {
		sum := s.c.summarize(t.fn, t.sig, t.mask)
		return i < len(sum.results) && sum.results[i]
	}
	return false
}

// target is a call of a function the analysis follows into.
type target struct {
	fn   ast.Node // *ast.FuncDecl or *ast.FuncLit
	sig  *types.Signature
	name string
	mask uint64           // the arguments holding the transaction, bits as in summaryKey
	args map[int]ast.Expr // the arguments, by bit
}

// target returns the callee of a call of a function or method declared in
// the package, or of a function literal bound to a local variable or
// called in place, and which of its arguments hold the transaction. It
// returns nil for any other call.
func (s *scope) target(call *ast.CallExpr) *target {
	info := s.info()
	t := &target{args: make(map[int]ast.Expr)}
	var recv ast.Expr
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.FuncLit:
		t.fn, t.name = f, "the function literal"
	case *ast.Ident:
		if lit := s.lits[info.ObjectOf(f)]; lit != nil {
			t.fn, t.name = lit, f.Name
		}
	}
	if lit, ok := t.fn.(*ast.FuncLit); ok {
		t.sig, _ = info.TypeOf(lit).(*types.Signature)
	} else if fn := typeutil.StaticCallee(info, call); fn != nil {
		fd := s.c.decls[fn.Origin()]
		if fd == nil {
			return nil
		}
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
			if selection, ok := info.Selections[sel]; ok {
				if selection.Kind() == types.MethodExpr {
					return nil // T.m(x, ...): arguments shifted, not followed
				}
				recv = sel.X
			}
		}
		t.fn, t.sig, t.name = fd, fn.Origin().Signature(), fd.Name.Name
	}
	if t.sig == nil {
		return nil
	}
	if recv != nil {
		t.args[0] = recv
		if s.holds(recv) {
			t.mask |= 1
		}
	}
	for j, a := range call.Args {
		bit := j + 1
		if t.sig.Variadic() && j >= t.sig.Params().Len()-1 {
			bit = t.sig.Params().Len()
		}
		if bit >= 64 {
			break
		}
		if _, ok := t.args[bit]; !ok {
			t.args[bit] = a
		}
		if s.holds(a) {
			t.mask |= 1 << bit
		}
	}
	return t
}

// returns records which results of the function may hold the transaction.
func (s *scope) returns() {
	res := s.sig.Results()
	ast.Inspect(s.body(), func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its returns are its own
		case *ast.ReturnStmt:
			switch {
			case len(n.Results) == 0: // bare return of named results
				for i := range res.Len() {
					if s.tainted[res.At(i)] {
						s.sum.results[i] = true
					}
				}
			case len(n.Results) == 1 && res.Len() > 1:
				if call, ok := ast.Unparen(n.Results[0]).(*ast.CallExpr); ok {
					for i := range res.Len() {
						if s.result(call, i) {
							s.sum.results[i] = true
						}
					}
				}
			default:
				for i, e := range n.Results {
					if i < len(s.sum.results) && s.holds(e) {
						s.sum.results[i] = true
					}
				}
			}
		}
		return true
	})
}

// isWriteCtxTx reports whether obj is the method (*llmtool.WriteCtx).Tx.
func isWriteCtxTx(obj types.Object) bool {
	fn, ok := obj.(*types.Func)
	if !ok || fn.Name() != "Tx" {
		return false
	}
	recv := fn.Signature().Recv()
	return recv != nil && typesx.IsNamed(typesx.Deref(recv.Type()), pkgPath, "WriteCtx")
}

// isTxControl reports whether obj is (*sql.Tx).Commit or Rollback.
func isTxControl(obj types.Object) bool {
	fn, ok := obj.(*types.Func)
	if !ok || (fn.Name() != "Commit" && fn.Name() != "Rollback") {
		return false
	}
	recv := fn.Signature().Recv()
	return recv != nil && typesx.IsNamed(typesx.Deref(recv.Type()), "database/sql", "Tx")
}

func isPointer(t types.Type) bool {
	_, ok := typesx.Underlying(t).(*types.Pointer)
	return ok
}

// carries reports whether a value of type t can hold a *sql.Tx: plain
// data, errors and funcs cannot.
func carries(t types.Type) bool {
	return carriesSeen(t, make(map[types.Type]bool))
}

func carriesSeen(t types.Type, seen map[types.Type]bool) bool {
	if t == nil || seen[t] {
		return false
	}
	seen[t] = true
	if p, ok := types.Unalias(t).(*types.Pointer); ok && typesx.IsNamed(p.Elem(), "database/sql", "Tx") {
		return true
	}
	if types.Identical(t, types.Universe.Lookup("error").Type()) {
		return false
	}
	switch u := t.Underlying().(type) {
	case *types.Interface:
		return true
	case *types.Pointer:
		return carriesSeen(u.Elem(), seen)
	case *types.Slice:
		return carriesSeen(u.Elem(), seen)
	case *types.Array:
		return carriesSeen(u.Elem(), seen)
	case *types.Chan:
		return carriesSeen(u.Elem(), seen)
	case *types.Map:
		return carriesSeen(u.Key(), seen) || carriesSeen(u.Elem(), seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if carriesSeen(u.Field(i).Type(), seen) {
				return true
			}
		}
	case *types.Tuple:
		for i := range u.Len() {
			if carriesSeen(u.At(i).Type(), seen) {
				return true
			}
		}
	}
	return false
}
