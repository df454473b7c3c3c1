package llmtool

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/llmtool/llmtool/internal/schema"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeIn: whatever the arguments pass, a handler's In holds exactly
// what the schema's keys name. Its seeds run in every go test:
//
//	go test -run '^$' -fuzz '^FuzzDecodeIn$' -fuzztime 3m .

// fuzzInTools defines, for the flat and the nested In, a tool with the
// inferred schema and one with a supplied schema that constrains nothing
// about keys (no additionalProperties anywhere), so only llmtool's own
// exact-key check keeps case variants out.
var fuzzInTools = []*Tool{
	Read("fuzz_flat", "d", echoIn[schema.FuzzFlatIn]),
	Read("fuzz_flat_supplied", "d", echoIn[schema.FuzzFlatIn], InputSchema(json.RawMessage(`{"type":"object",`+
		`"properties":{"mode":{"enum":["a","b"]},"count":{},"ratio":{},"on":{},"small":{},"u":{},"f32":{}},"required":["mode"]}`))),
	Read("fuzz_nested", "d", echoIn[schema.FuzzNestedIn]),
	Read("fuzz_nested_supplied", "d", echoIn[schema.FuzzNestedIn], InputSchema(json.RawMessage(`{"type":"object",`+
		`"properties":{"mode":{"type":"string"},"opts":{},"list":{},"meta":{}},"required":["mode"]}`))),
}

func echoIn[In any](_ *ReadCtx, in In) (struct{}, error) { return struct{}{}, nil }

func FuzzDecodeIn(f *testing.F) {
	for _, s := range schema.ValidateSeeds {
		for i := range fuzzInTools {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(checkDecodeIn)
}

func TestDecodeInSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range schema.ValidateSeeds {
		for i := range fuzzInTools {
			checkDecodeIn(t, uint8(i), []byte(s))
		}
	}
}

// checkDecodeIn: whatever the arguments pass, the handler's In holds
// exactly what encoding/json decodes from the keys the struct names, as
// spelled; never a value from a key that differs in case.
func checkDecodeIn(t *testing.T, sel uint8, data []byte) {
	tool := fuzzInTools[int(sel)%len(fuzzInTools)]
	if len(data) > 0 && data[0] == '"' {
		return // an object sent as a JSON string: prepare unwraps it, a path of its own
	}
	if v, err := schema.DecodeArguments(data); err == nil && schema.SlowForMathBig(v) {
		return
	}
	args, fill, err := tool.prepare(data)
	if err != nil {
		return
	}
	got, gotErr := decodeInLikeCall(tool, args, fill)
	want, wantErr := decodeExactKeys(tool, data)
	if wantErr != nil || gotErr != nil {
		require.Equal(t, wantErr != nil, gotErr != nil, "call path %v, reference %v, for %s", gotErr, wantErr, data)
		return
	}
	require.Equal(t, want, got, "for %s", data)
}

// decodeInLikeCall fills a fresh In as a call does (callState.decodeIn).
func decodeInLikeCall(tool *Tool, args []byte, fill uint64) (any, error) {
	in := newIn(tool)
	cs := callState{tool: tool, fill: fill}
	if err := cs.decodeIn(args, in); err != nil {
		return nil, err
	}
	return reflect.ValueOf(in).Elem().Interface(), nil
}

// decodeExactKeys is the reference: keep only the keys each struct names,
// as spelled (and drop nulls of optional fields, which mean absent), then
// let encoding/json decode what is left, where every key has an exact match.
func decodeExactKeys(tool *Tool, data []byte) (any, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		data = []byte("{}") // missing arguments mean {}
	}
	v, ok := schema.ReferenceDecode(data)
	if !ok {
		return nil, errors.New("not one JSON value")
	}
	if v == nil {
		v = map[string]any{}
	}
	b, err := json.Marshal(tool.in.Root().ExactKeysOnly(v))
	if err != nil {
		return nil, err
	}
	in := newIn(tool)
	if err := json.Unmarshal(b, in); err != nil {
		return nil, err
	}
	return reflect.ValueOf(in).Elem().Interface(), nil
}

// newIn returns a pointer to a fresh value of tool's In.
func newIn(tool *Tool) any {
	switch tool.spec.Name {
	case "fuzz_flat", "fuzz_flat_supplied":
		return new(schema.FuzzFlatIn)
	case "fuzz_nested", "fuzz_nested_supplied":
		return new(schema.FuzzNestedIn)
	}
	panic("newIn: unknown tool " + tool.spec.Name)
}
