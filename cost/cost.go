// Package cost reports what a registry's tool catalog costs a model: the
// tokens of each tool's definition in each provider's format and in an MCP
// tools/list, with totals per module and per format, and checks them
// against a budget, so that CI fails when a change makes the catalog too
// expensive.
//
//	reg, err := llmtool.NewRegistry(nil, nil, books.Tools) // counting needs no database
//	c, err := cost.Report(ctx, reg, &cost.Options{AllTools: true})
//	c.WriteText(os.Stdout)
//	err = c.Check(cost.Budget{Total: 8000}) // names the tools to trim
//
// # Counting
//
// A definition is the JSON a request carries for one tool: chatadapter's
// Definition for the chat formats (a tool a format cannot express is left
// out of that format, as chatadapter leaves it out, and listed in
// Catalog.Unsupported), and the tool's entry of an MCP tools/list. Its
// tokens are counted with OpenAI's tokenizer (o200k_base by default, the
// encoding of current OpenAI models; cl100k_base on request), embedded in
// the binary, so a report needs no network.
//
// Only OpenAI's tokenizers are served for Go. The counts for the OpenAI
// formats are exact counts of the definition's JSON; those for Anthropic, Gemini
// and MCP (whose client's model is unknown) are estimates, the same
// tokenizer's count scaled by Options.EstimateFactor, and are marked as
// such in every row, in WriteText's table and in Check's messages. Neither
// includes what a provider adds around the definitions itself (a tool-use
// system prompt, its own rendering of the schemas): budget with a margin.
//
// Importing this package links the tokenizer's vocabularies (some
// megabytes); a host that never imports it does not.
package cost

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tiktoken-go/tokenizer"
	tokencodec "github.com/tiktoken-go/tokenizer/codec"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/internal/mcptool"
	"github.com/llmtool/llmtool/internal/shapename"
)

// The formats a report covers, by the names the llmtoolcost command
// takes ("anthropic", "mcp"), in this order unless Options.Shapes says
// otherwise: chatadapter's shapes (its Shape type is the one Shape), then
// "mcp", an MCP tools/list, which is no chat shape.
var shapes = []struct {
	name string
	chat chatadapter.Shape // 0 for "mcp"
}{
	{shapename.OpenAIChat, chatadapter.OpenAIChat},
	{shapename.OpenAIChatStrict, chatadapter.OpenAIChatStrict},
	{shapename.OpenAIResponses, chatadapter.OpenAIResponses},
	{shapename.OpenAIResponsesStrict, chatadapter.OpenAIResponsesStrict},
	{shapename.Anthropic, chatadapter.Anthropic},
	{shapename.Gemini, chatadapter.Gemini},
	{mcpShape, 0},
}

// mcpShape is the name of an MCP tools/list.
const mcpShape = shapename.MCP

// Shapes returns the names of every format a report may cover, in report
// order ("openai-chat", ..., "gemini", "mcp"), in a new slice the caller
// may keep and change.
func Shapes() []string {
	names := make([]string, len(shapes))
	for i, s := range shapes {
		names[i] = s.name
	}
	return names
}

// chatShape returns the chatadapter shape of the format named name, 0 for
// "mcp", and false for an unknown name.
func chatShape(name string) (chatadapter.Shape, bool) {
	for _, s := range shapes {
		if s.name == name {
			return s.chat, true
		}
	}
	return 0, false
}

// isEstimate reports whether counts in the format named name are
// estimates: true for every format but the OpenAI ones, whose tokenizer is
// the one counting.
func isEstimate(name string) bool {
	c, _ := chatShape(name)
	return c != chatadapter.OpenAIChat && c != chatadapter.OpenAIChatStrict && c != chatadapter.OpenAIResponses && c != chatadapter.OpenAIResponsesStrict
}

// shapeError is Report's error for a format name that is not one of
// Shapes. It wraps chatadapter.ErrShape, the one error for an unknown
// shape.
type shapeError struct{ name string }

func (e *shapeError) Error() string {
	return fmt.Sprintf("cost: unknown shape %q; use one of %s", e.name, strings.Join(Shapes(), ", "))
}

func (e *shapeError) Unwrap() error { return chatadapter.ErrShape }

// Options configures a report. A nil *Options, like the zero value, gives
// every field's default.
type Options struct {
	// AllTools reports every registered tool, switched on or off and
	// whatever any tenant allows (Registry.List with ListOptions.All,
	// less resources and prompts): the whole catalog a module ships. Otherwise the report
	// covers the tools the tenant and principal in the context may list
	// (Registry.List), which is what their requests carry.
	AllTools bool

	// Shapes are the formats to report, by name (see Shapes), in this
	// order. Default: Shapes().
	Shapes []string

	// Encoding is the OpenAI encoding that counts: "o200k_base" (GPT-4o,
	// GPT-4.1, GPT-5, the o-series) or "cl100k_base" (GPT-4, GPT-3.5).
	// Default: "o200k_base".
	Encoding string

	// EstimateFactor scales the counts of the estimated shapes (Anthropic,
	// Gemini, MCP), to budget for a tokenizer that splits text finer than
	// OpenAI's. Default (0 or less): 1, the OpenAI count as it is.
	EstimateFactor float64
}

// Row is one tool's definition in one shape.
type Row struct {
	Tool   string `json:"tool"`
	Module string `json:"module"`
	Shape  string `json:"shape"`  // the format's name, such as "anthropic" (Shapes)
	Bytes  int    `json:"bytes"`  // length of the definition's JSON
	Tokens int    `json:"tokens"` // tokens of that JSON
	// Estimate is true where no tokenizer of the provider counted: the
	// OpenAI count scaled by Options.EstimateFactor (every format but the OpenAI ones).
	Estimate bool `json:"estimate"`
}

// Catalog is a cost report: one row per tool and shape. Its totals are
// sums of its rows; the few tokens of the list around the definitions
// (brackets, commas, Gemini's functionDeclarations) are not counted.
type Catalog struct {
	// Tenant is the tenant the report covers (llmtool.TenantFrom), "" with
	// AllTools.
	Tenant string `json:"tenant"`
	// AllTools is Options.AllTools: every registered tool, whatever the
	// tenant.
	AllTools bool `json:"allTools"`
	// Encoding is the tokenizer's encoding, such as "o200k_base".
	Encoding string `json:"encoding"`
	// EstimateFactor is the factor of the estimated counts.
	EstimateFactor float64 `json:"estimateFactor"`
	// Shapes are the names of the formats reported, in order.
	Shapes []string `json:"shapes"`
	// Tools are the tools reported, in the order Registry.List gives
	// them (llmtool's own tools last).
	Tools []string `json:"tools"`
	// Rows are the definitions, tool by tool in the order of Tools, each
	// tool's shapes in the order of Shapes.
	Rows []Row `json:"rows"`
	// Unsupported are the tools a format cannot express, left out of that
	// shape as chatadapter leaves them out of its tool set.
	Unsupported []*chatadapter.UnsupportedError `json:"-"`
}

// Report counts the tokens of reg's tool definitions: those the scope and
// principal in ctx may list, or every tool with Options.AllTools. It
// returns an error for an unknown shape (wrapping chatadapter.ErrShape)
// or encoding, a module loader that failed, or a definition that cannot
// be built other than an unsupported schema (which Catalog.Unsupported
// lists instead).
func Report(ctx context.Context, reg *llmtool.Registry, opts *Options) (*Catalog, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Encoding == "" {
		o.Encoding = string(tokenizer.O200kBase)
	}
	if o.EstimateFactor <= 0 {
		o.EstimateFactor = 1
	}
	names := o.Shapes
	if len(names) == 0 {
		names = Shapes()
	}
	for _, s := range names {
		if _, ok := chatShape(s); !ok {
			return nil, &shapeError{s}
		}
	}
	var codec tokenizer.Codec
	switch tokenizer.Encoding(o.Encoding) {
	case tokenizer.O200kBase:
		codec = tokencodec.NewO200kBase()
	case tokenizer.Cl100kBase:
		codec = tokencodec.NewCl100kBase()
	default:
		return nil, fmt.Errorf("cost: unknown encoding %q; use o200k_base or cl100k_base", o.Encoding)
	}

	specs, err := toolSpecs(ctx, reg, o.AllTools)
	if err != nil {
		return nil, err
	}
	c := &Catalog{AllTools: o.AllTools, Encoding: o.Encoding, EstimateFactor: o.EstimateFactor,
		Shapes: slices.Clone(names), Tools: make([]string, 0, len(specs)), Rows: make([]Row, 0, len(specs)*len(names))}
	if !o.AllTools {
		c.Tenant = llmtool.TenantFrom(ctx)
	}
	chat := chatadapter.New(reg, nil)
	for _, sp := range specs {
		c.Tools = append(c.Tools, sp.Name)
		for _, s := range names {
			def, err := definition(chat, sp, s)
			if u := (*chatadapter.UnsupportedError)(nil); errors.As(err, &u) {
				c.Unsupported = append(c.Unsupported, u)
				continue
			}
			if err != nil {
				return nil, err
			}
			n, err := codec.Count(string(def))
			if err != nil {
				return nil, fmt.Errorf("cost: counting the tokens of tool %q for %s: %w", sp.Name, s, err)
			}
			r := Row{Tool: sp.Name, Module: sp.Module, Shape: s, Bytes: len(def), Tokens: n, Estimate: isEstimate(s)}
			if r.Estimate {
				r.Tokens = int(math.Ceil(float64(n) * o.EstimateFactor))
			}
			c.Rows = append(c.Rows, r)
		}
	}
	return c, nil
}

// toolSpecs returns the tools to report on.
func toolSpecs(ctx context.Context, reg *llmtool.Registry, all bool) ([]*llmtool.Spec, error) {
	if !all {
		specs, err := reg.List(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("cost: listing the tools: %w", err)
		}
		return specs, nil
	}
	specs, err := reg.List(ctx, &llmtool.ListOptions{All: true})
	if err != nil {
		return nil, fmt.Errorf("cost: listing the tools: %w", err)
	}
	specs = slices.DeleteFunc(specs, func(s *llmtool.Spec) bool { return s.URI != "" || s.Prompt })
	// llmtool's own tools last, as Registry.List orders them.
	slices.SortStableFunc(specs, func(a, b *llmtool.Spec) int {
		return cmp.Compare(boolInt(a.Module == "llmtool"), boolInt(b.Module == "llmtool"))
	})
	return specs, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// definition returns one tool's definition in the format named s.
func definition(chat *chatadapter.Adapter, sp *llmtool.Spec, s string) (json.RawMessage, error) {
	if s == mcpShape {
		return mcptool.Definition(sp)
	}
	c, _ := chatShape(s)
	return chat.Definition(sp, c)
}

// Total returns the tokens of the whole catalog in shape s: the sum of its
// rows.
func (c *Catalog) Total(s string) int {
	n := 0
	for _, r := range c.Rows {
		if r.Shape == s {
			n += r.Tokens
		}
	}
	return n
}

// Modules returns the modules of the reported tools, in order of their
// first tool.
func (c *Catalog) Modules() []string {
	var ms []string
	seen := map[string]bool{}
	for _, r := range c.Rows {
		if !seen[r.Module] {
			seen[r.Module] = true
			ms = append(ms, r.Module)
		}
	}
	return ms
}

// ModuleTotal returns the tokens of one module's tools in shape s: the sum
// of their rows.
func (c *Catalog) ModuleTotal(module, s string) int {
	n := 0
	for _, r := range c.Rows {
		if r.Module == module && r.Shape == s {
			n += r.Tokens
		}
	}
	return n
}

// Row returns the row of a tool in shape s, and false if the report has
// none (an unknown tool, a shape not reported, or a tool the format cannot
// express).
func (c *Catalog) Row(tool, s string) (Row, bool) {
	for _, r := range c.Rows {
		if r.Tool == tool && r.Shape == s {
			return r, true
		}
	}
	return Row{}, false
}
