package limit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/llmtool/llmtool"
)

// Rate returns a middleware that allows n calls per period for each key
// and refuses the calls beyond that at once, without waiting:
//
//	limit.Rate(30, time.Minute, limit.ByPrincipal) // 30 calls a minute per user
//
// Each key has a token bucket (golang.org/x/time/rate) that holds n tokens
// and refills at n per period, evenly: a principal that has been idle can
// make n calls in a row, then one every period/n. Any token bucket is
// expressible this way: a burst of 5 calls refilled at one call a second
// is Rate(5, 5*time.Second, key).
//
// A refused call never reaches the tool; the model reads
//
//	Too many calls; create_note was not run. Try again in 3 s.
//
// with the wait until the key's next token, rounded up to whole seconds
// (minutes from two minutes on, hours from two hours), and the audit
// records the outcome "limited". Its Result.Err wraps ErrRate. A call
// whose key is "" is not limited (see Key).
//
// Buckets live in memory, in one process; each Rate middleware has its
// own. A bucket that has refilled to n tokens is the same as a new one, so
// such buckets are dropped from time to time (at least once a period, and
// whenever their number doubled), which bounds the memory to the keys
// active in about the last period.
//
// Rate panics if n < 1, per <= 0 or key is nil.
func Rate(n int, per time.Duration, key Key) llmtool.Middleware {
	return newRater(n, per, key, time.Now).middleware
}

// minSweep is the number of buckets below which a rater sweeps only once
// a period.
const minSweep = 64

// rater keeps the buckets of one Rate middleware.
type rater struct {
	limit rate.Limit
	burst int
	per   time.Duration
	key   Key
	now   func() time.Time // time.Now; a test's clock in tests

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	swept   time.Time // the last sweep
	sweepAt int       // sweep when this many buckets exist
}

func newRater(n int, per time.Duration, key Key, now func() time.Time) *rater {
	switch {
	case n < 1:
		panic(fmt.Sprintf("limit.Rate: n is %d; allow at least 1 call per period", n))
	case per <= 0:
		panic(fmt.Sprintf("limit.Rate: the period is %v; give a positive duration such as time.Minute", per))
	case key == nil:
		panic("limit.Rate: the key is nil; pass limit.ByPrincipal, limit.ByTool or a Key of your own")
	}
	return &rater{
		limit: rate.Limit(float64(n) / per.Seconds()), burst: n, per: per, key: key, now: now,
		buckets: make(map[string]*rate.Limiter), swept: now(), sweepAt: minSweep,
	}
}

func (r *rater) middleware(next llmtool.InvokeFunc) llmtool.InvokeFunc {
	return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
		k := r.key(req)
		if k == "" {
			return next(ctx, req)
		}
		if d := r.take(k); d > 0 {
			return req.Fail(&refusal{
				shown: llmtool.Limited("Too many calls; %s was not run.", req.Spec.Name).Next("Try again in " + waitText(d) + "."),
				why:   []error{ErrRate},
			})
		}
		return next(ctx, req)
	}
}

// take takes a token from key's bucket, or, when it is empty, returns how
// long until it holds one again and takes nothing.
func (r *rater) take(key string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if len(r.buckets) >= r.sweepAt || now.Sub(r.swept) >= r.per {
		r.sweep(now)
	}
	b := r.buckets[key]
	if b == nil {
		b = rate.NewLimiter(r.limit, r.burst)
		r.buckets[key] = b
	}
	res := b.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now) // a refused call takes no token
		return d
	}
	return 0
}

// sweep drops the buckets that are full again: a new bucket would be the
// same.
func (r *rater) sweep(now time.Time) {
	full := float64(r.burst)
	for k, b := range r.buckets {
		if b.TokensAt(now) >= full {
			delete(r.buckets, k)
		}
	}
	r.swept = now
	r.sweepAt = max(minSweep, 2*len(r.buckets))
}
