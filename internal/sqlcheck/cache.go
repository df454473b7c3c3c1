package sqlcheck

import (
	"sync"
	"sync/atomic"
)

// maxCached bounds the statements a Cache remembers. A tool's SQL is
// mostly constant text, so a few thousand cover a large registry; text
// formatted per call is checked every time once the cache is full.
const maxCached = 4096

// Cache remembers the texts Check accepted, so a tool's SQL is scanned
// once rather than on every call, with the text to send (see
// CheckRebind). It keeps each dialect's texts apart. The zero value is
// ready to use.
type Cache struct {
	ok [Postgres + 1]sync.Map // per dialect: query text -> *accepted
	n  atomic.Int32
	// last is the last query answered from ok, per dialect: a handler
	// runs the same constant text call after call, and comparing it with
	// the last one (the same pointer, so no byte is compared) costs less
	// than hashing it.
	last [Postgres + 1]atomic.Pointer[accepted]
}

// accepted is a query the cache accepted and the text to send for it.
type accepted struct{ query, text string }

// Check is Check for d, answered from the cache when query was accepted
// before.
func (c *Cache) Check(d Dialect, query string) *Refusal {
	_, r := c.CheckRebind(d, query)
	return r
}

// CheckRebind checks query for d as Check does and returns the text to
// send to the database: for Postgres, query with SQLite's ? placeholders
// rewritten by [Rebind]; for SQLite, query itself. Both answers come from
// the cache when query was accepted before. On a refusal the text is "".
func (c *Cache) CheckRebind(d Dialect, query string) (string, *Refusal) {
	if d > Postgres {
		if r := Check(d, query); r != nil {
			return "", r
		}
		return query, nil
	}
	if a := c.last[d].Load(); a != nil && a.query == query {
		return a.text, nil
	}
	if v, ok := c.ok[d].Load(query); ok {
		a := v.(*accepted)
		c.last[d].Store(a)
		return a.text, nil
	}
	if r := Check(d, query); r != nil {
		return "", r
	}
	text := query
	if d == Postgres {
		text, _ = Rebind(query)
	}
	if c.n.Load() < maxCached {
		if _, loaded := c.ok[d].LoadOrStore(query, &accepted{query, text}); !loaded {
			c.n.Add(1)
		}
	}
	return text, nil
}
