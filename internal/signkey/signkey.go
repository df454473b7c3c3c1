// Package signkey holds the one rule for the keys llmtool signs with
// (HMAC-SHA256, internal/token): llmtool.Options.ApprovalKey, which signs
// approval tokens, mcpadapter.Options.RequestStateKey, which signs the
// requestState of input-required results, and chatadapter.Options.SealKey,
// which seals saved paused turns.
package signkey

import "fmt"

// MinLen is the length, in bytes, of the shortest key accepted. A key much
// shorter can be found by trying every value against one token it signed,
// and then signs whatever its finder likes.
const MinLen = 16

// Check returns an error naming option (such as "llmtool:
// Options.ApprovalKey") when key is set but shorter than MinLen. An empty
// key passes: its owner then signs with 32 random bytes of its own.
func Check(option string, key []byte) error {
	if n := len(key); n > 0 && n < MinLen {
		return fmt.Errorf("%s is too short (%d of at least %d bytes): a short key is found by trying every value against one token it signed; make one of 32 random bytes (crypto/rand.Read), kept secret and the same on every replica",
			option, n, MinLen)
	}
	return nil
}
