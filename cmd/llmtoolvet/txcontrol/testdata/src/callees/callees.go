// Package callees holds handlers that pass the transaction of their
// WriteCtx to functions of the same package that commit or roll it back.
// The finding is on the call; the helpers themselves are fine for a
// transaction the code began itself (see ownTx below).
package callees

import (
	"database/sql"

	"github.com/llmtool/llmtool"
)

type In struct{ ID int }
type Out struct{ N int }

var appDB *sql.DB

// finish is the usual end of a transaction: roll back on an error, commit
// otherwise.
func finish(tx *sql.Tx, err error) error {
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

var viaFinish = llmtool.Write("via_finish", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		_, err := c.Exec(`DELETE FROM notes WHERE id = ?`, in.ID)
		return Out{}, finish(c.Tx(), err) // want `^llmtoolvet: Rollback and Commit on the transaction of a WriteCtx \(passed to finish, which calls Rollback at callees.go:22:6 and Commit at callees.go:25:12\): the registry commits when the handler returns nil and rolls back on an error; return an error instead of rolling back, and never commit yourself$`
	})

// The same helper given a transaction the handler began itself: not
// reported.
var ownTx = llmtool.Write("own_tx", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		tx, err := appDB.BeginTx(c, nil)
		if err != nil {
			return Out{}, err
		}
		_, err = tx.Exec(`INSERT INTO audit (id) VALUES (?)`, in.ID)
		return Out{}, finish(tx, err)
	})

// Two levels deep, through a method.
type repo struct{}

func (repo) close(tx *sql.Tx) error { return finish(tx, nil) }

func twoLevels(c *llmtool.WriteCtx, in In) (Out, error) {
	return Out{}, repo{}.close(c.Tx()) // want `\(passed to close, then to finish, which calls Rollback at callees.go:\d+:\d+ and Commit at callees.go:\d+:\d+\)`
}

var twoLevelsTool = llmtool.Write("two_levels", "", twoLevels)

// A method of a struct holding the transaction.
type queries struct{ tx *sql.Tx }

func (q *queries) done() error { return q.tx.Commit() }

var viaReceiver = llmtool.Write("via_receiver", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		q := &queries{tx: c.Tx()}
		return Out{}, q.done() // want `Commit on the transaction of a WriteCtx \(passed to done, which calls Commit at callees.go:\d+:\d+\)`
	})

// A method that stores the transaction in its receiver: the receiver then
// holds it.
func (q *queries) bind(tx *sql.Tx) { q.tx = tx }

var viaBind = llmtool.Write("via_bind", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		var q queries
		q.bind(c.Tx())
		return Out{}, q.tx.Commit() // want `^llmtoolvet: Commit on the transaction of a WriteCtx: `
	})

// Function literals: bound to a local variable, and called in place.
var viaLiterals = llmtool.Write("via_literals", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		abort := func(tx *sql.Tx) { tx.Rollback() }
		if in.ID == 0 {
			abort(c.Tx()) // want `Rollback on the transaction of a WriteCtx \(passed to abort, which calls Rollback at callees.go:\d+:\d+\)`
		}
		err := func(tx *sql.Tx) error { return tx.Commit() }(c.Tx()) // want `\(passed to the function literal, which calls Commit at callees.go:\d+:\d+\)`
		return Out{}, err
	})

// A helper given the WriteCtx, not the transaction: it commits through
// c.Tx() itself, which is reported there, not at the call.
func commitAll(c *llmtool.WriteCtx) error {
	return c.Tx().Commit() // want `^llmtoolvet: Commit on the transaction of a WriteCtx: `
}

var viaCtx = llmtool.Write("via_ctx", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		return Out{}, commitAll(c)
	})

// A helper that commits the WriteCtx's transaction on its own and only
// uses the one it is passed: reported inside, not at the call.
func mixed(c *llmtool.WriteCtx, tx *sql.Tx) error {
	if _, err := tx.Exec(`UPDATE notes SET n = 0`); err != nil {
		return err
	}
	return c.Tx().Commit() // want `^llmtoolvet: Commit on the transaction of a WriteCtx: `
}

var viaMixed = llmtool.Write("via_mixed", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		return Out{}, mixed(c, c.Tx())
	})

// Recursion terminates.
func retry(tx *sql.Tx, n int) error {
	if n > 0 {
		return retry(tx, n-1)
	}
	return tx.Rollback()
}

var viaRetry = llmtool.Write("via_retry", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		return Out{}, retry(c.Tx(), 3) // want `\(passed to retry, which calls Rollback at callees.go:\d+:\d+\)`
	})

// A helper that only uses the transaction: not reported.
func touch(tx *sql.Tx, id int) error {
	_, err := tx.Exec(`UPDATE notes SET touched = 1 WHERE id = ?`, id)
	return err
}

var viaTouch = llmtool.Write("via_touch", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		return Out{}, touch(c.Tx(), in.ID)
	})

var Tools = llmtool.DefineTools("callees", viaFinish, ownTx, twoLevelsTool, viaReceiver, viaBind,
	viaLiterals, viaCtx, viaMixed, viaRetry, viaTouch)
