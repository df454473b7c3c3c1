// Package lookalikes holds code that resembles the hazards but is safe:
// the analyzer must report none of it.
package lookalikes

import (
	"context"
	"database/sql"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/llmtool/llmtool"
)

type In struct {
	ID    int
	Words []string
}

type Out struct {
	N     int      `json:"n"`
	Words []string `json:"words"`
}

type Note struct {
	ID    int
	Title string
}

var cache = map[int]Note{}
var mu sync.Mutex
var events = make(chan string, 16)

func notify(scope, principal string, id int) {}

// A goroutine over plain values copied out of the ctx: its arguments are
// evaluated before it starts.
var plainGo = llmtool.Write("plain_go", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		go notify(llmtool.TenantFrom(c), llmtool.PrincipalFrom(c).ID, in.ID)
		return Out{}, nil
	})

// A goroutine computing on copied plain values, joined before return.
var plainCompute = llmtool.Read("plain_compute", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		words := append([]string(nil), in.Words...)
		var wg sync.WaitGroup
		upper := make([]string, len(words))
		for i, w := range words {
			wg.Add(1)
			go func() {
				defer wg.Done()
				upper[i] = strings.ToUpper(w)
			}()
		}
		wg.Wait()
		return Out{Words: upper}, nil
	})

// A closure capturing the ctx, called synchronously.
var syncClosure = llmtool.Read("sync_closure", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		count := func(table string) (int, error) {
			var n int
			err := c.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n)
			return n, err
		}
		n, err := count("notes")
		return Out{N: n}, err
	})

// Deferred closures run before the handler returns, inside the
// transaction.
var deferred = llmtool.Read("deferred", "",
	func(c *llmtool.ReadCtx, in In) (out Out, err error) {
		rows, err := c.Query(`SELECT id FROM notes`)
		if err != nil {
			return out, err
		}
		defer func() {
			if cerr := rows.Close(); err == nil {
				err = cerr
			}
		}()
		for rows.Next() {
			out.N++
		}
		return out, rows.Err()
	})

// Plain values read from query results stored in a package-level cache
// and sent on a channel.
var storePlain = llmtool.Read("store_plain", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		var n Note
		if err := c.QueryRow(`SELECT id, title FROM notes WHERE id = ?`, in.ID).Scan(&n.ID, &n.Title); err != nil {
			return Out{}, err
		}
		mu.Lock()
		cache[n.ID] = n
		mu.Unlock()
		events <- n.Title
		return Out{N: 1}, nil
	})

// The ctx passed to functions that use it synchronously, in this package
// and in others.
func countNotes(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n)
	return n, err
}

var syncCallee = llmtool.Write("sync_callee", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		n, err := countNotes(c, c.Tx())
		slog.InfoContext(c, "counted", "n", n)
		return Out{N: n}, err
	})

// A local struct holding the tx, used synchronously: call-scoped, not
// stored anywhere lasting.
type queries struct{ tx *sql.Tx }

func (q *queries) count() (int, error) {
	var n int
	err := q.tx.QueryRow(`SELECT count(*) FROM notes`).Scan(&n)
	return n, err
}

var localStruct = llmtool.Write("local_struct", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		q := &queries{tx: c.Tx()}
		n, err := q.count()
		return Out{N: n}, err
	})

// Reading the ctx's values into a plain struct, then starting a goroutine
// with a fresh background context carrying them.
type job struct {
	Scope string
	User  *llmtool.Principal
	Log   *slog.Logger
}

func (j job) run(ctx context.Context) {}

var background = llmtool.Write("background", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		j := job{Scope: llmtool.TenantFrom(c), User: llmtool.PrincipalFrom(c), Log: c.Logger()}
		go j.run(context.Background())
		return Out{}, nil
	})

// AfterCommit with a hook that captures only plain values.
var afterCommitPlain = llmtool.Write("after_commit_plain", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		res, err := c.Exec(`INSERT INTO notes (title) VALUES ('x')`)
		if err != nil {
			return Out{}, err
		}
		id, _ := res.LastInsertId()
		c.AfterCommit(func() { notify("", "", int(id)) })
		return Out{N: int(id)}, nil
	})

// sort.Slice calls its function synchronously.
var sorted = llmtool.Read("sorted", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		var notes []Note
		rows, err := c.Query(`SELECT id, title FROM notes`)
		if err != nil {
			return Out{}, err
		}
		defer rows.Close()
		for rows.Next() {
			var n Note
			if err := rows.Scan(&n.ID, &n.Title); err != nil {
				return Out{}, err
			}
			notes = append(notes, n)
		}
		sort.Slice(notes, func(i, j int) bool {
			c.Progress(float64(i), 0, "")
			return notes[i].Title < notes[j].Title
		})
		return Out{N: len(notes)}, rows.Err()
	})

// A helper whose first parameter is a ReadCtx returns rows to its caller:
// not a tool handler, so returning them is fine.
func queryNotes(c *llmtool.ReadCtx, limit int) (*sql.Rows, error) {
	return c.Query(`SELECT id FROM notes LIMIT ?`, limit)
}

var viaHelper = llmtool.Read("via_helper", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		rows, err := queryNotes(c, 10)
		if err != nil {
			return Out{}, err
		}
		defer rows.Close()
		var out Out
		for rows.Next() {
			out.N++
		}
		return out, rows.Err()
	})

// A function that is not a handler may start goroutines with its own
// long-lived context.
func serve(ctx context.Context, db *sql.DB) {
	go func() {
		db.QueryContext(ctx, `SELECT 1`)
	}()
}

// A handler's value parameter modified locally.
var localParam = llmtool.Read("local_param", "",
	func(c *llmtool.ReadCtx, in In) (Out, error) {
		in.Words = append(in.Words, llmtool.TenantFrom(c))
		return Out{Words: in.Words}, nil
	})

// Deliberate misuse, silenced: on the line above, and on the line itself.
var silenced = llmtool.Write("silenced", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		//llmtoolvet:ignore this test proves that the registry reports the late Exec
		go c.Exec(`UPDATE counters SET n = n + 1`)
		go c.Exec(`UPDATE counters SET n = n + 1`) //llmtoolvet:ignore same, on one line
		return Out{}, nil
	})

// A directive must stand alone: //llmtoolvet:ignored is not one.
var notSilenced = llmtool.Write("not_silenced", "",
	func(c *llmtool.WriteCtx, in In) (Out, error) {
		go c.Exec(`UPDATE counters SET n = n + 1`) //llmtoolvet:ignored // want `goroutine uses the ctx`
		return Out{}, nil
	})
