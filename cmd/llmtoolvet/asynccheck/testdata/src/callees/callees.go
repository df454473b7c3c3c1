// Package callees holds handlers that pass their ctx or transaction to
// functions of the same package that start goroutines or store it.
package callees

import (
	"context"
	"database/sql"

	"github.com/llmtool/llmtool"
)

type In struct{ ID int }
type Out struct{ N int }

var appDB *sql.DB

// refresh starts a goroutine with whatever context it is given: harmless
// for a long-lived context, a bug for a handler's.
func refresh(ctx context.Context, db *sql.DB) {
	go func() { // want `goroutine uses the ctx or transaction of the handler of tool "via_callee" \(ctx\) \(passed to refresh at callees.go:\d+:\d+\): it is dead`
		db.QueryContext(ctx, `SELECT 1`)
	}()
}

var viaCallee = llmtool.Read("via_callee", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		refresh(c, appDB)
		return Out{}, nil
	})

// Two levels deep, through a method.
type worker struct{}

func (w worker) start(tx *sql.Tx) {
	w.spawn(tx)
}

func (w worker) spawn(tx *sql.Tx) {
	go tx.Exec(`UPDATE counters SET n = n + 1`) // want `goroutine uses the ctx or transaction of twoLevels \(tx\) \(passed to spawn at callees.go:\d+:\d+, passed to start at callees.go:\d+:\d+\)`
}

func twoLevels(c *llmtool.WriteCtx, in In) (Out, error) {
	worker{}.start(c.Tx())
	return Out{}, nil
}

var twoLevelsTool = llmtool.Write("two_levels", "", twoLevels)

// A callee that stores what it is given in a package-level variable.
var remembered *sql.Tx

func remember(tx *sql.Tx) { remembered = tx } // want `the ctx or transaction of the handler of tool "via_remember" \(tx\) \(passed to remember at callees.go:\d+:\d+\) is stored in package-level variable remembered`

var viaRemember = llmtool.Write("via_remember", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		remember(c.Tx())
		return Out{}, nil
	})

// A callee that fills a struct of the handler: the struct becomes
// call-scoped, and storing it globally is reported in the handler.
type holder struct{ tx *sql.Tx }

func fill(h *holder, tx *sql.Tx) { h.tx = tx }

var lastHolder *holder

var viaFill = llmtool.Write("via_fill", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		h := &holder{}
		fill(h, c.Tx())
		lastHolder = h // want `\(h\) is stored in package-level variable lastHolder`
		return Out{}, nil
	})

// A callee that returns a closure over what it is given.
func lazyCount(c *llmtool.ReadCtx) func() int {
	return func() int {
		var n int
		c.QueryRow(`SELECT count(*) FROM notes`).Scan(&n)
		return n
	}
}

var viaLazy = llmtool.Read("via_lazy", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		count := lazyCount(c)
		go count() // want `goroutine uses the ctx or transaction of the handler of tool "via_lazy" \(count\)`
		return Out{}, nil
	})

// Recursion terminates.
func recurse(tx *sql.Tx, n int) {
	if n > 0 {
		recurse(tx, n-1)
	}
}

var viaRecurse = llmtool.Write("via_recurse", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		recurse(c.Tx(), 3)
		return Out{}, nil
	})
