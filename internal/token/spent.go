package token

import (
	"sync"
	"time"
)

// Spent remembers the nonces of the tokens a process accepted until they
// expire, so each is accepted once. It is per process: a kind whose
// tokens other replicas honour records them elsewhere too (the approval's
// llmtool_approvals table). The zero value is ready to use.
type Spent struct {
	mu    sync.Mutex
	until map[int64]int64 // nonce → the token's expiry (Unix seconds)
	swept int64           // when expired nonces were last forgotten
}

// Spend records nonce as used until exp (Unix seconds) and reports false
// if it was already.
func (s *Spent) Spend(nonce, exp int64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.until == nil {
		s.until = make(map[int64]int64)
	}
	if t := now.Unix(); t-s.swept >= 60 {
		// An expired token is refused as expired: forget it.
		for n, e := range s.until {
			if e < t {
				delete(s.until, n)
			}
		}
		s.swept = t
	}
	if _, used := s.until[nonce]; used {
		return false
	}
	s.until[nonce] = exp
	return true
}

// Forget forgets a nonce whose use did not happen (a commit that failed).
func (s *Spent) Forget(nonce int64) {
	s.mu.Lock()
	delete(s.until, nonce)
	s.mu.Unlock()
}
