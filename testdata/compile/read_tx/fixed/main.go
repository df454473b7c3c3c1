// The corrected read_tx program: only a *llmtool.WriteCtx hands out the
// call's *sql.Tx.
package main

import "github.com/llmtool/llmtool"

type In struct {
	ID int `json:"id"`
}

type Out struct {
	Deleted bool `json:"deleted"`
}

var deleteNote = llmtool.Write("delete_note", "Delete a note.",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		_, err := c.Tx().Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return Out{Deleted: err == nil}, err
	})

func main() { _ = llmtool.DefineTools("notes", deleteNote) }
