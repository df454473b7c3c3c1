// Package fixes checks the suggested fix for a goroutine: run the call
// synchronously.
package fixes

import "github.com/llmtool/llmtool"

type In struct{ ID int }
type Out struct{ N int }

var counted = llmtool.Write("counted", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		go c.Exec(`UPDATE counters SET n = n + 1`) // want `goroutine uses the ctx or transaction of the handler of tool \"counted\"`
		go func() {                                // want `goroutine uses the ctx or transaction of the handler of tool \"counted\"`
			c.Exec(`UPDATE counters SET m = m + 1`)
		}()
		return Out{}, nil
	})
