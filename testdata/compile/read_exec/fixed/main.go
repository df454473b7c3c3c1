// The corrected read_exec program: a tool that writes is defined with
// llmtool.Write and its handler takes a *llmtool.WriteCtx.
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
		_, err := c.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return Out{Deleted: err == nil}, err
	})

func main() { _ = llmtool.DefineTools("notes", deleteNote) }
