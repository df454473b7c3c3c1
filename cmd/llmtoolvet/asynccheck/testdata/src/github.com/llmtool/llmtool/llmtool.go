// Package llmtool is a stub of github.com/llmtool/llmtool for the
// analyzer's tests: the names and signatures the analyzer looks at.
package llmtool

import (
	"context"
	"database/sql"
	"log/slog"
)

type Principal struct{ ID, Name string }

type ReadCtx struct {
	context.Context
	tx *sql.Tx
}

type WriteCtx struct {
	ReadCtx
}

func (c *ReadCtx) Query(query string, args ...any) (*sql.Rows, error) {
	return c.tx.Query(query, args...)
}
func (c *ReadCtx) QueryRow(query string, args ...any) *sql.Row { return c.tx.QueryRow(query, args...) }
func (c *ReadCtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.tx.QueryContext(ctx, query, args...)
}
func (c *ReadCtx) Logger() *slog.Logger                         { return slog.Default() }
func (c *ReadCtx) Progress(done, total float64, message string) {}

func (c *WriteCtx) Exec(query string, args ...any) (sql.Result, error) {
	return c.tx.Exec(query, args...)
}
func (c *WriteCtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.tx.ExecContext(ctx, query, args...)
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

func Guards[In any](guards ...func(*ReadCtx, In) error) Option { return nil }

func DefineTools(module string, tools ...*Tool) *Module { return &Module{} }

func PrincipalFrom(ctx context.Context) *Principal { return nil }

func TenantFrom(ctx context.Context) string { return "" }
