// Package outtypes holds tools whose Out types hold work to run later.
package outtypes

import (
	"iter"
	"time"

	"github.com/llmtool/llmtool"
)

type In struct{}

type ChanOut struct {
	Items chan string `json:"items"`
}

var withChan = llmtool.Read("with_chan", "",
	func(c *llmtool.ReadCtx, in In) (ChanOut, error) { // want `Out type ChanOut contains a channel \(chan string\) at Items, which does its work after the transaction ended \(llmtool.Read panics on it at definition\)`
		return ChanOut{}, nil
	})

type Note struct {
	Title string `json:"title"`
}

type SeqOut struct {
	Notes iter.Seq[Note] `json:"notes"`
}

func listNotes(c *llmtool.ReadCtx, in In) (SeqOut, error) { return SeqOut{}, nil }

var withSeq = llmtool.Read("with_seq", "", listNotes) // want `Out type SeqOut contains an iterator \(iter.Seq\) at Notes`

// At any depth: a map of slices of structs with a func field.
type Deep struct {
	Render func() string `json:"render"`
}

type DeepOut struct {
	Groups map[string][]*Deep `json:"groups"`
}

var deep = llmtool.Write("deep", "",
	func(c *llmtool.WriteCtx, in In) (DeepOut, error) { // want `Out type DeepOut contains a func \(func\(\) string\) at Groups\[key\]\[\].Render`
		return DeepOut{}, nil
	})

// Embedded structs are flattened, as encoding/json does.
type Paging struct {
	Next iter.Seq2[int, Note] `json:"next"`
}

type PagedOut struct {
	Paging
	Total int `json:"total"`
}

var paged = llmtool.Read[In, PagedOut]("paged", "",
	func(c *llmtool.ReadCtx, in In) (PagedOut, error) { // want `Out type PagedOut contains an iterator \(iter.Seq2\) at Next`
		return PagedOut{}, nil
	})

// Not reported: plain fields, a func field hidden from JSON, unexported
// fields, and types that encode themselves.
type PlainOut struct {
	Notes  []Note          `json:"notes"`
	ByID   map[string]Note `json:"byId"`
	When   time.Time       `json:"when"`
	Hook   func()          `json:"-"`
	done   chan struct{}
	Extra  map[string]any    `json:"extra"`
	Custom custom            `json:"custom"`
	Ptr    *Note             `json:"ptr"`
	Nested struct{ N []int } `json:"nested"`
}

type custom struct{ f func() }

func (custom) MarshalJSON() ([]byte, error) { return []byte(`{}`), nil }

var plain = llmtool.Read("plain", "",
	func(c *llmtool.ReadCtx, in In) (PlainOut, error) {
		return PlainOut{}, nil
	})

// A func as the whole Out.
var funcOut = llmtool.Read("func_out", "",
	func(c *llmtool.ReadCtx, in In) (func() int, error) { return nil, nil }) // want `Out type func\(\) int is a func \(func\(\) int\), which does its work after the transaction ended`

// A deliberate finding, silenced with a reason.
var silenced = llmtool.Read("silenced", "",
	//llmtoolvet:ignore this test proves the definition-time panic
	func(c *llmtool.ReadCtx, in In) (ChanOut, error) { return ChanOut{}, nil })
