package schema

import (
	"reflect"
	"strconv"
)

// fieldTags is a struct tag split once into its key:"value" pairs, so the
// dozen keyword lookups of a field do not each scan the whole tag.
// lookup answers exactly as reflect.StructTag.Lookup does (FuzzFieldTags
// holds the two together).
type fieldTags []tagPair

// tagPair is one key:"value" pair, its value still quoted.
type tagPair struct {
	name, quoted string
}

// parseTags splits tag the way reflect.StructTag.Lookup scans it,
// stopping where Lookup would stop: at the first malformed pair.
func parseTags(tag reflect.StructTag) fieldTags {
	pairs := make(fieldTags, 0, 8)
	for tag != "" {
		i := 0
		for i < len(tag) && tag[i] == ' ' {
			i++
		}
		tag = tag[i:]
		if tag == "" {
			break
		}
		i = 0
		for i < len(tag) && tag[i] > ' ' && tag[i] != ':' && tag[i] != '"' && tag[i] != 0x7f {
			i++
		}
		if i == 0 || i+1 >= len(tag) || tag[i] != ':' || tag[i+1] != '"' {
			break
		}
		name := string(tag[:i])
		tag = tag[i+1:]
		i = 1
		for i < len(tag) && tag[i] != '"' {
			if tag[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(tag) {
			break
		}
		pairs = append(pairs, tagPair{name: name, quoted: string(tag[:i+1])})
		tag = tag[i+1:]
	}
	return pairs
}

// lookup returns the value of key, as reflect.StructTag.Lookup does: the
// first pair named key decides, and a value that does not unquote is
// absent.
func (ts fieldTags) lookup(key string) (string, bool) {
	for _, p := range ts {
		if p.name == key {
			v, err := strconv.Unquote(p.quoted)
			if err != nil {
				return "", false
			}
			return v, true
		}
	}
	return "", false
}
