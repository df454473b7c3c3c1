package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeArguments decodes a tool call's arguments as a json.Decoder with
// UseNumber does, with fastDecode first. The text must be exactly one JSON
// value: anything after it, even a lone "}" (which json.Decoder.More does
// not report), is an error with encoding/json's own message, so a flat In
// (filled from the decoded value) and a nested one (decoded by
// json.Unmarshal) refuse the same texts.
func decodeArguments(b []byte) (any, error) {
	if v, ok := fastDecode(b); ok {
		return v, nil
	}
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

// fastDecode decodes a JSON value the way a json.Decoder with UseNumber
// does (objects as map[string]any, arrays as []any, numbers as
// json.Number), with fewer allocations, for the small argument objects of
// tool calls. It reports false for anything it does not handle exactly as
// encoding/json would (invalid JSON, invalid UTF-8, deep nesting, trailing
// data); callers then decode with encoding/json, whose result and errors
// are the reference.
func fastDecode(b []byte) (any, bool) {
	d := decoder{b: b}
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.b)
}

type decoder struct {
	b []byte
	i int
}

const fastDecodeMaxDepth = 64

func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, bool) {
	d.space()
	if d.i >= len(d.b) || depth > fastDecodeMaxDepth {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case d.literal("true"):
		return true, true
	case d.literal("false"):
		return false, true
	case d.literal("null"):
		return nil, true
	}
	return nil, false
}

func (d *decoder) literal(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

func (d *decoder) object(depth int) (any, bool) {
	d.i++ // {
	m := make(map[string]any)
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k.(string)] = v
		d.space()
		if d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *decoder) array(depth int) (any, bool) {
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

func (d *decoder) number() (any, bool) {
	t, ok := d.numberText()
	if !ok {
		return nil, false
	}
	return json.Number(t), true
}

// numberText scans a number, returning its text.
func (d *decoder) numberText() ([]byte, bool) {
	start := d.i
	b := d.b
	i := d.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		n := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == n {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		n := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == n {
			return nil, false
		}
	}
	d.i = i
	return b[start:i], true
}

// plainString scans a string without escapes, returning its content; it
// declines escapes, control characters and invalid UTF-8.
func (d *decoder) plainString() ([]byte, bool) {
	d.i++ // "
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
			d.i++
		default:
			d.i++
		}
	}
	return nil, false
}

// string decodes a string; it declines invalid UTF-8 and lone surrogates,
// which encoding/json replaces with U+FFFD.
func (d *decoder) string() (any, bool) {
	d.i++ // "
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !utf8.Valid(s) {
				return nil, false
			}
			return string(s), true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return nil, false
		default:
			d.i++
		}
	}
	return nil, false
}

func (d *decoder) escaped(start int) (any, bool) {
	out := make([]byte, 0, d.i-start+16)
	out = append(out, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return nil, false
			}
			return string(out), true
		case c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return nil, false
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, false
			}
			if utf16.IsSurrogate(r) {
				if d.i+1 >= len(d.b) || d.b[d.i] != '\\' || d.b[d.i+1] != 'u' {
					return nil, false
				}
				d.i += 2
				r2, ok := d.hex4()
				if !ok {
					return nil, false
				}
				r = utf16.DecodeRune(r, r2)
				if r == utf8.RuneError {
					return nil, false
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return nil, false
}

func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}
