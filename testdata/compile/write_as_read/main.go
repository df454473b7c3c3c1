// A write handler passed to llmtool.Read: a read tool runs in a read-only
// transaction and its handler gets a *llmtool.ReadCtx, so this program must
// not compile.
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

var createNoteTool = llmtool.Read("create_note", "Create a note.", createNote)

func main() { _ = llmtool.DefineTools("notes", createNoteTool) }
