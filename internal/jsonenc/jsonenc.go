// Package jsonenc writes JSON as llmtool sends it, to models and over
// the wire: compact, and without encoding/json's HTML escaping, so that
// "<b>" and "&" reach a model as they are rather than as \u003c and \u0026.
//
// It is encoding/json, configured once, with one shortcut: a string of
// printable ASCII with no quote or backslash, which encoding/json writes
// as it is between quotes, is written so without it. Chat's messages are
// built key by key (a tool result's "role", "type", "tool_use_id"...),
// and an encoding/json Encoder per string cost a dispatch about 10% of
// its time (BenchmarkDispatchRatio, Anthropic's results).
package jsonenc

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v as compact JSON without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // without Encode's newline
}

// AppendString appends s to b as a JSON string, without HTML escaping.
// Invalid UTF-8 becomes U+FFFD, as encoding/json writes it.
func AppendString(b []byte, s string) []byte {
	if verbatim(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	m, _ := Marshal(s) // a string always encodes
	return append(b, m...)
}

// verbatim reports whether encoding/json writes s as it is between
// quotes: every byte printable ASCII (0x20 to 0x7e), none a quote or a
// backslash. With HTML escaping off, nothing else in that range is
// escaped; FuzzAppendString holds it to Marshal.
func verbatim(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
