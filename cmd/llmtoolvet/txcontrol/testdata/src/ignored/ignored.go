// Package ignored holds deliberate commits silenced with
// //llmtoolvet:ignore, as a test proving that the registry refuses them at
// run time would.
package ignored

import (
	"database/sql"

	"github.com/llmtool/llmtool"
)

type In struct{ ID int }
type Out struct{ N int }

func finish(tx *sql.Tx) error { return tx.Commit() }

var Tools = llmtool.DefineTools("ignored",
	llmtool.Write("same_line", "",
		func(c *llmtool.WriteCtx, in In) (Out, error) {
			return Out{}, c.Tx().Commit() //llmtoolvet:ignore this test proves the registry refuses a handler's own commit
		}),
	llmtool.Write("line_above", "",
		func(c *llmtool.WriteCtx, in In) (Out, error) {
			//llmtoolvet:ignore this test proves the registry refuses a handler's own rollback
			c.Tx().Rollback()
			//llmtoolvet:ignore the directive works on a call passing the tx on, too
			return Out{}, finish(c.Tx())
		}),
	llmtool.Write("not_a_directive", "",
		func(c *llmtool.WriteCtx, in In) (Out, error) {
			//llmtoolvet:ignored is another word, and silences nothing
			return Out{}, c.Tx().Commit() // want `Commit on the transaction of a WriteCtx`
		}),
	llmtool.Write("two_lines_below", "",
		func(c *llmtool.WriteCtx, in In) (Out, error) {
			//llmtoolvet:ignore reaches its own line and the next only

			return Out{}, c.Tx().Commit() // want `Commit on the transaction of a WriteCtx`
		}),
)
