package schema

import (
	"strconv"

	"github.com/llmtool/llmtool/internal/jsonenc"
)

// Writing the schema document.

// appendJSON writes n as JSON Schema, keywords in a fixed order and
// properties in declaration order.
func (n *schemaNode) appendJSON(b []byte) []byte {
	if n.any {
		if n.description == "" {
			return append(b, "{}"...)
		}
		b = append(b, `{"description":`...)
		b = jsonenc.AppendString(b, n.description)
		return append(b, '}')
	}
	b = append(b, '{')
	switch len(n.types) {
	case 0:
	case 1:
		b = append(b, `"type":`...)
		b = jsonenc.AppendString(b, n.types[0])
	default:
		b = append(b, `"type":[`...)
		for i, t := range n.types {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, t)
		}
		b = append(b, ']')
	}
	str := func(key, v string) {
		if v != "" {
			b = append(b, `,"`...)
			b = append(b, key...)
			b = append(b, `":`...)
			b = jsonenc.AppendString(b, v)
		}
	}
	num := func(key, v string) {
		if v != "" {
			b = append(b, `,"`...)
			b = append(b, key...)
			b = append(b, `":`...)
			b = append(b, v...)
		}
	}
	str("format", n.format)
	str("contentEncoding", n.encoding)
	str("description", n.description)
	if n.def != nil {
		b = append(b, `,"default":`...)
		b = append(b, n.def...)
	}
	if n.enum != nil {
		b = append(b, `,"enum":[`...)
		for i, e := range n.enum {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e...)
		}
		b = append(b, ']')
	}
	num("minimum", n.minimum)
	num("maximum", n.maximum)
	if n.minLength >= 0 {
		num("minLength", strconv.Itoa(n.minLength))
	}
	if n.maxLength >= 0 {
		num("maxLength", strconv.Itoa(n.maxLength))
	}
	str("pattern", n.pattern)
	if n.items != nil {
		b = append(b, `,"items":`...)
		b = n.items.appendJSON(b)
	}
	if n.is("object") && n.additional == nil {
		b = append(b, `,"properties":{`...)
		for i, p := range n.props {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, p.name)
			b = append(b, ':')
			b = p.schema.appendJSON(b)
		}
		b = append(b, '}')
		req := false
		for _, p := range n.props {
			if p.required {
				if !req {
					b = append(b, `,"required":[`...)
					req = true
				} else {
					b = append(b, ',')
				}
				b = jsonenc.AppendString(b, p.name)
			}
		}
		if req {
			b = append(b, ']')
		}
	}
	if n.additional != nil {
		b = append(b, `,"additionalProperties":`...)
		b = n.additional.appendJSON(b)
	} else if n.closed {
		b = append(b, `,"additionalProperties":false`...)
	}
	return append(b, '}')
}
