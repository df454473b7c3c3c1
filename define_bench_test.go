package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// A generated registry of many tools, for BenchmarkDefineRegistry: the In
// types are instantiations of one generic struct over 8 numeric types, 5
// string types and 5 nested types, 200 distinct types in all, each shared
// by every 200th tool. Each carries the tags a real tool does: desc, enum,
// minimum, maximum, default, and a nested struct or list of structs.

type defIn[A, B, C any] struct {
	ID    A      `json:"id" desc:"ID of the record to read." minimum:"1" maximum:"1000000"`
	Mode  B      `json:"mode,omitempty" desc:"How much to return." enum:"brief|full|raw" default:"brief"`
	Query string `json:"query,omitempty" desc:"Words to look for." maxLength:"200"`
	Limit int    `json:"limit,omitempty" desc:"Most rows to return." minimum:"1" maximum:"100" default:"20"`
	Opts  C      `json:"opts,omitempty" desc:"Finer options."`
}

type defOut[A any] struct {
	ID    A         `json:"id" desc:"ID of the record."`
	Title string    `json:"title" desc:"Title of the record."`
	Items []defItem `json:"items" desc:"The record's items."`
}

type defItem struct {
	Name string `json:"name" desc:"Name of the item."`
	Qty  int    `json:"qty" desc:"How many there are." minimum:"0"`
}

type (
	defMode1 string
	defMode2 string
	defMode3 string
	defMode4 string
)

type defOptsA struct {
	Depth  int  `json:"depth,omitempty" desc:"Levels to follow." minimum:"0" maximum:"5" default:"1"`
	Drafts bool `json:"drafts,omitempty" desc:"Include drafts."`
}

type defOptsB struct {
	Sort  string   `json:"sort,omitempty" desc:"Order of the rows." enum:"name|date|size" default:"name"`
	Since string   `json:"since,omitempty" desc:"Only rows changed on or after this date." format:"date"`
	Tags  []string `json:"tags,omitempty" desc:"Tags the rows must carry." maxLength:"32"`
}

type defFilter struct {
	Field string `json:"field" desc:"Field to compare." enum:"name|qty|owner"`
	Value string `json:"value" desc:"Value to compare with." minLength:"1"`
}

// defMaker defines one of the generated tool shapes: with llmtool, with
// mcp-go's property options (the schema written by hand, as an mcp-go
// server does), and with mcp-go's schema inference from the same Go types.
type defMaker struct {
	llm   func(name string, write bool) *llmtool.Tool
	raw   func(name string) mcp.Tool
	typed func(name string) mcp.Tool
}

// defMakers returns the 200 shapes.
func defMakers() []defMaker {
	var ms []defMaker
	ms = defMakersA[int](ms, "integer")
	ms = defMakersA[int16](ms, "integer")
	ms = defMakersA[int32](ms, "integer")
	ms = defMakersA[int64](ms, "integer")
	ms = defMakersA[uint](ms, "integer")
	ms = defMakersA[uint32](ms, "integer")
	ms = defMakersA[float32](ms, "number")
	ms = defMakersA[float64](ms, "number")
	return ms
}

func defMakersA[A any](ms []defMaker, idType string) []defMaker {
	ms = defMakersB[A, string](ms, idType)
	ms = defMakersB[A, defMode1](ms, idType)
	ms = defMakersB[A, defMode2](ms, idType)
	ms = defMakersB[A, defMode3](ms, idType)
	return defMakersB[A, defMode4](ms, idType)
}

func defMakersB[A, B any](ms []defMaker, idType string) []defMaker {
	return append(ms,
		defMake[A, B, defOptsA](idType, "a"),
		defMake[A, B, defOptsB](idType, "b"),
		defMake[A, B, []defFilter](idType, "filters"),
		defMake[A, B, *defOptsA](idType, "a"),
		defMake[A, B, map[string]int](idType, "counts"),
	)
}

func defMake[A, B, C any](idType, opts string) defMaker {
	read := func(c *llmtool.ReadCtx, in defIn[A, B, C]) (defOut[A], error) { return defOut[A]{ID: in.ID}, nil }
	write := func(c *llmtool.WriteCtx, in defIn[A, B, C]) (defOut[A], error) { return defOut[A]{ID: in.ID}, nil }
	return defMaker{
		llm: func(name string, w bool) *llmtool.Tool {
			if w {
				return llmtool.Write(name, "Update a record.", write, llmtool.Category("Records"))
			}
			return llmtool.Read(name, "Read a record.", read, llmtool.Category("Records"))
		},
		raw: func(name string) mcp.Tool {
			id := mcp.WithNumber("id", mcp.Description("ID of the record to read."), mcp.Required(), mcp.Min(1), mcp.Max(1000000))
			if idType == "integer" {
				id = mcp.WithInteger("id", mcp.Description("ID of the record to read."), mcp.Required(), mcp.Min(1), mcp.Max(1000000))
			}
			return mcp.NewTool(name, mcp.WithDescription("Read a record."), id,
				mcp.WithString("mode", mcp.Description("How much to return."), mcp.Enum("brief", "full", "raw"), mcp.DefaultString("brief")),
				mcp.WithString("query", mcp.Description("Words to look for."), mcp.MaxLength(200)),
				mcp.WithInteger("limit", mcp.Description("Most rows to return."), mcp.Min(1), mcp.Max(100), mcp.DefaultNumber(20)),
				defMCPOpts(opts),
				mcp.WithRawOutputSchema(defOutSchema(idType)),
			)
		},
		typed: func(name string) mcp.Tool {
			return mcp.NewTool(name, mcp.WithDescription("Read a record."),
				mcp.WithInputSchema[defIn[A, B, C]](), mcp.WithOutputSchema[defOut[A]]())
		},
	}
}

// defMCPOpts is the opts property of defIn written with mcp-go's options.
func defMCPOpts(kind string) mcp.ToolOption {
	switch kind {
	case "a":
		return mcp.WithObject("opts", mcp.Description("Finer options."), mcp.AdditionalProperties(false), mcp.Properties(map[string]any{
			"depth":  map[string]any{"type": "integer", "description": "Levels to follow.", "minimum": 0, "maximum": 5, "default": 1},
			"drafts": map[string]any{"type": "boolean", "description": "Include drafts."},
		}))
	case "b":
		return mcp.WithObject("opts", mcp.Description("Finer options."), mcp.AdditionalProperties(false), mcp.Properties(map[string]any{
			"sort":  map[string]any{"type": "string", "description": "Order of the rows.", "enum": []string{"name", "date", "size"}, "default": "name"},
			"since": map[string]any{"type": "string", "description": "Only rows changed on or after this date.", "format": "date"},
			"tags":  map[string]any{"type": "array", "description": "Tags the rows must carry.", "items": map[string]any{"type": "string", "maxLength": 32}},
		}))
	case "filters":
		return mcp.WithArray("opts", mcp.Description("Finer options."), mcp.Items(map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"field", "value"},
			"properties": map[string]any{
				"field": map[string]any{"type": "string", "description": "Field to compare.", "enum": []string{"name", "qty", "owner"}},
				"value": map[string]any{"type": "string", "description": "Value to compare with.", "minLength": 1},
			},
		}))
	}
	return mcp.WithObject("opts", mcp.Description("Finer options."), mcp.AdditionalProperties(map[string]any{"type": "integer"}))
}

// defOutSchema is defOut's schema, as an mcp-go server would write it.
func defOutSchema(idType string) []byte {
	return fmt.Appendf(nil, `{"type":"object","additionalProperties":false,"required":["id","title","items"],"properties":{`+
		`"id":{"type":%q,"description":"ID of the record."},"title":{"type":"string","description":"Title of the record."},`+
		`"items":{"type":"array","description":"The record's items.","items":{"type":"object","additionalProperties":false,"required":["name","qty"],`+
		`"properties":{"name":{"type":"string","description":"Name of the item."},"qty":{"type":"integer","description":"How many there are.","minimum":0}}}}}}`, idType)
}

// defNames returns n tool names.
func defNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("record_tool_%04d", i)
	}
	return names
}

// defineRegistry defines n tools (every third a Write tool) and builds a
// registry of them on db.
func defineRegistry(tb testing.TB, db *sql.DB, ms []defMaker, names []string) *llmtool.Registry {
	tools := make([]*llmtool.Tool, len(names))
	for i, name := range names {
		tools[i] = ms[i%len(ms)].llm(name, i%3 == 2)
	}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, llmtool.DefineTools("records", tools...))
	require.NoError(tb, err)
	return reg
}

// defineMCP registers n tools with a new mcp-go server, each built by
// build.
func defineMCP(ms []defMaker, names []string, build func(defMaker, string) mcp.Tool) *server.MCPServer {
	s := server.NewMCPServer("bench", "1.0.0", server.WithToolCapabilities(true))
	handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("{}"), nil
	}
	for i, name := range names {
		s.AddTool(build(ms[i%len(ms)], name), handler)
	}
	return s
}

// BenchmarkDefineRegistry builds a registry of 1,000 generated tools (200
// distinct In types, see defMakers) and compares it, in the same run, with
// registering 1,000 tools of equivalent schemas with a new mcp-go server:
// "mcp" writes the schemas with mcp-go's property options (mcp.NewTool,
// mcp.WithInteger, ...; the output schema as raw JSON) and "mcptyped"
// infers them from the same Go types (mcp.WithInputSchema and
// WithOutputSchema). One build of each per round, in an order shuffled
// every round by a seeded generator, so all see the same machine load.
// The llmtool path is what a host does at start-up: define the tools
// (Read, Write), group them (DefineTools) and build the registry
// (NewRegistry, on a SQLite file). It reports the median over mcp's
// ("llmtool/mcp-p50", "llmtool/mcptyped-p50"), and each path's p10, p50
// and p90 in ms per 1,000 tools. ns/op is one round: all three paths.
func BenchmarkDefineRegistry(b *testing.B) {
	db := benchDB(b)
	ms := defMakers()
	names := defNames(1000)
	paths := []func(){
		func() { defineRegistry(b, db, ms, names) },
		func() { defineMCP(ms, names, func(m defMaker, name string) mcp.Tool { return m.raw(name) }) },
		func() { defineMCP(ms, names, func(m defMaker, name string) mcp.Tool { return m.typed(name) }) },
	}
	pathNames := []string{"llmtool", "mcp", "mcptyped"}
	t := shuffledRounds(b, len(paths), func(j int) { paths[j]() })
	b.ReportMetric(t.pct(0, .5)/t.pct(1, .5), "llmtool/mcp-p50")
	b.ReportMetric(t.pct(0, .5)/t.pct(2, .5), "llmtool/mcptyped-p50")
	t.reportSpread(b, pathNames, "ms", 1000/float64(len(names))/float64(time.Millisecond))
}

// BenchmarkDefine is the llmtool path of BenchmarkDefineRegistry alone,
// for profiling (-cpuprofile): ns/op is one registry of 1,000 tools.
func BenchmarkDefine(b *testing.B) {
	db := benchDB(b)
	ms := defMakers()
	names := defNames(1000)
	b.ReportAllocs()
	for b.Loop() {
		defineRegistry(b, db, ms, names)
	}
}

// TestDefineRegistry builds the generated registry of BenchmarkDefineRegistry
// and calls its tools: valid arguments (which the fast path takes, so no
// schema is compiled), and, from several goroutines at once, the first
// arguments that need jsonschema/v6 (which compiles the schema then, once)
// and get its refusal in the model's words.
func TestDefineRegistry(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	names := defNames(400)
	reg := defineRegistry(t, db, defMakers(), names)
	specs, err := reg.List(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, specs, len(names)-len(names)/3+1, "the read tools and man (write tools are off until a tenant turns them on)")
	ctx := context.Background()

	tests := []struct {
		tool, args, want string
	}{
		{"record_tool_0000", `{"id":7}`, ""},
		{"record_tool_0001", `{"id":7,"mode":"full","opts":{"sort":"date","since":"2026-01-02","tags":["a"]}}`, ""},
		{"record_tool_0007", `{"id":7,"opts":[{"field":"qty","value":"3"}]}`, ""},
		{"record_tool_0004", `{"id":7,"opts":{"a":1}}`, ""},
		{"record_tool_0150", `{"id":7.5}`, ""}, // a float32 ID
		{"record_tool_0000", `{"id":0}`,
			"Error: /id: 0 is below the minimum 1. Send an integer from 1 to 1000000."},
		{"record_tool_0000", `{"id":1,"mode":"short"}`,
			`Error: /mode: "short" is not an allowed value. Send one of "brief", "full", "raw".`},
		{"record_tool_0001", `{"id":1,"opts":{"since":"yesterday"}}`,
			`Error: /opts/since: "yesterday" is not a valid date. Send a date string.`},
		{"record_tool_0007", `{"id":1,"opts":[{"field":"qty"}]}`,
			`Error: /opts/0/value: missing required parameter "value". Send "value" as a string of at least 1 character (Value to compare with).`},
		{"record_tool_0003", `{"id":1,"ID":1}`,
			`Error: /ID: unknown parameter "ID". Send only id, mode, query, limit, opts (names are case-sensitive).`},
	}
	for _, tc := range tests {
		got := make([]llmtool.Result, 4)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() { got[i] = reg.Invoke(ctx, llmtool.Call{Tool: tc.tool, Args: json.RawMessage(tc.args)}) })
		}
		wg.Wait()
		for _, res := range got {
			if tc.want == "" {
				require.False(t, res.IsError, "%s %s: %s", tc.tool, tc.args, res.Text())
				require.NotContains(t, decodeObj(t, res.JSON), "error")
				continue
			}
			require.True(t, res.IsError, "%s %s", tc.tool, tc.args)
			require.Equal(t, tc.want, res.Text(), "%s %s", tc.tool, tc.args)
		}
	}
}
