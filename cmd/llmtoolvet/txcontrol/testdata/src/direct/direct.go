// Package direct holds handlers and helpers that commit or roll back the
// transaction of their WriteCtx themselves.
package direct

import (
	"database/sql"
	"errors"

	"github.com/llmtool/llmtool"
)

type In struct{ ID int }
type Out struct{ N int }

var errNotFound = errors.New("not found")

var commitOnCall = llmtool.Write("commit_on_call", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		if _, err := c.Exec(`UPDATE notes SET n = n + 1 WHERE id = ?`, in.ID); err != nil {
			return Out{}, err
		}
		return Out{N: 1}, c.Tx().Commit() // want `^llmtoolvet: Commit on the transaction of a WriteCtx: the registry commits when the handler returns nil and rolls back on an error; return an error instead of rolling back, and never commit yourself$`
	})

var rollbackOnVar = llmtool.Write("rollback_on_var", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		tx := c.Tx()
		res, err := tx.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		if err != nil {
			return Out{}, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			tx.Rollback() // want `^llmtoolvet: Rollback on the transaction of a WriteCtx: `
			return Out{}, errNotFound
		}
		return Out{N: 1}, nil
	})

var deferredRollback = llmtool.Write("deferred_rollback", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		defer c.Tx().Rollback() // want `Rollback on the transaction of a WriteCtx`
		_, err := c.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return Out{}, err
	})

// A declared handler, committing through a variable declared with var.
func commitDeclared(c *llmtool.WriteCtx, in In) (Out, error) {
	var tx *sql.Tx = c.Tx()
	if err := tx.Commit(); err != nil { // want `Commit on the transaction of a WriteCtx`
		return Out{}, err
	}
	return Out{}, nil
}

var commitDeclaredTool = llmtool.Write("commit_declared", "", commitDeclared)

// A method expression.
var methodExpr = llmtool.Write("method_expr", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		return Out{}, (*sql.Tx).Commit(c.Tx()) // want `Commit on the transaction of a WriteCtx`
	})

// Through a struct field, a slice element, an embedded *sql.Tx and an
// interface variable.
type queries struct{ tx *sql.Tx }

type embedded struct{ *sql.Tx }

type committer interface{ Commit() error }

var holders = llmtool.Write("holders", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		q := &queries{tx: c.Tx()}
		q.tx.Rollback() // want `Rollback on the transaction of a WriteCtx`
		txs := []*sql.Tx{c.Tx()}
		txs[0].Rollback() // want `Rollback on the transaction of a WriteCtx`
		for _, tx := range txs {
			tx.Rollback() // want `Rollback on the transaction of a WriteCtx`
		}
		e := embedded{c.Tx()}
		e.Rollback() // want `Rollback on the transaction of a WriteCtx`
		var cm committer = c.Tx()
		return Out{}, cm.Commit() // want `Commit on the transaction of a WriteCtx`
	})

// A field assigned after the struct was made.
var fieldAssigned = llmtool.Write("field_assigned", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		var q queries
		q.tx = c.Tx()
		return Out{}, q.tx.Commit() // want `Commit on the transaction of a WriteCtx`
	})

// The method value c.Tx, called later.
var txMethodValue = llmtool.Write("tx_method_value", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		get := c.Tx
		return Out{}, get().Commit() // want `Commit on the transaction of a WriteCtx`
	})

// A helper of the package that returns the transaction.
type store struct{ c *llmtool.WriteCtx }

func (s *store) tx() *sql.Tx { return s.c.Tx() }

func txAndErr(c *llmtool.WriteCtx) (*sql.Tx, error) { return c.Tx(), nil }

func namedResult(c *llmtool.WriteCtx) (tx *sql.Tx) {
	tx = c.Tx()
	return
}

var viaGetters = llmtool.Write("via_getters", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		s := &store{c: c}
		s.tx().Rollback() // want `Rollback on the transaction of a WriteCtx`
		tx, err := txAndErr(c)
		if err != nil {
			return Out{}, err
		}
		tx.Rollback()             // want `Rollback on the transaction of a WriteCtx`
		namedResult(c).Rollback() // want `Rollback on the transaction of a WriteCtx`
		return Out{}, nil
	})

// Not a handler, but it commits the transaction of the WriteCtx it is
// given: reported all the same.
func save(id int, c *llmtool.WriteCtx) error {
	if _, err := c.Exec(`UPDATE notes SET saved = 1 WHERE id = ?`, id); err != nil {
		return err
	}
	return c.Tx().Commit() // want `Commit on the transaction of a WriteCtx`
}

// A closure of the handler, called synchronously.
var inClosure = llmtool.Write("in_closure", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		tx := c.Tx()
		fail := func(err error) (Out, error) {
			tx.Rollback() // want `Rollback on the transaction of a WriteCtx`
			return Out{}, err
		}
		if in.ID == 0 {
			return fail(errNotFound)
		}
		return Out{}, nil
	})

// The usual shape of code written for a transaction of its own: a
// deferred closure rolling back on an error.
var deferredClosure = llmtool.Write("deferred_closure", "",
	func(c *llmtool.WriteCtx, in In) (out Out, err error) {
		tx := c.Tx()
		defer func() {
			if err != nil {
				tx.Rollback() // want `Rollback on the transaction of a WriteCtx`
			}
		}()
		_, err = tx.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return out, err
	})

var Tools = llmtool.DefineTools("direct", deferredClosure, commitOnCall, rollbackOnVar, deferredRollback,
	commitDeclaredTool, methodExpr, holders, fieldAssigned, txMethodValue, viaGetters, inClosure)
