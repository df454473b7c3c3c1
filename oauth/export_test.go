package oauth

import "time"

// Hooks into the package for the tests of package oauth_test.

// SetClock sets the clock of v's checks and key set. Call it before
// verifying.
func SetClock(v *Verifier, now func() time.Time) { v.now = now }

// Timings of the key set.
const (
	MinRefresh = minRefresh
	MaxKeyAge  = maxKeyAge
)
