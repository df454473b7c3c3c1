// Package selfcommit has a tool whose handler commits the transaction of
// its WriteCtx itself: go vet -vettool=llmtoolvet must report it.
package selfcommit

import "github.com/llmtool/llmtool"

type In struct {
	Title string `json:"title"`
}

type Out struct {
	OK bool `json:"ok"`
}

var Tools = llmtool.DefineTools("selfcommit",
	llmtool.Write("touch_note", "Touch a note.",
		func(c *llmtool.WriteCtx, in In) (Out, error) {
			if _, err := c.Exec(`UPDATE notes SET touched = 1 WHERE title = ?`, in.Title); err != nil {
				return Out{}, err
			}
			return Out{OK: true}, c.Tx().Commit()
		}))
