package llmtool_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

type listLeaf struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

type listMid struct {
	Leaf   listLeaf            `json:"leaf"`
	Leaves []listLeaf          `json:"leaves"`
	Ptr    *listLeaf           `json:"ptr"`
	ByName map[string][]string `json:"byName"`
}

type listsOut struct {
	IDs      []int     `json:"ids"`
	Mid      listMid   `json:"mid"`
	Mids     []listMid `json:"mids"`
	MidPtr   *listMid  `json:"midPtr"`
	Maybe    *[]string `json:"maybe"`
	Skip     []int     `json:"skip,omitempty"`
	SkipZero []int     `json:"skipZero,omitzero"`
	Data     []byte    `json:"data"`
}

type listsIn struct {
	Case string `json:"case" enum:"zero|deep|full"`
}

var listsTool = llmtool.Read("lists", "Return lists, some nil.",
	func(_ *llmtool.ReadCtx, in listsIn) (listsOut, error) {
		switch in.Case {
		case "deep":
			return listsOut{
				Mid:    listMid{Leaves: []listLeaf{{Name: "a"}}, Ptr: &listLeaf{Name: "p"}, ByName: map[string][]string{"x": nil}},
				Mids:   []listMid{{}},
				MidPtr: &listMid{Leaf: listLeaf{Name: "q"}},
				Maybe:  new([]string),
			}, nil
		case "full":
			return listsOut{IDs: []int{1}, Mid: listMid{Leaf: listLeaf{Tags: []string{"t"}}, Leaves: []listLeaf{}, ByName: map[string][]string{}},
				Mids: []listMid{}, Maybe: &[]string{"m"}, Skip: []int{2}, SkipZero: []int{}, Data: []byte("hi")}, nil
		}
		return listsOut{}, nil
	})

var listsMapTool = llmtool.Read("lists_map", "Return a map of lists.",
	func(_ *llmtool.ReadCtx, _ struct{}) (map[string][]listLeaf, error) {
		return map[string][]listLeaf{"none": nil, "one": {{Name: "a"}}}, nil
	})

// Nil slices and maps in a result are encoded as [] and {} at every depth,
// so every result validates against the tool's own output schema; omitted
// fields stay omitted and a nil pointer to a list stays null.
func TestInvokeEmptyLists(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("lists", listsTool, listsMapTool))
	const emptyMid = `{"leaf":{"name":"","tags":[]},"leaves":[],"ptr":null,"byName":{}}`
	tests := []struct {
		name, tool, args, want string
	}{
		{"zero", "lists", `{"case":"zero"}`,
			`{"ids":[],"mid":` + emptyMid + `,"mids":[],"midPtr":null,"maybe":null,"data":""}`},
		{"deep", "lists", `{"case":"deep"}`,
			`{"ids":[],"mid":{"leaf":{"name":"","tags":[]},"leaves":[{"name":"a","tags":[]}],"ptr":{"name":"p","tags":[]},"byName":{"x":[]}},` +
				`"mids":[` + emptyMid + `],"midPtr":{"leaf":{"name":"q","tags":[]},"leaves":[],"ptr":null,"byName":{}},"maybe":[],"data":""}`},
		{"full", "lists", `{"case":"full"}`,
			`{"ids":[1],"mid":{"leaf":{"name":"","tags":["t"]},"leaves":[],"ptr":null,"byName":{}},"mids":[],"midPtr":null,` +
				`"maybe":["m"],"skip":[2],"skipZero":[],"data":"aGk="}`},
		{"map", "lists_map", `{}`, `{"none":[],"one":[{"name":"a","tags":[]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := invoke(reg, tt.tool, tt.args) // ValidateOutput is on, too
			require.False(t, res.IsError, "%s", res.JSON)
			require.Equal(t, tt.want, string(res.JSON))

			spec, ok := reg.Tool(context.Background(), tt.tool)
			require.True(t, ok)
			c := jsonschema.NewCompiler()
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec.OutputSchema))
			require.NoError(t, err)
			require.NoError(t, c.AddResource("mem:///out.json", doc))
			sch, err := c.Compile("mem:///out.json")
			require.NoError(t, err)
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(res.JSON))
			require.NoError(t, err)
			require.NoError(t, sch.Validate(v))
		})
	}
}
