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
//     transaction, or a value derived from them (rows, a statement from
//     c.PrepareContext, a context.WithTimeout(c, ...), a data layer built
//     with New(c), a closure capturing any of these), in the handler itself
//     or in a function of the same package that the handler passes them to;
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
//     (go notify(llmtool.TenantFrom(c), note.ID) evaluates its arguments before the
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

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"

	"github.com/llmtool/llmtool/cmd/llmtoolvet/internal/ignore"
)

// pkgPath is the import path of the llmtool package whose ReadCtx and
// WriteCtx mark handlers.
const pkgPath = "github.com/llmtool/llmtool"

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
	if pkg.Path() == pkgPath {
		return true
	}
	for _, p := range pkg.Imports() {
		if p.Path() == pkgPath {
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
