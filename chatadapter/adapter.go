package chatadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"github.com/llmtool/llmtool/i18n"
	"github.com/llmtool/llmtool/internal/jsonenc"
	"github.com/llmtool/llmtool/internal/signkey"
	"github.com/llmtool/llmtool/internal/token"
)

// Shape names a provider's wire format for tool definitions, tool calls and
// tool results.
type Shape uint8

const (
	// OpenAIChat is OpenAI Chat Completions (and every compatible server):
	// tools as {"type":"function","function":{"name","description","parameters"}},
	// calls in the assistant message's tool_calls with arguments as a JSON
	// string, one {"role":"tool","tool_call_id",...} message per result.
	OpenAIChat Shape = iota + 1
	// OpenAIChatStrict is OpenAIChat with "strict": true and schemas that
	// satisfy strict mode: every object closed, every property required,
	// optional properties nullable. Dispatch with this shape reads a null
	// sent for an optional property as "not given".
	OpenAIChatStrict
	// OpenAIResponses is the OpenAI Responses API: flat function tools
	// {"type":"function","name",...,"parameters","strict":false},
	// function_call output items, function_call_output input items.
	OpenAIResponses
	// OpenAIResponsesStrict is OpenAIResponses with "strict": true and
	// strict-mode schemas.
	OpenAIResponsesStrict
	// Anthropic is the Anthropic Messages API: tools as
	// {"name","description","input_schema"}, tool_use content blocks,
	// tool_result blocks with is_error in one user message.
	Anthropic
	// Gemini is the Gemini API: one tool holding functionDeclarations with
	// the OpenAPI 3.0 schema subset Gemini accepts, functionCall parts,
	// functionResponse parts in one user content.
	Gemini

	numShapes = int(Gemini) + 1
)

var shapeNames = [...]string{
	OpenAIChat:            "OpenAI Chat Completions",
	OpenAIChatStrict:      "OpenAI Chat Completions (strict)",
	OpenAIResponses:       "OpenAI Responses",
	OpenAIResponsesStrict: "OpenAI Responses (strict)",
	Anthropic:             "Anthropic Messages",
	Gemini:                "Gemini",
}

// String returns the format's name, such as "Anthropic Messages".
func (s Shape) String() string {
	if s > 0 && int(s) < len(shapeNames) {
		return shapeNames[s]
	}
	return fmt.Sprintf("Shape(%d)", s)
}

func (s Shape) valid() bool { return s > 0 && int(s) < numShapes }

func (s Shape) strict() bool { return s == OpenAIChatStrict || s == OpenAIResponsesStrict }

// wire returns the format of calls and results, which strict variants
// share with their plain one.
func (s Shape) wire() Shape {
	switch s {
	case OpenAIChatStrict:
		return OpenAIChat
	case OpenAIResponsesStrict:
		return OpenAIResponses
	}
	return s
}

// ErrShape is wrapped by the errors for a Shape value that is not one of
// the constants, and by Dispatch's for a turn in another shape than the
// one given.
var ErrShape = errors.New("chatadapter: unknown shape")

// Adapter serves one registry's tools to chat models. It caches each
// tool's definition per format, so building a request's tool set costs a
// lookup, not a schema conversion. It is safe for concurrent use; create
// one per registry and share it.
type Adapter struct {
	reg         *llmtool.Registry
	maxParallel int
	locale      string
	msgs        *i18n.Catalog // nil: friendly names from definitions and llmtool's English

	defs sync.Map // defKey → *toolDef

	mu       sync.Mutex
	sets     [numShapes][]*cachedSet // most recent first
	deferred [numShapes][]*cachedSet // Options.ToolSearch's sets (deferred.go), most recent first

	toolSearch bool // Options.ToolSearch
	budget     int  // Options.OutputBudget

	seal *token.Signer // Options.SealKey's; nil: saved paused turns are plain (state.go)
}

// defaultMaxParallel is how many read tools of one turn run at once unless
// Options.MaxParallel says otherwise.
const defaultMaxParallel = 4

// Options configures an Adapter. A nil *Options, like the zero value,
// gives every field's default.
type Options struct {
	// MaxParallel bounds how many read tools of one turn run at once; 1
	// runs every call one after another. Default (0 or less):
	// 4.
	MaxParallel int

	// Locale is the locale of the lines a host shows (events, pending
	// calls, stops) when the context names none with WithLocale.
	// Default: "en".
	Locale string

	// Messages holds, per locale, the lines a host shows: the tools'
	// friendly names, over each tool's own FriendlyName (see
	// i18n.Catalog.FriendlyName), the chat's own lines under their
	// "llm.chat.…" keys (Event.Label, Pending.Prompt and Summary), and
	// translations of the tools' questions (see Pending.Question). The host may
	// add locales to it later. Nil: each tool's FriendlyName (for
	// llmtool's own tools, its embedded English), else its name, and the
	// embedded English lines.
	Messages *i18n.Catalog

	// ToolSearch hands the registry's on-demand tools
	// (llmtool.Options.OnDemand) to the providers' own tool search where
	// their APIs have one: for Anthropic Messages and OpenAI Responses
	// (strict or not), Tools gives every tool the tenant may call, those
	// not loaded yet marked "defer_loading": true, and the provider's
	// search tool in place of find_tools (Anthropic's
	// {"type":"tool_search_tool_bm25_20251119",...}, OpenAI's
	// {"type":"tool_search"}). The
	// provider then loads what the model searches for; the deferred
	// definitions are in the request but not in the model's context.
	// Other shapes get find_tools as without it. Default: false, every
	// shape gets find_tools and only the tools loaded.
	ToolSearch bool

	// OutputBudget bounds the results the model gets, in bytes of JSON
	// (about 4 bytes per token), for a model with a small context window:
	// llmtool.Call.OutputBudget on every call Dispatch runs, so that a
	// longer result is cut to fit (see llmtool.Truncated). It lowers a
	// tool's own budget, never raises it. Default: 0, the tools' budgets
	// only.
	OutputBudget int

	// SealKey seals the paused turns the adapter saves (json.Marshal of a
	// paused turn's Pending call, alone or in package run's Transcript):
	// they are signed (HMAC-SHA256), and Adapter.Restore (and run's
	// Runner.Restore) refuse one changed in any byte,
	// and one saved plain. Set it when the store of paused turns is not
	// trusted as the server itself is (a cookie, the browser, a shared
	// cache); use the registry's llmtool.Options.ApprovalKey, which a
	// turn's signature cannot be confused with, or another key of 32
	// random bytes, the same on every replica. New panics for a key
	// shorter than 16 bytes. Default: nil, paused turns are saved plain.
	SealKey []byte
}

// New returns an Adapter for reg, configured by opts (nil for the
// defaults).
func New(reg *llmtool.Registry, opts *Options) *Adapter {
	a := &Adapter{reg: reg, maxParallel: defaultMaxParallel, locale: "en"}
	if opts != nil {
		if opts.MaxParallel > 0 {
			a.maxParallel = opts.MaxParallel
		}
		if opts.Locale != "" {
			a.locale = opts.Locale
		}
		a.msgs = opts.Messages
		a.toolSearch = opts.ToolSearch
		a.budget = max(opts.OutputBudget, 0)
		if len(opts.SealKey) > 0 {
			if err := signkey.Check("chatadapter: Options.SealKey", opts.SealKey); err != nil {
				panic(err.Error())
			}
			a.seal = token.NewSigner(turnPurpose, opts.SealKey)
		}
	}
	return a
}

// ToolSet is the tools a tenant may call, in one provider's format. It is
// shared between requests: do not modify it.
type ToolSet struct {
	// Shape is the format of the definitions.
	Shape Shape
	// JSON is the value of the request's tools field: an array of the tool
	// definitions, or for Gemini an array of one tool whose
	// functionDeclarations are the definitions.
	JSON json.RawMessage
	// Tools are the definitions one by one, in the registry's order.
	Tools []json.RawMessage
	// Names are the tools' names, in the same order as Tools.
	Names []string
	// Deferred are the names of the tools marked to load on demand
	// through the provider's tool search (Options.ToolSearch), in the
	// order of Tools; nil when none is.
	Deferred []string
	// Beta is the anthropic-beta header a request with this set needs
	// ("advanced-tool-use-2025-11-20" for Anthropic's tool search while
	// it is in beta), "" if none.
	Beta string
}

type defKey struct {
	spec  *llmtool.Spec
	shape Shape
}

type toolDef struct {
	json json.RawMessage
	err  error
}

// cachedSet is a cached tool set, by the tools listed and, with
// Options.ToolSearch, the tools deferred.
type cachedSet struct {
	specs, unloaded []*llmtool.Spec
	set             *ToolSet
	errs            []error
}

const setCacheSize = 16

// cachedSetOf returns the set of list, most recent first, made of specs
// and unloaded, moving it to the front; or nil. The caller holds a.mu.
func cachedSetOf(list []*cachedSet, specs, unloaded []*llmtool.Spec) *cachedSet {
	for i, c := range list {
		if slices.Equal(c.specs, specs) && slices.Equal(c.unloaded, unloaded) {
			copy(list[1:i+1], list[:i])
			list[0] = c
			return c
		}
	}
	return nil
}

// pushSet puts c at the front of *list, dropping the least recent beyond
// setCacheSize. The caller holds a.mu.
func pushSet(list *[]*cachedSet, c *cachedSet) {
	*list = append([]*cachedSet{c}, (*list)[:min(len(*list), setCacheSize-1)]...)
}

// Tools returns the tool set for the tenant and principal in ctx
// (llmtool.WithTenant, llmtool.WithPrincipal): exactly the tools
// Registry.List gives them, in shape's format (with Options.ToolSearch,
// for the shapes whose provider searches tools, the on-demand tools too,
// deferred).
//
// A tool the format cannot express is left out, and reported in the error
// as an *UnsupportedError, joined with any error of the listing itself
// (a module loader that failed). The set of the other tools is returned
// along with such an error, so an application can log the problem and go
// on, or refuse to start.
//
// Definitions are converted once per tool and shape; sets are cached by
// their list of tools, so repeated calls for the same tenant return the same
// *ToolSet.
func (a *Adapter) Tools(ctx context.Context, shape Shape) (*ToolSet, error) {
	if !shape.valid() {
		return nil, fmt.Errorf("%w %d", ErrShape, shape)
	}
	if a.toolSearch && toolSearchTool(shape) != nil {
		return a.searchTools(ctx, shape) // deferred.go
	}
	specs, listErr := a.reg.List(ctx, nil)
	a.mu.Lock()
	if c := cachedSetOf(a.sets[shape], specs, nil); c != nil {
		a.mu.Unlock()
		return c.set, joinErrs(listErr, c.errs)
	}
	a.mu.Unlock()

	set := &ToolSet{Shape: shape, Tools: make([]json.RawMessage, 0, len(specs)), Names: make([]string, 0, len(specs))}
	var errs []error
	size := 32
	for _, s := range specs {
		d := a.def(s, shape)
		if d.err != nil {
			errs = append(errs, d.err)
			continue
		}
		set.Tools = append(set.Tools, d.json)
		set.Names = append(set.Names, s.Name)
		size += len(d.json) + 1
	}
	set.JSON = ordered.Append(make([]byte, 0, size), formatOf(shape).tools(ordered.Array(set.Tools)))

	a.mu.Lock()
	pushSet(&a.sets[shape], &cachedSet{specs: slices.Clone(specs), set: set, errs: errs})
	a.mu.Unlock()
	return set, joinErrs(listErr, errs)
}

// joinErrs joins the listing's error and the unsupported tools' errors
// into one flat errors.Join.
func joinErrs(listErr error, errs []error) error {
	if listErr == nil {
		return errors.Join(errs...)
	}
	return errors.Join(append([]error{listErr}, errs...)...)
}

// Definition returns one tool's definition in shape's format, or an
// *UnsupportedError if the format cannot express it. It is what Tools
// assembles, for applications that build their own lists.
func (a *Adapter) Definition(spec *llmtool.Spec, shape Shape) (json.RawMessage, error) {
	if !shape.valid() {
		return nil, fmt.Errorf("%w %d", ErrShape, shape)
	}
	d := a.def(spec, shape)
	return d.json, d.err
}

func (a *Adapter) def(spec *llmtool.Spec, shape Shape) *toolDef {
	k := defKey{spec, shape}
	if d, ok := a.defs.Load(k); ok {
		return d.(*toolDef)
	}
	b, err := buildDef(spec, shape)
	d, _ := a.defs.LoadOrStore(k, &toolDef{json: b, err: err})
	return d.(*toolDef)
}

// buildDef converts one tool's spec to shape's format.
func buildDef(spec *llmtool.Spec, shape Shape) (json.RawMessage, error) {
	schema := []byte(spec.InputSchema)
	if len(schema) == 0 {
		schema = []byte(`{"type":"object","properties":{},"additionalProperties":false}`)
	}
	f := formatOf(shape)
	params, err := f.parameters(&converter{tool: spec.Name, shape: shape}, schema, shape.strict())
	if err != nil {
		return nil, err
	}
	name := json.RawMessage(jsonenc.AppendString(nil, spec.Name))
	desc := json.RawMessage(jsonenc.AppendString(nil, spec.Description))
	return ordered.Append(nil, f.definition(name, desc, params, shape.strict())), nil
}

// object reads a tool's input schema, which must be an object schema, to
// convert it.
func (c *converter) object(schema []byte) (object, error) {
	v, err := ordered.Parse(schema)
	if err != nil {
		return nil, fmt.Errorf("chatadapter: tool %q: input schema is not JSON: %w", c.tool, err)
	}
	o, ok := v.(object)
	if !ok || schemaTypes(o) == nil || schemaTypes(o)[0] != "object" {
		return nil, c.fail("", "is not a JSON object schema")
	}
	return o, nil
}

func asObject(v any) object {
	o, _ := v.(object)
	return o
}
