package llmtool

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// A result whose Out is a flat struct (exported fields of string, bool,
// integer and float kinds, no custom encoding) is encoded by flatOut,
// which reads the fields at their offsets and appends the JSON that
// encoding/json would write (compact, without HTML escaping): no
// reflection per call, no boxing of Out. A value it does not write the
// same way (a string that needs escapes, a NaN) falls back to
// encoding/json. FuzzFlatOut holds the two to the same bytes.

// flatOut encodes one flat struct type.
type flatOut struct {
	fields []outField
	size   atomic.Int32 // the last result's length, to size the next one's buffer
}

// outField is one field: its member's text up to the value (`"name":`),
// its offset and kind, and whether an empty value is left out.
type outField struct {
	key  string
	off  uintptr
	kind reflect.Kind
	omit bool // omitempty or omitzero: the zero value (for floats also -0) is left out
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// newFlatOut returns the encoder of t, or nil when t is not a flat struct
// it encodes exactly as encoding/json does.
func newFlatOut(t reflect.Type) *flatOut {
	if t.Kind() != reflect.Struct || marshals(t) {
		return nil
	}
	e := &flatOut{}
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil // embedded fields: encoding/json's promotion rules
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if !plainName(name) || seen[name] {
			return nil // names encoding/json would escape, drop or let collide
		}
		seen[name] = true
		of := outField{key: `"` + name + `":`, off: f.Offset, kind: f.Type.Kind()}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty", "omitzero":
				of.omit = true
			case "string":
				return nil
			}
		}
		if marshals(f.Type) || (of.omit && hasIsZero(f.Type)) {
			return nil
		}
		switch of.kind {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64:
		default:
			return nil
		}
		e.fields = append(e.fields, of)
	}
	return e
}

// marshals reports whether t or *t encodes itself.
func marshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshalerType) || p.Implements(jsonMarshalerType) ||
		t.Implements(textMarshalerType) || p.Implements(textMarshalerType)
}

// hasIsZero reports whether t has an IsZero method, which omitzero calls.
func hasIsZero(t reflect.Type) bool {
	_, ok := t.MethodByName("IsZero")
	_, okp := reflect.PointerTo(t).MethodByName("IsZero")
	return ok || okp
}

// plainName reports whether a JSON name needs no escaping and is one
// encoding/json accepts as written.
func plainName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

// encode returns the JSON of the struct at p, or false when a value
// needs encoding/json.
func (e *flatOut) encode(p unsafe.Pointer) ([]byte, bool) {
	b, ok := e.append(make([]byte, 0, max(int(e.size.Load()), 32)), p)
	if !ok {
		return nil, false
	}
	e.size.Store(int32(min(len(b), 1<<20)))
	return b, true
}

// append appends the JSON of the struct at p, reporting false when a
// value needs encoding/json (append's output is then to be discarded).
func (e *flatOut) append(b []byte, p unsafe.Pointer) ([]byte, bool) {
	b = append(b, '{')
	first := true
	for i := range e.fields {
		f := &e.fields[i]
		fp := unsafe.Add(p, f.off)
		var (
			s     string
			n     int64
			u     uint64
			x     float64
			isInt bool
			isU   bool
			isF   bool
			bits  = 64
		)
		switch f.kind {
		case reflect.String:
			s = *(*string)(fp)
			if f.omit && s == "" {
				continue
			}
			if !plainString(s) {
				return b, false
			}
		case reflect.Bool:
			if !*(*bool)(fp) {
				if f.omit {
					continue
				}
				s = "false"
			} else {
				s = "true"
			}
		case reflect.Int:
			n, isInt = int64(*(*int)(fp)), true
		case reflect.Int8:
			n, isInt = int64(*(*int8)(fp)), true
		case reflect.Int16:
			n, isInt = int64(*(*int16)(fp)), true
		case reflect.Int32:
			n, isInt = int64(*(*int32)(fp)), true
		case reflect.Int64:
			n, isInt = *(*int64)(fp), true
		case reflect.Uint:
			u, isU = uint64(*(*uint)(fp)), true
		case reflect.Uint8:
			u, isU = uint64(*(*uint8)(fp)), true
		case reflect.Uint16:
			u, isU = uint64(*(*uint16)(fp)), true
		case reflect.Uint32:
			u, isU = uint64(*(*uint32)(fp)), true
		case reflect.Uint64:
			u, isU = *(*uint64)(fp), true
		case reflect.Uintptr:
			u, isU = uint64(*(*uintptr)(fp)), true
		case reflect.Float32:
			x, isF, bits = float64(*(*float32)(fp)), true, 32
		case reflect.Float64:
			x, isF = *(*float64)(fp), true
		}
		switch {
		case isInt && f.omit && n == 0, isU && f.omit && u == 0, isF && f.omit && x == 0:
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.key...)
		switch {
		case isInt:
			b = strconv.AppendInt(b, n, 10)
		case isU:
			b = strconv.AppendUint(b, u, 10)
		case isF:
			var ok bool
			if b, ok = appendFloat(b, x, bits); !ok {
				return b, false
			}
		case f.kind == reflect.String:
			b = append(b, '"')
			b = append(b, s...)
			b = append(b, '"')
		default:
			b = append(b, s...)
		}
	}
	return append(b, '}'), true
}

// plainString reports whether encoding/json (without HTML escaping)
// writes s as it is: no quote, backslash or control character, valid
// UTF-8 and neither U+2028 nor U+2029, which it escapes.
func plainString(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || (utf8.ValidString(s) && !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029"))
}

// appendFloat appends f as encoding/json does, reporting false for a NaN
// or an infinity, which it refuses.
func appendFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
