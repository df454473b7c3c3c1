package schema

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// Helpers shared by this package's tests and the root package's
// decoding tests.

// ValidateSeeds are argument objects the fuzz tests start from.
var ValidateSeeds = []string{
	`{}`, `{"title":"x"}`, `{"title":""}`, `{"title":"123456789"}`, `{"title":"éééééééé"}`,
	`{"title":"x","kind":"<b>"}`, `{"title":"x","kind":"\u003cb\u003e"}`, `{"title":"x","kind":"é"}`, `{"title":"x","kind":"txt"}`,
	`{"title":"x","limit":50}`, `{"title":"x","limit":51}`, `{"title":"x","limit":1.0}`, `{"title":"x","limit":5e1}`, `{"title":"x","limit":0}`,
	`{"title":"x","ratio":10}`, `{"title":"x","ratio":10.000000000000000001}`, `{"title":"x","ratio":0.49999999999999999999}`,
	`{"title":"x","ratio":1e1}`, `{"title":"x","ratio":5E-1}`, `{"title":"x","ratio":-0}`, `{"title":"x","ratio":1e400}`,
	`{"title":"x","ratio":1e10000000}`, `{"title":"x","ratio":1e-10000000}`, `{"title":"x","neg":-0.001}`, `{"title":"x","neg":-0.00009}`,
	`{"title":"x","u":255}`, `{"title":"x","u":-1}`, `{"title":"x","u":-0}`, `{"title":"x","big":9223372036854775807}`, `{"title":"x","big":9223372036854775808}`,
	`{"title":"x","tags":[{"name":"ab","score":null},{"name":"z","score":10}]}`, `{"title":"x","tags":[{"name":"AB"}]}`,
	`{"title":"x","tags":[{"name":"a","Score":1}]}`, `{"title":"x","tags":[{"name":"a","score":10.5}]}`,
	`{"title":"x","labels":["a|b","c"]}`, `{"title":"x","labels":["b"]}`, `{"title":"x","nums":[-1,1,0.5,-1.0000000000000000001]}`,
	`{"title":"x","exact":1000}`, `{"title":"x","exact":1e3}`, `{"title":"x","exact":2.50}`, `{"title":"x","exact":3}`,
	`{"title":"x","meta":{"k":1,"K":2}}`, `{"title":"x","meta":{"k":"v"}}`,
	`{"title":"x","due":"2026-01-02T15:04:05Z"}`, `{"title":"x","due":"2024-01-01T00:00:00,5Z"}`, `{"title":"x","due":"2024-01-01t00:00:00z"}`,
	`{"title":"x","due":"2016-12-31T23:59:60Z"}`, `{"title":"x","due":"2024-01-01T00:00:00.5+01:00"}`, `{"title":"x","due":"2024-02-30T00:00:00Z"}`,
	`{"title":"x","day":"2024-02-29"}`, `{"title":"x","day":"2023-02-29"}`, `{"title":"x","mail":"a@b.c"}`, `{"title":"x","mail":"nope"}`,
	`{"title":"x","parent":null}`, `{"title":"x","parent":5}`, `{"title":"x","raw":[1,{"a":2}]}`, `{"title":"x","any":1e10000000}`,
	`{"title":"x","data":"aGk="}`, `{"title":"x","data":"!!"}`, `{"title":"x","flag":"true"}`, `{"title":"x","TITLE":"y"}`,
	`{"mode":"a"}`, `{"mode":"a","MODE":"zzz"}`, `{"mode":"c"}`, `{"mode":"a","count":100}`, `{"mode":"a","count":100.0}`,
	`{"mode":"a","small":127}`, `{"mode":"a","small":128}`, `{"mode":"a","u":65536}`, `{"mode":"a","f32":1e39}`,
	`{"mode":"a","opts":{"depth":1,"tags":["x"]},"list":[{"size":2}],"meta":{"a":1}}`, `{"mode":"a","opts":{"Depth":1}}`,
	`{"mode":"a","opts":null}`, `{"mode":"a","list":[{"ſize":1}]}`,
}

// SlowForMathBig reports whether v holds a number whose exponent is large
// enough for math/big.Rat to spend milliseconds on (10^999999 has a million
// digits) yet small enough for it to try. jsonschema/v6 pays that cost on
// every such number; parseDecimal declines them, so the fast path has no
// verdict of its own to check, and the fuzzer would spend its time there.
func SlowForMathBig(v any) bool {
	switch x := v.(type) {
	case json.Number:
		_, exp, ok := strings.Cut(strings.ToLower(string(x)), "e")
		if !ok {
			return len(x) > maxDecimalExponent
		}
		exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
		return len(exp) > 4 && len(exp) <= 7
	case []any:
		for _, e := range x {
			if SlowForMathBig(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if SlowForMathBig(e) {
				return true
			}
		}
	}
	return false
}

// ReferenceDecode decodes b as a json.Decoder with UseNumber does,
// refusing anything after the value: the reference FuzzDecodeIn decodes
// with.
func ReferenceDecode(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, false // trailing data, even a lone "}" (which More does not report)
	}
	return v, true
}

// FuzzFlatIn is an In of scalar fields; the fuzz tests here and the root
// package's FuzzDecodeIn share it.
type FuzzFlatIn struct {
	Mode  string  `json:"mode" enum:"a|b"`
	Count int     `json:"count,omitempty" minimum:"0" maximum:"100"`
	Ratio float64 `json:"ratio,omitempty"`
	On    bool    `json:"on,omitempty"`
	Small int8    `json:"small,omitempty"`
	U     uint16  `json:"u,omitempty"`
	F32   float32 `json:"f32,omitempty"`
}

// FuzzOpts is a nested object of FuzzNestedIn.
type FuzzOpts struct {
	Depth int      `json:"depth,omitempty"`
	Size  int      `json:"size,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

// FuzzNestedIn is an In with nested objects, lists and maps.
type FuzzNestedIn struct {
	Mode string         `json:"mode"`
	Opts *FuzzOpts      `json:"opts,omitempty"`
	List []FuzzOpts     `json:"list,omitempty"`
	Meta map[string]int `json:"meta,omitempty"`
}
