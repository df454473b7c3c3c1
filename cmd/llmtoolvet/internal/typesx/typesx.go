// Package typesx holds the small go/types helpers that every llmtoolvet
// analyzer uses, so that each is written once.
//
// The helpers see through aliases where they inspect a type's form, and
// accept a nil type where they say so.
package typesx

import "go/types"

// IsNamed reports whether t, or the type an alias of it names, is the
// named type name declared in the package with import path pkg.
func IsNamed(t types.Type, pkg, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pkg && n.Obj().Name() == name
}

// Deref returns the element type of t if t is a pointer (through
// aliases), and t itself otherwise.
func Deref(t types.Type) types.Type {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// Underlying is t.Underlying(), or nil for a nil t.
func Underlying(t types.Type) types.Type {
	if t == nil {
		return nil
	}
	return t.Underlying()
}

// ResultType returns the type of result i of a call whose type is t: the
// i-th element of a tuple, or t itself for i == 0 when t is a single
// type. It returns nil when the call has no result i.
func ResultType(t types.Type, i int) types.Type {
	if tup, ok := t.(*types.Tuple); ok {
		if i < tup.Len() {
			return tup.At(i).Type()
		}
		return nil
	}
	if i == 0 {
		return t
	}
	return nil
}
