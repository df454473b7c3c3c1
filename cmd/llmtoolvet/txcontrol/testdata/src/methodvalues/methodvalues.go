// Package methodvalues holds handlers that take Commit or Rollback of
// their WriteCtx's transaction as a method value.
package methodvalues

import (
	"database/sql"

	"github.com/llmtool/llmtool"
)

type In struct{ ID int }
type Out struct{ N int }

var commitLater = llmtool.Write("commit_later", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		tx := c.Tx()
		f := tx.Commit // want `^llmtoolvet: Commit on the transaction of a WriteCtx, taken as a method value \(tx\.Commit\): the registry commits when the handler returns nil and rolls back on an error; return an error instead of rolling back, and never commit yourself$`
		return Out{}, f()
	})

var deferredValue = llmtool.Write("deferred_value", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		undo := c.Tx().Rollback // want `Rollback on the transaction of a WriteCtx, taken as a method value \(c\.Tx\(\)\.Rollback\)`
		defer undo()
		return Out{}, nil
	})

func onError(err error, undo func() error) error {
	if err != nil {
		undo()
	}
	return err
}

var passedValue = llmtool.Write("passed_value", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		_, err := c.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return Out{}, onError(err, c.Tx().Rollback) // want `Rollback on the transaction of a WriteCtx, taken as a method value`
	})

// A helper taking the method value of the transaction it is given: the
// finding is on the call that gives it the WriteCtx's.
func rollbackFunc(tx *sql.Tx) func() error { return tx.Rollback }

var viaHelper = llmtool.Write("via_helper", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		undo := rollbackFunc(c.Tx()) // want `Rollback on the transaction of a WriteCtx \(passed to rollbackFunc, which takes the method value Rollback at methodvalues.go:\d+:\d+\)`
		defer undo()
		return Out{}, nil
	})

var Tools = llmtool.DefineTools("methodvalues", commitLater, deferredValue, passedValue, viaHelper)
