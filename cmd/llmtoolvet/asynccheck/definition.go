package asynccheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"reflect"
	"strings"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/internal/typesx"
)

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
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != pkgPath || (fn.Name() != "Read" && fn.Name() != "Write") {
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
	return ok && (typesx.IsNamed(p.Elem(), pkgPath, "ReadCtx") || typesx.IsNamed(p.Elem(), pkgPath, "WriteCtx"))
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
	case typesx.IsNamed(e, pkgPath, "ReadCtx"), typesx.IsNamed(e, pkgPath, "WriteCtx"), typesx.IsNamed(t, "context", "Context"):
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
	case pkgPath, "database/sql", "context":
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
		typesx.IsNamed(typesx.Deref(t), pkgPath, "Principal") || typesx.IsNamed(typesx.Deref(t), "log/slog", "Logger") {
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
