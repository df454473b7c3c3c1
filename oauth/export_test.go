package oauth

import "time"

// Hooks into the package for the tests of package oauth_test.

// SetClock sets the clock of v's checks and key set. Call it before
// verifying.
func SetClock(v *Verifier, now func() time.Time) { v.now = now }

// SetTimer sets how v's key set waits for a fetch put off by FetchGap
// (time.After by default), and a function called each time a request
// starts waiting for a fetch (nil for none). Call it before verifying.
func SetTimer(v *Verifier, after func(time.Duration) <-chan time.Time, waiting func()) {
	v.keys.after, v.keys.waiting = after, waiting
}

// MissedKeyIDs returns how many key IDs v's key set remembers as missing.
func MissedKeyIDs(v *Verifier) int {
	v.keys.mu.Lock()
	defer v.keys.mu.Unlock()
	return len(v.keys.missed)
}

// Timings and bounds of the key set.
const (
	MinRefresh = minRefresh
	FetchGap   = fetchGap
	MaxMissed  = maxMissed
	MaxKeyAge  = maxKeyAge
)
