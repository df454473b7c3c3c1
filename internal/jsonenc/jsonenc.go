// Package jsonenc writes JSON as llmtool sends it, to models and over
// the wire: compact, and without encoding/json's HTML escaping, so that
// "<b>" and "&" reach a model as they are rather than as \u003c and \u0026.
//
// It is encoding/json, configured once. No fast path: the strings llmtool
// writes by hand (schemas at definition, error bodies, markers) are not
// where a call spends its time.
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
	m, _ := Marshal(s) // a string always encodes
	return append(b, m...)
}
