// Package leaky has a tool whose handler writes from a goroutine after it
// returned: go vet -vettool=llmtoolvet must report it.
package leaky

import "github.com/llmtool/llmtool"

type In struct {
	Title string `json:"title"`
}

type Out struct {
	OK bool `json:"ok"`
}

var Tools = llmtool.DefineTools("leaky",
	llmtool.Write("touch_note", "Touch a note.",
		func(c *llmtool.WriteCtx, in In) (Out, error) {
			go c.Exec(`UPDATE notes SET touched = 1 WHERE title = ?`, in.Title)
			return Out{OK: true}, nil
		}))
