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
// once rather than on every call. The zero value is ready to use.
type Cache struct {
	ok sync.Map // query text -> struct{}
	n  atomic.Int32
}

// Check is Check for d, answered from the cache when query was accepted
// before.
func (c *Cache) Check(d Dialect, query string) *Refusal {
	if _, ok := c.ok.Load(query); ok {
		return nil
	}
	r := Check(d, query)
	if r == nil && c.n.Load() < maxCached {
		if _, loaded := c.ok.LoadOrStore(query, struct{}{}); !loaded {
			c.n.Add(1)
		}
	}
	return r
}
