// A read handler that reaches for the *sql.Tx to write through it: ReadCtx
// has no Tx, so this program must not compile.
package main

import "github.com/llmtool/llmtool"

type In struct {
	ID int `json:"id"`
}

type Out struct {
	Deleted bool `json:"deleted"`
}

var deleteNote = llmtool.Read("delete_note", "Delete a note.",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		_, err := c.Tx().Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return Out{Deleted: err == nil}, err
	})

func main() { _ = llmtool.DefineTools("notes", deleteNote) }
