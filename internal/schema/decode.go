package schema

import (
	"bytes"
	"encoding/json"
	"errors"
)

// decodeArguments decodes a tool call's arguments with a json.Decoder with
// UseNumber (objects as map[string]any, numbers as json.Number). The text
// must be exactly one JSON value: anything after it, even a lone "}"
// (which json.Decoder.More does not report), is an error with
// encoding/json's own message, so the text json.Unmarshal then decodes
// into In is the text that was validated.
func decodeArguments(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.TrimLeft(b[d.InputOffset():], " \t\r\n")) > 0 {
		var raw json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, err // "invalid character '}' after top-level value"
		}
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}
