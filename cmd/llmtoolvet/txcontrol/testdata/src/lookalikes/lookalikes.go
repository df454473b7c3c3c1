// Package lookalikes holds code that resembles a handler committing its
// WriteCtx's transaction but is fine: the analyzer must report none of it.
package lookalikes

import (
	"database/sql"

	"github.com/llmtool/llmtool"

	"kv"
)

type In struct{ ID int }
type Out struct{ N int }

var auditDB *sql.DB
var store kv.Store

// A transaction the handler began itself, on a *sql.DB it got elsewhere,
// with the handler's ctx as BeginTx's context.
var ownTx = llmtool.Write("own_tx", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		if _, err := c.Exec(`UPDATE notes SET n = n + 1 WHERE id = ?`, in.ID); err != nil {
			return Out{}, err
		}
		tx, err := auditDB.BeginTx(c, nil)
		if err != nil {
			return Out{}, err
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`INSERT INTO audit (id) VALUES (?)`, in.ID); err != nil {
			return Out{}, err
		}
		commit := tx.Commit
		return Out{N: 1}, commit()
	})

// A read handler doing the same.
var ownTxRead = llmtool.Read("own_tx_read", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		tx, err := auditDB.BeginTx(c, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return Out{}, err
		}
		defer tx.Rollback()
		var n int
		err = tx.QueryRow(`SELECT count(*) FROM audit`).Scan(&n)
		return Out{N: n}, err
	})

// Commit and Rollback of other types named Tx, in this package and in
// another.
type Tx struct{}

func (Tx) Commit() error   { return nil }
func (Tx) Rollback() error { return nil }

var otherTx = llmtool.Write("other_tx", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		var local Tx
		defer local.Rollback()
		t := store.Begin()
		if _, err := c.Tx().Exec(`UPDATE notes SET n = 0`); err != nil {
			t.Rollback()
			return Out{}, err
		}
		return Out{}, t.Commit()
	})

// A type named Tx wrapping the WriteCtx's transaction, whose Commit only
// runs statements in it.
type batchTx struct {
	tx      *sql.Tx
	pending []string
}

func (b *batchTx) Commit() error {
	for _, q := range b.pending {
		if _, err := b.tx.Exec(q); err != nil {
			return err
		}
	}
	b.pending = nil
	return nil
}

func (b *batchTx) Rollback() error {
	b.pending = nil
	return nil
}

var batched = llmtool.Write("batched", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		b := &batchTx{tx: c.Tx()}
		b.pending = append(b.pending, `UPDATE notes SET n = 0`)
		if in.ID == 0 {
			b.Rollback()
			return Out{}, nil
		}
		return Out{}, b.Commit()
	})

// The WriteCtx's transaction used for what Tx is for.
type queries struct {
	db interface {
		Exec(string, ...any) (sql.Result, error)
	}
}

func newQueries(tx *sql.Tx) *queries { return &queries{db: tx} }

var useTx = llmtool.Write("use_tx", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		tx := c.Tx()
		stmt, err := tx.Prepare(`UPDATE notes SET n = ? WHERE id = ?`)
		if err != nil {
			return Out{}, err
		}
		defer stmt.Close()
		if _, err := stmt.Exec(1, in.ID); err != nil {
			return Out{}, err
		}
		_, err = newQueries(c.Tx()).db.Exec(`DELETE FROM drafts`)
		return Out{}, err
	})

// A helper that commits what it is given, called only with transactions
// begun here.
func finish(tx *sql.Tx, err error) error {
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func Archive(db *sql.DB, id int) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	_, err = tx.Exec(`UPDATE notes SET archived = 1 WHERE id = ?`, id)
	return finish(tx, err)
}

// Not a handler and no WriteCtx: a migration rolling back.
func Migrate(db *sql.DB) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY)`); err != nil {
		return err
	}
	return tx.Commit()
}

// A shadowing variable of the same name, in an inner block.
var shadowed = llmtool.Write("shadowed", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		tx := c.Tx()
		if _, err := tx.Exec(`UPDATE notes SET n = 1`); err != nil {
			return Out{}, err
		}
		{
			tx, err := auditDB.Begin()
			if err != nil {
				return Out{}, err
			}
			return Out{}, tx.Commit()
		}
	})

// The error a Commit returned is not a transaction.
var errOfOwn = llmtool.Write("err_of_own", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		tx, _ := auditDB.Begin()
		err := tx.Commit()
		return Out{}, err
	})

var Tools = llmtool.DefineTools("lookalikes", ownTx, batched, ownTxRead, otherTx, useTx, shadowed, errOfOwn)
