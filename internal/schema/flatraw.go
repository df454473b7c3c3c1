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

// rawMember is one member of an argument object: the property it names
// (an index into root.props, and so into fields) and its value.
type rawMember struct {
	prop int
	kind byte   // '"' a string, '0' a number, 't' true, 'f' false, 'n' null
	text []byte // a string's content (it has no escapes) or a number's text
}

// flatScanner reads the members of one JSON object, each naming a
// property of root once, with values that are strings without escapes,
// numbers, true, false or null, and nothing after the object. next
// reports false at the end, and ok false for anything else.
type flatScanner struct {
	d     decoder
	root  *schemaNode
	seen  uint64
	state byte // 0 before '{', 1 in the object, 2 done
}

// prepareRawFlat decides whether flat arguments can be checked and decoded
// from their text: a flat In whose inferred root is a plain object.
func (cs *compiledSchema) prepareRawFlat() {
	r := cs.root
	cs.rawFlat = cs.flat && !cs.verbatim && r != nil && !r.any && r.enum == nil &&
		r.is("object") && r.additional == nil && len(r.props) <= 64 && len(cs.fields) == len(r.props)
	for _, f := range cs.fields {
		if f.off == ^uintptr(0) {
			cs.rawFlat = false
		}
	}
	for i, p := range r.props {
		if p.required && i < 64 {
			cs.required |= 1 << i
		}
	}
}

// CheckFlat reports whether raw, a JSON object, is valid arguments for a
// flat In, and which top-level defaults it lacks (as MissingDefaults does
// for the decoded value); ok is false when raw is not valid or not a case
// it decides (escapes in a string, an unknown or repeated key, a null a
// property takes): validate the decoded value instead.
func (cs *compiledSchema) CheckFlat(raw []byte) (fill uint64, ok bool) {
	if !cs.rawFlat {
		return 0, false
	}
	props := cs.root.props
	var present uint64
	sc := flatScanner{d: decoder{b: raw}, root: cs.root}
	for {
		m, more, ok := sc.next()
		if !ok {
			return 0, false
		}
		if !more {
			break
		}
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
	if present&cs.required != cs.required {
		return 0, false
	}
	for i, d := range cs.defaults {
		if present&(1<<d.prop) == 0 {
			fill |= 1 << i
		}
	}
	return fill, true
}

// RawFlat reports whether CheckFlat and FillFlatRaw apply to In.
func (cs *compiledSchema) RawFlat() bool { return cs.rawFlat }

// FillFlatRaw sets the fields of the In at p (an In of the type the
// schema was inferred from) from raw, arguments CheckFlat accepted, as
// json.Unmarshal would, and then the defaults in fill. It reports false,
// having possibly set some fields, when a value needs encoding/json's own
// handling (a number out of the field's range, say); decode the JSON into
// a fresh In instead.
func (cs *compiledSchema) FillFlatRaw(p unsafe.Pointer, raw []byte, fill uint64) bool {
	if !cs.rawFlat {
		return false
	}
	sc := flatScanner{d: decoder{b: raw}, root: cs.root}
	for {
		m, more, ok := sc.next()
		if !ok {
			return false
		}
		if !more {
			break
		}
		if m.kind == 'n' {
			continue
		}
		f := &cs.fields[m.prop]
		if !setScalar(unsafe.Add(p, f.off), f, m) {
			return false
		}
	}
	for i, d := range cs.defaults {
		if fill&(1<<i) != 0 {
			f := &cs.fields[d.prop]
			setValue(unsafe.Add(p, f.off), f.kind, d.value)
		}
	}
	return true
}

// setScalar sets the field f at p from m, as json.Unmarshal would.
func setScalar(p unsafe.Pointer, f *flatField, m rawMember) bool {
	switch f.kind {
	case reflect.String:
		if m.kind != '"' {
			return false
		}
		*(*string)(p) = string(m.text)
		return true
	case reflect.Bool:
		if m.kind != 't' && m.kind != 'f' {
			return false
		}
		*(*bool)(p) = m.kind == 't'
		return true
	}
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
		if f.kind == reflect.Float32 {
			*(*float32)(p) = float32(x)
		} else {
			*(*float64)(p) = x
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x, err := strconv.ParseUint(s, 10, f.bits)
		if err != nil {
			return false
		}
		setUint(p, f.kind, x)
	default:
		x, err := strconv.ParseInt(s, 10, f.bits)
		if err != nil {
			return false
		}
		setInt(p, f.kind, x)
	}
	return true
}

func setInt(p unsafe.Pointer, k reflect.Kind, x int64) {
	switch k {
	case reflect.Int:
		*(*int)(p) = int(x)
	case reflect.Int8:
		*(*int8)(p) = int8(x)
	case reflect.Int16:
		*(*int16)(p) = int16(x)
	case reflect.Int32:
		*(*int32)(p) = int32(x)
	case reflect.Int64:
		*(*int64)(p) = x
	}
}

func setUint(p unsafe.Pointer, k reflect.Kind, x uint64) {
	switch k {
	case reflect.Uint:
		*(*uint)(p) = uint(x)
	case reflect.Uint8:
		*(*uint8)(p) = uint8(x)
	case reflect.Uint16:
		*(*uint16)(p) = uint16(x)
	case reflect.Uint32:
		*(*uint32)(p) = uint32(x)
	case reflect.Uint64:
		*(*uint64)(p) = x
	}
}

// setValue sets the scalar field of kind k at p to v, a value of the
// field's type.
func setValue(p unsafe.Pointer, k reflect.Kind, v reflect.Value) {
	switch k {
	case reflect.String:
		*(*string)(p) = v.String()
	case reflect.Bool:
		*(*bool)(p) = v.Bool()
	case reflect.Float32:
		*(*float32)(p) = float32(v.Float())
	case reflect.Float64:
		*(*float64)(p) = v.Float()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		setUint(p, k, v.Uint())
	default:
		setInt(p, k, v.Int())
	}
}

// next returns the next member; more is false after the last.
func (sc *flatScanner) next() (m rawMember, more, ok bool) {
	d := &sc.d
	switch sc.state {
	case 0:
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '{' {
			return m, false, false
		}
		d.i++
		d.space()
		sc.state = 1
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return sc.end()
		}
	case 1:
		d.space()
		if d.i >= len(d.b) {
			return m, false, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return sc.end()
		default:
			return m, false, false
		}
	default:
		return m, false, false
	}
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return m, false, false
	}
	key, ok := d.plainString()
	if !ok {
		return m, false, false
	}
	p := sc.root.propIndex(key)
	if p < 0 || sc.seen&(1<<p) != 0 {
		return m, false, false
	}
	sc.seen |= 1 << p
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != ':' {
		return m, false, false
	}
	d.i++
	d.space()
	if d.i >= len(d.b) {
		return m, false, false
	}
	m.prop = p
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
	return m, ok, ok
}

// end finishes the object: nothing but space may follow.
func (sc *flatScanner) end() (m rawMember, more, ok bool) {
	sc.state = 2
	sc.d.space()
	return m, false, sc.d.i == len(sc.d.b)
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
