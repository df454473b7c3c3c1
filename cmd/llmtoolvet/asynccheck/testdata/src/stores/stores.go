// Package stores holds handlers that store the call's ctx or transaction
// where it outlives the call.
package stores

import (
	"database/sql"

	"github.com/llmtool/llmtool"
)

type In struct{ ID int }
type Out struct{ N int }

var lastCtx *llmtool.ReadCtx
var lastTx *sql.Tx
var byName = map[string]*sql.Tx{}
var pending []*sql.Rows
var queue = make(chan *sql.Tx, 1)

var toGlobal = llmtool.Read("to_global", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		lastCtx = c // want `the ctx or transaction of the handler of tool "to_global" \(c\) is stored in package-level variable lastCtx, which outlives the call`
		return Out{}, nil
	})

var txToGlobal = llmtool.Write("tx_to_global", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		lastTx = c.Tx() // want `\(c.Tx\(\)\) is stored in package-level variable lastTx`
		return Out{}, nil
	})

var toMap = llmtool.Write("to_map", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		byName["last"] = c.Tx() // want `is stored in package-level variable byName`
		return Out{}, nil
	})

var toSlice = llmtool.Read("to_slice", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		rows, err := c.Query(`SELECT 1`)
		if err != nil {
			return Out{}, err
		}
		pending = append(pending, rows) // want `\(append\(pending, rows\)\) is stored in package-level variable pending`
		return Out{}, nil
	})

var toChan = llmtool.Write("to_chan", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		queue <- c.Tx() // want `the ctx or transaction of the handler of tool \"to_chan\" \(c.Tx\(\)\) is sent on a channel`
		return Out{}, nil
	})

// A local channel is no safer: whoever receives may hold on to the value.
var toLocalChan = llmtool.Read("to_local_chan", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		ch := make(chan *llmtool.ReadCtx, 1)
		ch <- c // want `is sent on a channel`
		<-ch
		return Out{}, nil
	})

// A struct field reached through the receiver outlives the call.
type Cache struct {
	ctx  *llmtool.ReadCtx
	rows map[int]*sql.Rows
}

func (k *Cache) get(c *llmtool.ReadCtx, in In) (Out, error) {
	k.ctx = c // want `the ctx or transaction of get \(c\) is stored in k.ctx, reachable by the caller`
	rows, _ := c.Query(`SELECT 1`)
	k.rows[in.ID] = rows // want `\(rows\) is stored in k.rows\[in.ID\], reachable by the caller`
	return Out{}, nil
}

// A variable captured from the function that builds the tool.
func newTool() *llmtool.Tool {
	var saved *llmtool.WriteCtx
	_ = &saved
	return llmtool.Write("captured", "",
		func(c *llmtool.WriteCtx, in In) (Out, error) {
			saved = c // want `is stored in variable saved, declared outside the handler`
			return Out{}, nil
		})
}

// A closure capturing the ctx, stored globally.
var later func()

var closureStored = llmtool.Read("closure_stored", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		later = func() { c.QueryRow(`SELECT 1`) } // want `\(a closure capturing c\) is stored in package-level variable later`
		return Out{}, nil
	})

// A local struct holding the tx is call-scoped; storing the struct
// globally is reported.
type queries struct{ tx *sql.Tx }

var global queries

var localThenGlobal = llmtool.Write("local_then_global", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		var q queries
		q.tx = c.Tx()
		global = q // want `\(q\) is stored in package-level variable global`
		return Out{}, nil
	})
