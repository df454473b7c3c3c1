package token

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/llmtool/llmtool/internal/schema"
)

// Digest is the one short fingerprint of llmtool's tokens and answers:
// the SHA-256 of parts, each prefixed with its length ("3:abc"), its
// first 18 bytes in unpadded base64url (24 characters).
func Digest(parts ...[]byte) string {
	h := sha256.New()
	var n [20]byte
	for _, p := range parts {
		h.Write(strconv.AppendInt(n[:0], int64(len(p)), 10))
		h.Write([]byte{':'})
		h.Write(p)
	}
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0])[:18])
}

// ArgsDigest fingerprints a call's arguments independently of key order
// and spacing: the Digest of the JSON of their decoded value (numbers as
// sent, as json.Number keeps them; map keys sorted). No arguments, null
// and arguments that do not decode count as {}.
func ArgsDigest(args []byte) string {
	var v any = map[string]any{}
	if d, err := schema.DecodeArguments(args); err == nil && d != nil {
		v = d
	}
	b, _ := json.Marshal(v)
	return Digest(b)
}
