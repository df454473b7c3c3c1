// Package goroutines holds handlers whose goroutines use the call's ctx or
// transaction.
package goroutines

import (
	"context"
	"sync"
	"time"

	"github.com/llmtool/llmtool"
)

type In struct{ ID int }
type Out struct{ N int }

// A goroutine literal that queries through the ctx after the handler
// returned.
var asyncQuery = llmtool.Read("async_query", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		go func() { // want `goroutine uses the ctx or transaction of the handler of tool "async_query" \(c\): it is dead once the handler returns \(sql.ErrTxDone\)`
			c.QueryRow(`SELECT 1`)
		}()
		return Out{}, nil
	})

// A goroutine writing through the *sql.Tx taken from the ctx.
var asyncTx = llmtool.Write("async_tx", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		tx := c.Tx()
		go tx.Exec(`DELETE FROM notes`) // want `goroutine uses the ctx or transaction of the handler of tool "async_tx" \(tx\)`
		return Out{}, nil
	})

// Rows read in a goroutine.
var asyncRows = llmtool.Read("async_rows", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		rows, err := c.Query(`SELECT id FROM notes`)
		if err != nil {
			return Out{}, err
		}
		go func() { // want `goroutine uses the ctx or transaction of the handler of tool "async_rows" \(rows\)`
			defer rows.Close()
			for rows.Next() {
			}
		}()
		return Out{}, nil
	})

// The ctx passed as an argument to a function run by go.
func audit(ctx context.Context, what string) {}

var asyncArg = llmtool.Write("async_arg", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		go audit(c, "written") // want `goroutine uses the ctx or transaction of the handler of tool "async_arg" \(c\)`
		return Out{}, nil
	})

// A context derived from the ctx is call-scoped too.
var asyncDerived = llmtool.Read("async_derived", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		ctx, cancel := context.WithTimeout(c, time.Second)
		defer cancel()
		go audit(ctx, "read") // want `goroutine uses the ctx or transaction of the handler of tool "async_derived" \(ctx\)`
		return Out{}, nil
	})

// A declared handler with a goroutine joined by a WaitGroup before return:
// still reported (see the package documentation).
func joined(c *llmtool.ReadCtx, in In) (Out, error) {
	var wg sync.WaitGroup
	var n int
	wg.Add(1)
	go func() { // want `goroutine uses the ctx or transaction of joined \(c\): .*a panic in a goroutine escapes the registry's recovery even if the goroutine is joined before the return`
		defer wg.Done()
		_ = c.QueryRow(`SELECT count(*) FROM notes`).Scan(&n)
	}()
	wg.Wait()
	return Out{N: n}, nil
}

var joinedTool = llmtool.Read("joined", "", joined)

// WaitGroup.Go (and errgroup's Go) start goroutines too.
var waitGroupGo = llmtool.Read("wait_group_go", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		var wg sync.WaitGroup
		var n int
		wg.Go(func() { // want `wg.Go runs this function on another goroutine, but it uses the ctx or transaction of the handler of tool "wait_group_go" \(c\)`
			_ = c.QueryRow(`SELECT count(*) FROM notes`).Scan(&n)
		})
		wg.Wait()
		return Out{N: n}, nil
	})

// time.AfterFunc runs its function later, on another goroutine.
var afterFunc = llmtool.Read("after_func", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		time.AfterFunc(time.Second, func() { c.Progress(1, 1, "done") }) // want `time.AfterFunc runs this function on another goroutine`
		return Out{}, nil
	})

// AfterCommit hooks run after the commit, when the ctx is dead.
var afterCommit = llmtool.Write("after_commit", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		c.AfterCommit(func() { // want `AfterCommit hook uses the ctx or transaction of the handler of tool "after_commit" \(c\), which is dead after the commit`
			c.Exec(`UPDATE stats SET n = n + 1`)
		})
		return Out{}, nil
	})

// A closure capturing the ctx, stored in a local and then run by go.
var closureGo = llmtool.Read("closure_go", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		load := func() { c.QueryRow(`SELECT 1`) }
		go load() // want `goroutine uses the ctx or transaction of the handler of tool \"closure_go\" \(load\)`
		return Out{}, nil
	})

// A guard is a handler too: its ctx dies with the call.
func guard(c *llmtool.ReadCtx, in In) error {
	go c.QueryRow(`SELECT 1`) // want `goroutine uses the ctx or transaction of guard \(c\)`
	return nil
}

var guarded = llmtool.Read("guarded", "", func(c *llmtool.ReadCtx, in In) (Out, error) { return Out{}, nil },
	llmtool.Guards(guard))

// A method handler.
type Service struct{}

func (s *Service) count(c *llmtool.ReadCtx, in In) (Out, error) {
	go func() { c.Query(`SELECT 1`) }() // want `goroutine uses the ctx or transaction of count \(c\)`
	return Out{}, nil
}

// A deferred call runs inside the transaction, but a goroutine it starts
// does not.
var deferredGo = llmtool.Read("deferred_go", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		defer func() {
			go c.QueryRow(`SELECT 1`) // want `goroutine uses the ctx or transaction of the handler of tool "deferred_go" \(c\)`
		}()
		return Out{}, nil
	})
