package chatadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/stretchr/testify/require"
)

type Owner struct {
	ID   string `json:"id" desc:"User ID." pattern:"^u[0-9]+$"`
	Name string `json:"name,omitempty" desc:"Display name."`
}

type FindIn struct {
	Query string     `json:"query" desc:"Words to find." minLength:"1"`
	Limit int        `json:"limit,omitempty" desc:"At most this many (default 10)." default:"10" minimum:"1" maximum:"50"`
	Since *time.Time `json:"since,omitempty" desc:"Only items changed since then."`
	Kinds []string   `json:"kinds,omitempty" desc:"Item kinds." enum:"fruit|veg"`
	Owner *Owner     `json:"owner,omitempty" desc:"Owner filter."`
	Day   string     `json:"day,omitempty" desc:"Day of the change." format:"date"`
	Blob  []byte     `json:"blob,omitempty" desc:"Raw bytes."`
	Level int        `json:"level,omitempty" desc:"Level." enum:"1|2|3"`
}

var find = llmtool.Read("find", "Find items.",
	func(c *llmtool.ReadCtx, in FindIn) (ListOut, error) {
		return ListOut{Items: []ItemOut{{ID: in.Limit, Name: in.Query, Qty: len(in.Kinds)}}}, nil
	})

type TagIn struct {
	ID   int               `json:"id" desc:"ID of the item."`
	Tags map[string]string `json:"tags" desc:"Tags to set."`
}

var tag = llmtool.Read("tag", "Tag an item.",
	func(c *llmtool.ReadCtx, in TagIn) (MeetOut, error) { return MeetOut{Met: len(in.Tags)}, nil })

type AnyIn struct {
	Value json.RawMessage `json:"value" desc:"Anything."`
}

var anyTool = llmtool.Read("store_any", "Store any value.",
	func(c *llmtool.ReadCtx, in AnyIn) (MeetOut, error) { return MeetOut{}, nil })

func specOf(t *testing.T, reg *llmtool.Registry, name string) *llmtool.Spec {
	t.Helper()
	s, ok := reg.Tool(context.Background(), name)
	require.True(t, ok, name)
	return s
}

func TestDefinitions(t *testing.T) {
	t.Parallel()
	reg, err := llmtool.NewRegistry(openDB(t), nil, llmtool.DefineTools("find", find))
	require.NoError(t, err)
	a := chatadapter.New(reg, nil)
	spec := specOf(t, reg, "find")
	plain := string(spec.InputSchema)
	tests := []struct {
		shape chatadapter.Shape
		want  string
	}{
		{chatadapter.OpenAIChat, `{"type":"function","function":{"name":"find","description":"Find items.","parameters":` + plain + `}}`},
		{chatadapter.OpenAIResponses, `{"type":"function","name":"find","description":"Find items.","parameters":` + plain + `,"strict":false}`},
		{chatadapter.Anthropic, `{"name":"find","description":"Find items.","input_schema":` + plain + `}`},
		{chatadapter.OpenAIChatStrict, `{"type":"function","function":{"name":"find","description":"Find items.","parameters":` + strictFind + `,"strict":true}}`},
		{chatadapter.OpenAIResponsesStrict, `{"type":"function","name":"find","description":"Find items.","parameters":` + strictFind + `,"strict":true}`},
		{chatadapter.Gemini, `{"name":"find","description":"Find items.","parameters":` + geminiFind + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.shape.String(), func(t *testing.T) {
			t.Parallel()
			got, err := a.Definition(spec, tt.shape)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

// strictFind: every property required, optional ones nullable (null added
// to enums too), objects closed at every depth, default, minLength,
// contentEncoding and the date format said in the description instead.
const strictFind = `{"type":"object","properties":{` +
	`"query":{"type":"string","description":"Words to find. (at least 1 character)"},` +
	`"limit":{"type":["integer","null"],"description":"At most this many (default 10).","minimum":1,"maximum":50},` +
	`"since":{"type":["string","null"],"description":"Only items changed since then.","format":"date-time"},` +
	`"kinds":{"type":["array","null"],"description":"Item kinds.","items":{"type":"string","enum":["fruit","veg"]}},` +
	`"owner":{"type":["object","null"],"description":"Owner filter.","properties":{"id":{"type":"string","description":"User ID.","pattern":"^u[0-9]+$"},"name":{"type":["string","null"],"description":"Display name."}},"required":["id","name"],"additionalProperties":false},` +
	`"day":{"type":["string","null"],"description":"Day of the change.","format":"date"},` +
	`"blob":{"type":["string","null"],"description":"Raw bytes. (base64-encoded)"},` +
	`"level":{"type":["integer","null"],"description":"Level.","enum":[1,2,3,null]}` +
	`},"required":["query","limit","since","kinds","owner","day","blob","level"],"additionalProperties":false}`

// geminiFind: upper-case types, nullable instead of a null type, string
// enums, no additionalProperties, default and contentEncoding in the
// description, formats Gemini lacks (date) too.
const geminiFind = `{"type":"OBJECT","properties":{` +
	`"query":{"type":"STRING","description":"Words to find.","minLength":1},` +
	`"limit":{"type":"INTEGER","description":"At most this many (default 10).","minimum":1,"maximum":50},` +
	`"since":{"type":"STRING","description":"Only items changed since then.","nullable":true,"format":"date-time"},` +
	`"kinds":{"type":"ARRAY","description":"Item kinds.","items":{"type":"STRING","enum":["fruit","veg"]}},` +
	`"owner":{"type":"OBJECT","description":"Owner filter.","nullable":true,"properties":{"id":{"type":"STRING","description":"User ID.","pattern":"^u[0-9]+$"},"name":{"type":"STRING","description":"Display name."}},"required":["id"]},` +
	`"day":{"type":"STRING","description":"Day of the change. (format: date)"},` +
	`"blob":{"type":"STRING","description":"Raw bytes. (base64-encoded)"},` +
	`"level":{"type":"INTEGER","description":"Level.","enum":["1","2","3"],"format":"enum"}` +
	`},"required":["query"]}`

func TestUnsupported(t *testing.T) {
	t.Parallel()
	reg, err := llmtool.NewRegistry(openDB(t), nil, llmtool.DefineTools("odd", find, tag, anyTool))
	require.NoError(t, err)
	a := chatadapter.New(reg, nil)
	tests := []struct {
		shape chatadapter.Shape
		names []string
		errs  []string
	}{
		{chatadapter.OpenAIChat, []string{"find", "tag", "store_any", "man"}, nil},
		{chatadapter.Anthropic, []string{"find", "tag", "store_any", "man"}, nil},
		{chatadapter.OpenAIChatStrict, []string{"find", "man"}, []string{
			`chatadapter: tool "tag" cannot be expressed for OpenAI Chat Completions (strict): parameter tags is a map (an object with free-form keys), which strict mode cannot express (every object must list its properties); use a list of {key, value} objects, or the non-strict set`,
			`chatadapter: tool "store_any" cannot be expressed for OpenAI Chat Completions (strict): parameter value accepts any JSON value, which strict mode cannot express; give it a concrete Go type instead of any or json.RawMessage, or use the non-strict set`,
		}},
		{chatadapter.Gemini, []string{"find", "man"}, []string{
			`chatadapter: tool "tag" cannot be expressed for Gemini: parameter tags is a map (an object with free-form keys), which Gemini's schema cannot express; use a list of {key, value} objects`,
			`chatadapter: tool "store_any" cannot be expressed for Gemini: parameter value accepts any JSON value, which Gemini's schema cannot express (every schema needs one type); give it a concrete Go type instead of any or json.RawMessage`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.shape.String(), func(t *testing.T) {
			t.Parallel()
			set, err := a.Tools(context.Background(), tt.shape)
			require.NotNil(t, set)
			require.Equal(t, tt.names, set.Names)
			require.Len(t, set.Tools, len(tt.names))
			if tt.errs == nil {
				require.NoError(t, err)
				return
			}
			var msgs []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				msgs = append(msgs, e.Error())
			}
			require.Equal(t, tt.errs, msgs)
			var ue *chatadapter.UnsupportedError
			require.True(t, errors.As(err, &ue))
			require.Equal(t, "tag", ue.Tool)
			require.Equal(t, tt.shape, ue.Shape)
			require.Equal(t, "tags", ue.Path)
		})
	}
}

func TestToolsSetCachedPerTenant(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	guest := llmtool.WithTenant(context.Background(), "guest")
	s1, err := f.a.Tools(guest, chatadapter.Gemini)
	require.NoError(t, err)
	s2, err := f.a.Tools(guest, chatadapter.Gemini)
	require.NoError(t, err)
	require.Same(t, s1, s2, "same tenant, same set")
	require.Equal(t, []string{"get_item", "list_items", "meet", "photo", "man"}, s1.Names)

	shop, err := f.a.Tools(f.ctx, chatadapter.Gemini)
	require.NoError(t, err)
	require.Equal(t, []string{"get_item", "list_items", "add_item", "meet", "photo", "man"}, shop.Names)

	// Enabling writes in the guest tenant changes its set.
	require.NoError(t, f.reg.Tenants().SetWrites(guest, "guest", true))
	s3, err := f.a.Tools(guest, chatadapter.Gemini)
	require.NoError(t, err)
	require.Equal(t, shop.Names, s3.Names)
	require.Same(t, shop, s3, "the same list of tools shares one set")

	var decl []struct {
		FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
	}
	require.NoError(t, json.Unmarshal(s3.JSON, &decl))
	require.Len(t, decl, 1)
	require.Equal(t, s3.Tools, decl[0].FunctionDeclarations)

	_, err = f.a.Tools(guest, chatadapter.Shape(99))
	require.ErrorIs(t, err, chatadapter.ErrShape)
	require.EqualError(t, err, "chatadapter: unknown shape 99")
}

// A strict-mode model sends null for the optional parameters it leaves
// out; those nulls are dropped so defaults apply. The core does the same for
// every caller (a null for an optional parameter that does not take null
// means absent), so other shapes, and MCP, behave alike.
func TestStrictNulls(t *testing.T) {
	t.Parallel()
	reg, err := llmtool.NewRegistry(openDB(t), nil, llmtool.DefineTools("find", find))
	require.NoError(t, err)
	a := chatadapter.New(reg, nil)
	turn := func(args ...string) []byte {
		var calls []string
		for i, a := range args {
			q, _ := json.Marshal(a)
			calls = append(calls, `{"id":"`+string(rune('1'+i))+`","type":"function","function":{"name":"find","arguments":`+string(q)+`}}`)
		}
		return []byte(`{"role":"assistant","tool_calls":[` + strings.Join(calls, ",") + `]}`)
	}
	nulls := `{"query":"pear","limit":null,"since":null,"kinds":null,"owner":{"id":"u1","name":null},"day":null,"blob":null,"level":null}`
	r, err := a.Dispatch(context.Background(), chatadapter.OpenAIChatStrict, turn(nulls, `{"query":"pear","limit":3,"kinds":["veg"]}`, `{"query":null}`))
	require.NoError(t, err)
	out := r.Outcomes
	require.False(t, out[0].Result.IsError, out[0].Result.Text())
	require.Equal(t, `{"items":[{"id":10,"name":"pear","qty":0}]}`, out[0].Result.Text())
	require.Equal(t, `{"items":[{"id":3,"name":"pear","qty":1}]}`, out[1].Result.Text())
	require.True(t, out[2].Result.IsError, "a required parameter's null is not dropped")
	require.True(t, strings.HasPrefix(out[2].Result.Text(), `Error: /query: expected string, got null. Send a string`), out[2].Result.Text())

	r, err = a.Dispatch(context.Background(), chatadapter.OpenAIChat, turn(`{"query":"pear","limit":null}`))
	require.NoError(t, err)
	require.False(t, r.Outcomes[0].Result.IsError, r.Outcomes[0].Result.Text())
	require.Equal(t, out[0].Result.Text(), r.Outcomes[0].Result.Text(), "null means absent in every shape")
}
