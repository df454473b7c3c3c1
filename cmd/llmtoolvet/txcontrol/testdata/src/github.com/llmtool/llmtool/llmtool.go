// Package llmtool is a stub of github.com/llmtool/llmtool for the
// analyzer's tests: the names and signatures the analyzer looks at.
package llmtool

import (
	"context"
	"database/sql"
)

type ReadCtx struct {
	context.Context
	tx *sql.Tx
}

type WriteCtx struct {
	ReadCtx
}

func (c *ReadCtx) QueryRow(query string, args ...any) *sql.Row { return c.tx.QueryRow(query, args...) }

func (c *WriteCtx) Exec(query string, args ...any) (sql.Result, error) {
	return c.tx.Exec(query, args...)
}
func (c *WriteCtx) Tx() *sql.Tx          { return c.tx }
func (c *WriteCtx) AfterCommit(f func()) {}

type Tool struct{}
type Option func()
type Module struct{}

func Read[In, Out any](name, description string, handler func(*ReadCtx, In) (Out, error), opts ...Option) *Tool {
	return &Tool{}
}

func Write[In, Out any](name, description string, handler func(*WriteCtx, In) (Out, error), opts ...Option) *Tool {
	return &Tool{}
}

func DefineTools(module string, tools ...*Tool) *Module { return &Module{} }
