// A read handler passed to llmtool.Write with explicit type arguments: the
// write tool's handler must take a *llmtool.WriteCtx, so this program must
// not compile.
package main

import "github.com/llmtool/llmtool"

type In struct {
	Title string `json:"title"`
}

type Out struct {
	ID int64 `json:"id"`
}

func createNote(c *llmtool.ReadCtx, in In) (Out, error) {
	var out Out
	err := c.QueryRow(`SELECT max(id) + 1 FROM notes`).Scan(&out.ID)
	return out, err
}

var createNoteTool = llmtool.Write[In, Out]("create_note", "Create a note.", createNote)

func main() { _ = llmtool.DefineTools("notes", createNoteTool) }
