package llmtool

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// referenceSplit is what splitObject and splitArray replace: encoding/json's
// decoder, token by token.
func referenceSplit(b []byte) (names []string, vals []json.RawMessage, elems [][]json.RawMessage, ok bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, nil, false
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, nil, nil, false
		}
		var val json.RawMessage
		if err := d.Decode(&val); err != nil {
			return nil, nil, nil, false
		}
		var items []json.RawMessage
		if val[0] == '[' {
			if err := json.Unmarshal(val, &items); err != nil {
				return nil, nil, nil, false
			}
		}
		names, vals, elems = append(names, tok.(string)), append(vals, val), append(elems, items)
	}
	return names, vals, elems, true
}

// The one-pass scanner splits every valid JSON object as encoding/json
// does: the same members, values and list elements, byte for byte.
func FuzzSplitObject(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":[]}`, `{"a":[1,2,3],"b":"x"}`,
		`{"notes":[{"id":1,"title":"a \"quoted\" ] } title"},{"id":2,"title":"\\"}],"n":null}`,
		` { "a" : [ 1 , {"b":[2,[3]]} , "c" ] , "d\u0041" : true , "e":-1.5e3 } `,
		`{"x":{"y":[1]},"z":[[],[{}]],"w":"[{"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		names, vals, elems, ok := referenceSplit(b)
		ms, got := splitObject(b)
		require.Equal(t, ok, got, "%s", b)
		if !ok {
			return
		}
		require.Len(t, ms, len(names))
		for i, m := range ms {
			require.Equal(t, names[i], m.name)
			require.Equal(t, string(vals[i]), string(m.val))
			if m.val[0] != '[' {
				continue
			}
			ends, end, ok := splitArray(m.val)
			require.True(t, ok)
			require.Equal(t, len(m.val), end)
			require.Equal(t, ends, m.ends)
			require.Len(t, ends, len(elems[i]))
			for j, e := range ends {
				// Element j ends at e, and the prefix up to it holds j+1
				// elements.
				require.True(t, bytes.HasSuffix(m.val[:e], elems[i][j]), "%s: element %d", m.val, j)
				var prefix []json.RawMessage
				require.NoError(t, json.Unmarshal(append(append([]byte(nil), m.val[:e]...), ']'), &prefix))
				require.Len(t, prefix, j+1)
			}
		}
	})
}
