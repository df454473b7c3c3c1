// Package example is the package the Example runs the analyzer over.
package example

import (
	"database/sql"

	"github.com/llmtool/llmtool"
)

type In struct{ ID int }
type Out struct{ OK bool }

func finish(tx *sql.Tx, err error) error {
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

var Tools = llmtool.DefineTools("example",
	llmtool.Write("delete_note", "Delete a note.",
		func(c *llmtool.WriteCtx, in In) (Out, error) {
			defer c.Tx().Rollback() // want `Rollback on the transaction of a WriteCtx`
			_, err := c.Tx().Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
			return Out{OK: err == nil}, finish(c.Tx(), err) // want `Rollback and Commit on the transaction of a WriteCtx`
		}))
