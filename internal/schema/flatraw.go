package schema

import (
	"reflect"
	"strconv"
	"unsafe"
)

// Arguments of a flat In, checked and decoded straight from their JSON
// text: no map of decoded values, no boxed scalars. CheckFlat decides
// what validate would decide for the common case (a plain object whose
// keys each name a property, once, with unescaped strings), and declines
// anything else, which then takes the map path (decodeArguments, DropNulls,
// validate), whose verdicts and messages are the reference. FillFlatRaw
// then sets In's fields from the same text. FuzzCheckFlat holds both to
// the map path.

// maxRawMembers bounds the members of an object CheckFlat decides.
const maxRawMembers = 16

// rawMember is one member of an argument object: the property it names
// (an index into root.props, and so into fields) and its value.
type rawMember struct {
	prop int
	kind byte   // '"' a string, '0' a number, 't' true, 'f' false, 'n' null
	text []byte // a string's content (it has no escapes) or a number's text
}

// prepareRawFlat decides whether flat arguments can be checked and decoded
// from their text: a flat In whose inferred root is a plain object.
func (cs *compiledSchema) prepareRawFlat() {
	r := cs.root
	cs.rawFlat = cs.flat && !cs.verbatim && r != nil && !r.any && r.enum == nil &&
		r.is("object") && r.additional == nil && len(r.props) <= 64 && len(cs.fields) == len(r.props)
}

// CheckFlat reports whether raw, a JSON object, is valid arguments for a
// flat In, and which top-level defaults it lacks (as MissingDefaults does
// for the decoded value); ok is false when raw is not valid or not a case
// it decides (escapes in a string, an unknown or repeated key, a null a
// property takes, more than maxRawMembers members): validate the decoded
// value instead.
func (cs *compiledSchema) CheckFlat(raw []byte) (fill uint64, ok bool) {
	if !cs.rawFlat {
		return 0, false
	}
	var ms [maxRawMembers]rawMember
	n, ok := cs.scanFlat(raw, &ms)
	if !ok {
		return 0, false
	}
	props := cs.root.props
	var present uint64
	for _, m := range ms[:n] {
		p := props[m.prop].schema
		switch m.kind {
		case 'n':
			// A null of an optional property that does not take null
			// means absent (DropNulls); any other null is left to the
			// map path.
			if props[m.prop].required || p.any || p.is("null") {
				return 0, false
			}
			continue
		case '"':
			if !p.acceptsText(bytesString(m.text)) {
				return 0, false
			}
		case '0':
			if !p.acceptsNumberText(bytesString(m.text)) {
				return 0, false
			}
		default:
			if !p.acceptsBool(m.kind == 't') {
				return 0, false
			}
		}
		present |= 1 << m.prop
	}
	for i, p := range props {
		if p.required && present&(1<<i) == 0 {
			return 0, false
		}
	}
	for i, d := range cs.defaults {
		if present&(1<<d.prop) == 0 {
			fill |= 1 << i
		}
	}
	return fill, true
}

// FillFlatRaw sets the fields of in (a pointer to a flat In) from raw,
// arguments CheckFlat accepted, as json.Unmarshal would. It reports false,
// having possibly set some fields, when a value needs encoding/json's own
// handling (a number out of the field's range, say); decode the JSON
// instead, which sets every field FillFlatRaw set.
func (cs *compiledSchema) FillFlatRaw(in any, raw []byte) bool {
	if !cs.rawFlat {
		return false
	}
	var ms [maxRawMembers]rawMember
	n, ok := cs.scanFlat(raw, &ms)
	if !ok {
		return false
	}
	v := reflect.ValueOf(in).Elem()
	for _, m := range ms[:n] {
		if m.kind == 'n' {
			continue
		}
		f := cs.fields[m.prop]
		fv := v.FieldByIndex(f.index)
		switch f.kind {
		case reflect.String:
			if m.kind != '"' {
				return false
			}
			fv.SetString(string(m.text))
		case reflect.Bool:
			if m.kind != 't' && m.kind != 'f' {
				return false
			}
			fv.SetBool(m.kind == 't')
		default:
			if m.kind != '0' {
				return false
			}
			s := bytesString(m.text)
			switch f.kind {
			case reflect.Float32, reflect.Float64:
				x, err := strconv.ParseFloat(s, f.bits)
				if err != nil {
					return false
				}
				fv.SetFloat(x)
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				x, err := strconv.ParseUint(s, 10, f.bits)
				if err != nil {
					return false
				}
				fv.SetUint(x)
			default:
				x, err := strconv.ParseInt(s, 10, f.bits)
				if err != nil {
					return false
				}
				fv.SetInt(x)
			}
		}
	}
	return true
}

// scanFlat splits raw, one JSON object and nothing after it, into its
// members, each naming a property of the root once, with values that are
// strings without escapes, numbers, true, false or null. It reports false
// for anything else.
func (cs *compiledSchema) scanFlat(raw []byte, ms *[maxRawMembers]rawMember) (n int, ok bool) {
	d := decoder{b: raw}
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return 0, false
	}
	d.i++
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		d.space()
		return 0, d.i == len(d.b)
	}
	var seen uint64
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' || n == maxRawMembers {
			return 0, false
		}
		key, ok := d.plainString()
		if !ok {
			return 0, false
		}
		p := cs.root.propIndex(key)
		if p < 0 || seen&(1<<p) != 0 {
			return 0, false
		}
		seen |= 1 << p
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return 0, false
		}
		d.i++
		d.space()
		if d.i >= len(d.b) {
			return 0, false
		}
		m := &ms[n]
		n++
		m.prop, m.text = p, nil
		switch c := d.b[d.i]; {
		case c == '"':
			m.kind = '"'
			m.text, ok = d.plainString()
		case c == '-' || (c >= '0' && c <= '9'):
			m.kind = '0'
			m.text, ok = d.numberText()
		case d.literal("true"):
			m.kind = 't'
		case d.literal("false"):
			m.kind = 'f'
		case d.literal("null"):
			m.kind = 'n'
		default:
			ok = false
		}
		if !ok {
			return 0, false
		}
		d.space()
		if d.i >= len(d.b) {
			return 0, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			d.space()
			return n, d.i == len(d.b)
		default:
			return 0, false
		}
	}
}

// propIndex returns the index of the property named key, exactly, or -1.
func (n *schemaNode) propIndex(key []byte) int {
	for i, p := range n.props {
		if p.name == string(key) {
			return i
		}
	}
	return -1
}

// bytesString returns b's bytes as a string without copying them, for a
// check that keeps nothing of it; b must not change while it is used.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
