package chatadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/llmtool/llmtool/internal/jsonenc"
)

// The schema adapters work on JSON values that keep the order of object
// members, so a tool's parameters reach the model in declaration order (a
// map would sort them). A value is an object, an array, or a scalar kept as
// its JSON text.

type object []member

type member struct {
	key string
	val any // object, []any or json.RawMessage
}

func (o object) get(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// set replaces key's value, or appends the member if it is missing.
func (o object) set(key string, v any) object {
	for i, m := range o {
		if m.key == key {
			o[i].val = v
			return o
		}
	}
	return append(o, member{key, v})
}

// str returns key's value if it is a JSON string, else "".
func (o object) str(key string) string {
	v, _ := o.get(key)
	s, _ := stringValue(v)
	return s
}

// stringValue decodes v if it is a JSON string (a json.RawMessage in
// quotes, as parseOrdered and the wire formats give), and reports whether
// it was one. It is the package's one reader of JSON strings, as
// appendString is its one writer.
func stringValue(v any) (string, bool) {
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

// parseOrdered decodes one JSON value, keeping object members in order.
func parseOrdered(b []byte) (any, error) {
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
			var o object
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseValue(d)
				if err != nil {
					return nil, err
				}
				o = append(o, member{k.(string), v})
			}
			if o == nil {
				o = object{}
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

// appendOrdered encodes v compactly.
func appendOrdered(b []byte, v any) []byte {
	switch v := v.(type) {
	case object:
		b = append(b, '{')
		for i, m := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, m.key)
			b = append(b, ':')
			b = appendOrdered(b, m.val)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendOrdered(b, e)
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
