package cost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"github.com/tiktoken-go/tokenizer"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/cost"
	"github.com/llmtool/llmtool/internal/mcptool"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/sqlite"
)

type greetIn struct {
	Name string `json:"name" desc:"Who to greet."`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

var greetTool = llmtool.Read("greet", "Greet someone.",
	func(_ *llmtool.ReadCtx, in greetIn) (greetOut, error) {
		return greetOut{"Hello, " + in.Name + "!"}, nil
	},
	llmtool.FriendlyName("Greet"))

type forgetIn struct {
	Name string `json:"name" desc:"Who to forget."`
}

var forgetTool = llmtool.Write("forget", "Forget someone for good.",
	func(_ *llmtool.WriteCtx, in forgetIn) (greetOut, error) {
		return greetOut{"Bye, " + in.Name + "."}, nil
	},
	llmtool.FriendlyName("Forget"), llmtool.Destructive())

var poemTool = llmtool.Read("poem", "Write a short poem.",
	func(_ *llmtool.ReadCtx, _ struct{}) (llmtool.Rich, error) {
		return llmtool.Rich{Content: []llmtool.Content{llmtool.TextContent("Roses.")}}, nil
	})

type tagIn struct {
	Tags map[string]string `json:"tags" desc:"Tags to set."`
}

// tagTool has a map argument, which neither strict mode nor Gemini can
// express.
var tagTool = llmtool.Write("tag", "Set tags.",
	func(_ *llmtool.WriteCtx, in tagIn) (greetOut, error) { return greetOut{}, nil })

var (
	people = llmtool.DefineTools("people", greetTool, forgetTool)
	poems  = llmtool.DefineTools("poems", poemTool)
	tags   = llmtool.DefineTools("tags", tagTool)
)

func quiet() *llmtool.Options { return &llmtool.Options{Logger: slog.New(slog.DiscardHandler)} }

// registry returns a registry without a database, as a cost report needs.
func registry(t *testing.T, mods ...*llmtool.Module) *llmtool.Registry {
	t.Helper()
	reg, err := llmtool.NewRegistry(nil, quiet(), mods...)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	return reg
}

// The tokenizer is OpenAI's: known strings give the token IDs tiktoken
// gives, so a change of the embedded vocabularies fails here first.
func TestTokenizer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		enc  tokenizer.Encoding
		text string
		ids  []uint
	}{
		{tokenizer.O200kBase, "Hello, world!", []uint{13225, 11, 2375, 0}},
		{tokenizer.Cl100kBase, "Hello, world!", []uint{9906, 11, 1917, 0}},
	} {
		t.Run(string(tt.enc), func(t *testing.T) {
			t.Parallel()
			codec, err := tokenizer.Get(tt.enc)
			require.NoError(t, err)
			ids, _, err := codec.Encode(tt.text)
			require.NoError(t, err)
			require.Equal(t, tt.ids, ids)
		})
	}
}

// One small fixed tool gives these exact counts; the OpenAI ones are the
// tokenizer's count of chatadapter's definition, the MCP one of the
// listing entry.
func TestReportCounts(t *testing.T) {
	t.Parallel()
	reg := registry(t, llmtool.DefineTools("people", greetTool))
	ctx := context.Background()
	for _, tt := range []struct {
		encoding string
		factor   float64
		want     map[string][2]int // bytes, tokens
	}{
		{"", 0, map[string][2]int{
			"openai-chat": {228, 51}, "openai-chat-strict": {242, 54}, "openai-responses": {230, 52}, "openai-responses-strict": {229, 52},
			"anthropic": {199, 45}, "gemini": {168, 39}, "mcp": {465, 110},
		}},
		{"cl100k_base", 0, map[string][2]int{
			"openai-chat": {228, 49}, "openai-chat-strict": {242, 53}, "openai-responses": {230, 51}, "openai-responses-strict": {229, 51},
			"anthropic": {199, 44}, "gemini": {168, 39}, "mcp": {465, 107},
		}},
		{"o200k_base", 1.25, map[string][2]int{ // estimates scaled, rounded up
			"openai-chat": {228, 51}, "openai-chat-strict": {242, 54}, "openai-responses": {230, 52}, "openai-responses-strict": {229, 52},
			"anthropic": {199, 57}, "gemini": {168, 49}, "mcp": {465, 138},
		}},
	} {
		t.Run(tt.encoding, func(t *testing.T) {
			t.Parallel()
			c, err := cost.Report(ctx, reg, &cost.Options{AllTools: true, Encoding: tt.encoding, EstimateFactor: tt.factor})
			require.NoError(t, err)
			require.Equal(t, []string{"greet", "man"}, c.Tools)
			got := map[string][2]int{}
			for _, s := range cost.Shapes() {
				r, ok := c.Row("greet", s)
				require.True(t, ok, s)
				require.Equal(t, "people", r.Module)
				require.Equal(t, s != "mcp" && s != "anthropic" && s != "gemini", !r.Estimate, s)
				got[s] = [2]int{r.Bytes, r.Tokens}
			}
			require.Equal(t, tt.want, got)

			// The OpenAI rows are the tokenizer's count of the definition.
			enc := tt.encoding
			if enc == "" {
				enc = "o200k_base"
			}
			codec, err := tokenizer.Get(tokenizer.Encoding(enc))
			require.NoError(t, err)
			def, err := chatadapter.New(reg, nil).Definition(greetTool.Spec(), chatadapter.OpenAIChat)
			require.NoError(t, err)
			n, err := codec.Count(string(def))
			require.NoError(t, err)
			require.Equal(t, n, got["openai-chat"][1])
		})
	}
}

// Totals are the sums of the rows, per shape and per module.
func TestReportTotals(t *testing.T) {
	t.Parallel()
	c, err := cost.Report(context.Background(), registry(t, people, poems), &cost.Options{AllTools: true})
	require.NoError(t, err)
	require.Equal(t, []string{"greet", "forget", "poem", "man"}, c.Tools)
	require.Equal(t, []string{"people", "poems", "llmtool"}, c.Modules())
	require.Len(t, c.Rows, 4*len(cost.Shapes()))
	for _, s := range cost.Shapes() {
		sum, modules := 0, 0
		for _, r := range c.Rows {
			if r.Shape == s {
				sum += r.Tokens
			}
		}
		for _, m := range c.Modules() {
			modules += c.ModuleTotal(m, s)
		}
		require.Equal(t, sum, c.Total(s), s)
		require.Equal(t, sum, modules, s)
		g, _ := c.Row("greet", s)
		f, _ := c.Row("forget", s)
		require.Equal(t, g.Tokens+f.Tokens, c.ModuleTotal("people", s), s)
	}
	require.Zero(t, c.ModuleTotal("nobody", "mcp"))
	_, ok := c.Row("nobody", "mcp")
	require.False(t, ok)
}

// Without AllTools the report covers what the context's tenant may list:
// write tools only once the tenant enabled them.
func TestReportTenant(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "cost.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, quiet(), people, poems)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	ctx := llmtool.WithTenant(context.Background(), "team")
	opts := &cost.Options{Shapes: []string{"anthropic"}}

	c, err := cost.Report(ctx, reg, opts)
	require.NoError(t, err)
	require.Equal(t, "team", c.Tenant)
	require.False(t, c.AllTools)
	require.Equal(t, []string{"greet", "poem", "man"}, c.Tools)

	require.NoError(t, reg.Tenants().SetWrites(ctx, "team", true))
	c, err = cost.Report(ctx, reg, opts)
	require.NoError(t, err)
	require.Equal(t, []string{"greet", "forget", "poem", "man"}, c.Tools)
	f, ok := c.Row("forget", "anthropic")
	require.True(t, ok)
	require.Equal(t, c.ModuleTotal("people", "anthropic")-f.Tokens, mustRow(t, c, "greet", "anthropic").Tokens)

	all, err := cost.Report(ctx, reg, &cost.Options{AllTools: true, Shapes: opts.Shapes})
	require.NoError(t, err)
	require.Empty(t, all.Tenant)
	require.Equal(t, c.Rows, all.Rows)
}

func mustRow(t *testing.T, c *cost.Catalog, tool string, s string) cost.Row {
	t.Helper()
	r, ok := c.Row(tool, s)
	require.True(t, ok, "%s in %s", tool, s)
	return r
}

// The MCP definition cost counts (internal/mcptool) is byte for byte the entry mcpadapter serves in
// tools/list, as a real MCP client receives it: a rich tool without an
// output schema, a destructive write tool with its annotations.
func TestMCPDefinitionMatchesListing(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "cost.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, quiet(), people, poems, tags)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	ctx := context.Background()
	require.NoError(t, reg.Tenants().SetWrites(ctx, "team", true))

	srv := mcpadapter.New(reg, &mcpadapter.Options{Tenant: "team", Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	cl := client.NewClient(tr)
	t.Cleanup(func() { cl.Close() })
	require.NoError(t, cl.Start(ctx))
	// A session of the handshake's revision, whose tools/list needs no
	// _meta, sent raw on the client's transport to read the wire bytes.
	_, err = cl.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "cost", Version: "1"}}})
	require.NoError(t, err)
	resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(100)), Method: "tools/list"})
	require.NoError(t, err)
	require.Nil(t, resp.Error)
	var listed struct {
		Tools []json.RawMessage `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(resp.Result, &listed))

	c, err := cost.Report(llmtool.WithTenant(ctx, "team"), reg, &cost.Options{Shapes: []string{"mcp"}})
	require.NoError(t, err)
	require.Len(t, listed.Tools, len(c.Tools))
	seen := map[string]bool{}
	for _, raw := range listed.Tools {
		var tl struct{ Name string }
		require.NoError(t, json.Unmarshal(raw, &tl))
		spec, ok := reg.Tool(ctx, tl.Name)
		require.True(t, ok, tl.Name)
		def, err := mcptool.Definition(spec)
		require.NoError(t, err)
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, raw))
		require.Equal(t, compact.String(), string(def), tl.Name)
		require.Equal(t, len(def), mustRow(t, c, tl.Name, "mcp").Bytes, tl.Name)
		seen[tl.Name] = true
	}
	require.Equal(t, map[string]bool{"greet": true, "forget": true, "poem": true, "tag": true, "man": true}, seen)

	poem, _ := reg.Tool(ctx, "poem")
	def, err := mcptool.Definition(poem)
	require.NoError(t, err)
	require.NotContains(t, string(def), "outputSchema")
	forget, _ := reg.Tool(ctx, "forget")
	def, err = mcptool.Definition(forget)
	require.NoError(t, err)
	require.Contains(t, string(def), `"annotations":{"title":"Forget","readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false}`)
}

// A tool a format cannot express has no row there, is listed in
// Unsupported, and shows "-" in the table with the reason after it.
func TestUnsupported(t *testing.T) {
	t.Parallel()
	c, err := cost.Report(context.Background(), registry(t, tags),
		&cost.Options{AllTools: true, Shapes: []string{"openai-chat", "openai-chat-strict", "gemini"}})
	require.NoError(t, err)
	_, ok := c.Row("tag", "openai-chat-strict")
	require.False(t, ok)
	_, ok = c.Row("tag", "gemini")
	require.False(t, ok)
	mustRow(t, c, "tag", "openai-chat")
	require.Len(t, c.Unsupported, 2)
	require.Equal(t, "tag", c.Unsupported[0].Tool)
	require.Equal(t, chatadapter.OpenAIChatStrict, c.Unsupported[0].Shape)
	require.Equal(t, chatadapter.Gemini, c.Unsupported[1].Shape)

	var b bytes.Buffer
	require.NoError(t, c.WriteText(&b))
	require.Equal(t, `Tokens of the tool definitions: every tool, counted with o200k_base; ~ marks an estimate (o200k_base × 1).
tool            module   openai-chat  openai-chat-strict  gemini
tag             tags              55                   -       -
man             llmtool           76                  87     ~64
module tags                       55                   0      ~0
module llmtool                    76                  87     ~64
total                            131                  87     ~64
left out: `+c.Unsupported[0].Error()+`
left out: `+c.Unsupported[1].Error()+`
`, b.String())
}

func TestWriteText(t *testing.T) {
	t.Parallel()
	ctx := llmtool.WithTenant(context.Background(), "team")
	c, err := cost.Report(ctx, registry(t, people), &cost.Options{Shapes: []string{"openai-responses", "anthropic", "mcp"}, EstimateFactor: 1.2})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, c.WriteText(&b))
	require.Equal(t, `Tokens of the tool definitions: the tools of tenant "team", counted with o200k_base; ~ marks an estimate (o200k_base × 1.2).
tool            module   openai-responses  anthropic   mcp
greet           people                 52        ~54  ~132
man             llmtool                77        ~84  ~131
module people                          52        ~54  ~132
module llmtool                         77        ~84  ~131
total                                 129       ~138  ~263
`, b.String())
}

func TestCheck(t *testing.T) {
	t.Parallel()
	c, err := cost.Report(context.Background(), registry(t, people, poems), &cost.Options{AllTools: true, Shapes: []string{"openai-chat", "mcp"}})
	require.NoError(t, err)
	tokens := func(tool string, s string) int { return mustRow(t, c, tool, s).Tokens }
	// The figures the messages below are written for.
	require.Equal(t, []int{51, 51, 35, 76}, []int{tokens("greet", "openai-chat"), tokens("forget", "openai-chat"), tokens("poem", "openai-chat"), tokens("man", "openai-chat")})
	require.Equal(t, []int{110, 108, 56, 109}, []int{tokens("greet", "mcp"), tokens("forget", "mcp"), tokens("poem", "mcp"), tokens("man", "mcp")})
	require.Equal(t, 213, c.Total("openai-chat"))
	require.Equal(t, 383, c.Total("mcp"))

	for _, tt := range []struct {
		name   string
		budget cost.Budget
		want   string // "" for nil
	}{
		{"no bounds", cost.Budget{}, ""},
		{"within", cost.Budget{Total: 383, Tool: 110}, ""},
		{"total over in MCP only", cost.Budget{Total: 300},
			"cost: over budget: the catalog costs 383 tokens in MCP tools/list (estimated), 83 over the budget of 300; the largest tools, together 110: greet (110). Shorten their descriptions, or leave tools out of the scope."},
		{"total over in both", cost.Budget{Total: 150},
			"cost: over budget: the catalog costs 213 tokens in OpenAI Chat Completions, 63 over the budget of 150; the largest tools, together 76: man (76). Shorten their descriptions, or leave tools out of the scope.\n" +
				"cost: over budget: the catalog costs 383 tokens in MCP tools/list (estimated), 233 over the budget of 150; the largest tools, together 327: greet (110), man (109), forget (108). Shorten their descriptions, or leave tools out of the scope."},
		{"tools over", cost.Budget{Tool: 105},
			"cost: over budget: tool greet costs 110 tokens in MCP tools/list (estimated), 5 over the per-tool budget of 105. Shorten its description or its parameters' descriptions.\n" +
				"cost: over budget: tool forget costs 108 tokens in MCP tools/list (estimated), 3 over the per-tool budget of 105. Shorten its description or its parameters' descriptions.\n" +
				"cost: over budget: tool man costs 109 tokens in MCP tools/list (estimated), 4 over the per-tool budget of 105. Shorten its description or its parameters' descriptions."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Check(tt.budget)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
			require.ErrorIs(t, err, cost.ErrOverBudget)
		})
	}

	// An exact count says so by saying nothing of an estimate.
	chat, err := cost.Report(context.Background(), registry(t, people, poems), &cost.Options{AllTools: true, Shapes: []string{"openai-chat"}})
	require.NoError(t, err)
	require.EqualError(t, chat.Check(cost.Budget{Tool: 70}),
		"cost: over budget: tool man costs 76 tokens in OpenAI Chat Completions, 6 over the per-tool budget of 70. Shorten its description or its parameters' descriptions.")
}

func TestReportErrors(t *testing.T) {
	t.Parallel()
	reg := registry(t, people)
	for _, tt := range []struct {
		name string
		opts *cost.Options
		want string
		is   error
	}{
		{"unknown shape", &cost.Options{Shapes: []string{"openai"}},
			`cost: unknown shape "openai"; use one of openai-chat, openai-chat-strict, openai-responses, openai-responses-strict, anthropic, gemini, mcp`, chatadapter.ErrShape},
		{"unknown encoding", &cost.Options{Encoding: "p50k_base"},
			`cost: unknown encoding "p50k_base"; use o200k_base or cl100k_base`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := cost.Report(context.Background(), reg, tt.opts)
			require.Nil(t, c)
			require.EqualError(t, err, tt.want)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
		})
	}

	loaderErr := errors.New("the plugin directory is missing")
	reg.AddLoader("plugins", func(context.Context) (*llmtool.Module, error) { return nil, loaderErr })
	c, err := cost.Report(context.Background(), reg, nil)
	require.Nil(t, c)
	require.ErrorIs(t, err, loaderErr)
	require.ErrorContains(t, err, "cost: listing the tools: ")
}

// The formats are named as the llmtoolcost command takes them, in report
// order; chatadapter.Shape names the chat ones for people.
func TestShapeNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"openai-chat", "openai-chat-strict", "openai-responses", "openai-responses-strict", "anthropic", "gemini", "mcp"}, cost.Shapes())
}
