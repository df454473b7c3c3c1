// Package ordered reads and writes JSON values that keep the order of
// object members, for chatadapter and its run package.
package ordered

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/llmtool/llmtool/internal/jsonenc"
)

// The schema adapters work on JSON values that keep the order of Object
// members, so a tool's parameters reach the model in declaration order (a
// map would sort them). A value is an Object, an array, or a scalar kept as
// its JSON text.

type Object []Member

// Member is an alias of an unnamed struct, so that the packages using it
// write a member as {key, value}.
type Member = struct {
	Key string
	Val any // Object, []any or json.RawMessage
}

func (o Object) Get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Val, true
		}
	}
	return nil, false
}

// Set replaces key's value, or appends the Member if it is missing.
func (o Object) Set(key string, v any) Object {
	for i, m := range o {
		if m.Key == key {
			o[i].Val = v
			return o
		}
	}
	return append(o, Member{key, v})
}

// Str returns key's value if it is a JSON string, else "".
func (o Object) Str(key string) string {
	v, _ := o.Get(key)
	s, _ := String(v)
	return s
}

// String decodes v if it is a JSON string (a json.RawMessage in
// quotes, as Parse and the wire formats give), and reports whether
// it was one. It is the package's one reader of JSON strings, as
// appendString is its one writer.
func String(v any) (string, bool) {
	r, ok := v.(json.RawMessage)
	r = bytes.TrimSpace(r)
	if !ok || len(r) == 0 || r[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(r, &s) != nil {
		return "", false
	}
	return s, true
}

// Parse decodes one JSON value, keeping Object members in order.
func Parse(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := parseValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func parseValue(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			var o Object
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseValue(d)
				if err != nil {
					return nil, err
				}
				o = append(o, Member{k.(string), v})
			}
			if o == nil {
				o = Object{}
			}
			_, err := d.Token()
			return o, err
		case '[':
			a := []any{}
			for d.More() {
				v, err := parseValue(d)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := d.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return json.RawMessage(t.String()), nil
	default:
		b, err := jsonenc.Marshal(t)
		return json.RawMessage(b), err
	}
}

// Append encodes v compactly.
func Append(b []byte, v any) []byte {
	switch v := v.(type) {
	case Object:
		b = append(b, '{')
		for i, m := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, m.Key)
			b = append(b, ':')
			b = Append(b, m.Val)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = Append(b, e)
		}
		return append(b, ']')
	case json.RawMessage:
		return append(b, v...)
	case string:
		return jsonenc.AppendString(b, v)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case nil:
		return append(b, "null"...)
	}
	m, err := jsonenc.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("chatadapter: cannot encode %T: %v", v, err))
	}
	return append(b, m...)
}

// Excerpt returns the start of b on one line, at most n bytes.
func Excerpt(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > n {
		s = s[:n]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}

// Array is ms as an array value, for Append.
func Array(ms []json.RawMessage) []any {
	a := make([]any, len(ms))
	for i, m := range ms {
		a[i] = m
	}
	return a
}
