// The corrected read_as_write_explicit program: the handler of a write tool takes a
// *llmtool.WriteCtx.
package main

import "github.com/llmtool/llmtool"

type In struct {
	Title string `json:"title"`
}

type Out struct {
	ID int64 `json:"id"`
}

func createNote(c *llmtool.WriteCtx, in In) (Out, error) {
	res, err := c.Exec(`INSERT INTO notes (title) VALUES (?)`, in.Title)
	if err != nil {
		return Out{}, err
	}
	id, err := res.LastInsertId()
	return Out{ID: id}, err
}

var createNoteTool = llmtool.Write[In, Out]("create_note", "Create a note.", createNote)

func main() { _ = llmtool.DefineTools("notes", createNoteTool) }
