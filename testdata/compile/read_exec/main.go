// A read handler that tries to write: ReadCtx has no Exec, so this program
// must not compile. compile_test.go asserts the compiler's message.
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
		_, err := c.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return Out{Deleted: err == nil}, err
	})

func main() { _ = llmtool.DefineTools("notes", deleteNote) }
