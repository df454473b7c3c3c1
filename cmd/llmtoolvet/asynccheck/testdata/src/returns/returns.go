// Package returns holds handlers whose results carry their ctx or
// transaction past the return.
package returns

import (
	"database/sql"
	"encoding/json"

	"github.com/llmtool/llmtool"
)

type In struct{ ID int }

// lazyNote queries when it is encoded: after the transaction ended, if it
// is encoded after the handler returned.
type lazyNote struct {
	c  *llmtool.ReadCtx
	id int
}

func (n lazyNote) MarshalJSON() ([]byte, error) {
	var title string
	err := n.c.QueryRow(`SELECT title FROM notes WHERE id = ?`, n.id).Scan(&title)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"title": title})
}

var lazy = llmtool.Read("lazy", "",
	func(c *llmtool.ReadCtx, in In) (lazyNote, error) {
		return lazyNote{c: c, id: in.ID}, nil // want `the handler of tool \"lazy\" returns lazyNote\{…\}, which carries its ctx or transaction past the return`
	})

// An Out with an interface field holding a closure.
type Out struct {
	Value any `json:"value"`
}

var closure = llmtool.Read("closure", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		load := func() string {
			var s string
			c.QueryRow(`SELECT 1`).Scan(&s)
			return s
		}
		return Out{Value: load}, nil // want `the handler of tool \"closure\" returns Out\{…\}, which carries`
	})

// An error value that holds the rows.
type rowsError struct{ rows *sql.Rows }

func (e *rowsError) Error() string { return "rows" }

func withRows(c *llmtool.ReadCtx, in In) (Out, error) {
	rows, err := c.Query(`SELECT 1`)
	if err != nil {
		return Out{}, err
	}
	return Out{}, &rowsError{rows: rows} // want `withRows returns &rowsError\{…\}, which carries`
}

var withRowsTool = llmtool.Read("with_rows", "", withRows)

// A closure written straight into the result.
var direct = llmtool.Read("direct", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		return Out{Value: func() error { return c.Err() }}, nil // want `the handler of tool "direct" returns Out\{…\}, which carries`
	})
