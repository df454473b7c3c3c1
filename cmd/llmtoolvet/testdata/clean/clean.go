// Package clean has the corrected tool: go vet -vettool=llmtoolvet must be
// silent.
package clean

import "github.com/llmtool/llmtool"

type In struct {
	Title string `json:"title"`
}

type Out struct {
	OK bool `json:"ok"`
}

var Tools = llmtool.DefineTools("clean",
	llmtool.Write("touch_note", "Touch a note.",
		func(c *llmtool.WriteCtx, in In) (Out, error) {
			_, err := c.Exec(`UPDATE notes SET touched = 1 WHERE title = ?`, in.Title)
			return Out{OK: err == nil}, err
		}))
