package llmtool

import (
	"encoding/json"
	"fmt"
	"reflect"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmtool/llmtool/internal/schema"
	"github.com/llmtool/llmtool/internal/toolname"
)

// Spec is what a tool declares about itself: everything an adapter needs to
// list it, precomputed once at definition. Specs are shared; treat them as
// read-only.
type Spec struct {
	Name         string          // unique name, valid for MCP, OpenAI, Anthropic and Gemini
	Description  string          // always sent to the model: keep it short
	Module       string          // the module that registered the tool
	FriendlyName string          // the label people see, such as "Create note": MCP "title", chat progress
	Category     string          // man catalog group; "General" if unset
	Summary      string          // one line for the man catalog
	ManPage      string          // long documentation shown by "man <tool>"
	ReadOnly     bool            // a Read tool
	Destructive  bool            // may delete or overwrite data (Write tools only)
	Idempotent   bool            // repeating the call with the same arguments has no further effect
	OpenWorld    bool            // reaches outside the host's database
	Rich         bool            // Out is Rich: the result is content parts, not a JSON object
	InputSchema  json.RawMessage // JSON Schema 2020-12 of the arguments
	OutputSchema json.RawMessage // JSON Schema 2020-12 of the result
	Params       []Param         // top-level arguments in declaration order
	URI          string          // a resource's URI or URI template (Resource); "" for tools and prompts
	Prompt       bool            // a prompt (Prompt), rendered rather than called
	// NeedsApproval marks a write tool whose calls a person approves
	// before they commit (NeedsApproval); a tenant may require approval of
	// more (Registry.Tenants().SetApproval).
	NeedsApproval bool
	// Scopes are the OAuth scopes a principal's token must grant, all of
	// them, to list and call the tool (Scopes); principals not limited by
	// scopes (Principal.Scopes nil) are not checked.
	Scopes []string
	// OutputBudget bounds the tool's results, in bytes of JSON
	// (OutputBudget); 0 means none of its own, only the consumer's
	// (Call.OutputBudget).
	OutputBudget int
}

// Param is one top-level argument of a tool, as the man catalog and the
// chat adapters show it.
type Param = schema.Param

// Tool is a defined tool: a spec and a handler bound to its In and Out
// types. Create one with Read or Write and register it with DefineTools.
type Tool struct {
	spec Spec
	in   *schema.Schema
	out  *schema.Schema
	// run decodes the validated arguments into In, runs the guards and the
	// handler, and encodes Out, all inside the call's transaction.
	run func(c *ReadCtx, args []byte) ([]byte, error)
	// refs are In's ref-tagged fields, checked by the entity guards.
	refs    []schema.Ref
	kind    toolKind     // a tool, a resource or a prompt
	tmpl    *uriTemplate // a resource's URI template
	updates []string     // the resources a write tool updates (Updates)
	budget  budget       // how a result over its output budget is cut (budget.go)
}

// toolKind says what a *Tool defines: a tool the model calls, a resource a
// client reads (Resource) or a prompt a person picks (Prompt). All three
// run through Invoke alike.
type toolKind uint8

const (
	kindTool toolKind = iota
	kindResource
	kindPrompt
)

func (k toolKind) String() string {
	switch k {
	case kindResource:
		return "resource"
	case kindPrompt:
		return "prompt"
	}
	return "tool"
}

// Spec returns the tool's spec.
func (t *Tool) Spec() *Spec { return &t.spec }

// Option configures a tool at definition.
type Option func(*toolConfig)

type toolConfig struct {
	updates     []string
	spec        Spec
	guards      []any
	inputSchema json.RawMessage // supplied with InputSchema
	next        any             // Continue's function, a func(In, int) In
}

// defaultCategory is the Category of a tool defined without one (or with
// Category("")), set at definition so every Spec names its group.
const defaultCategory = "General"

// Category sets the group the tool is listed under by the man catalog. A
// tool without it is in the category "General".
func Category(name string) Option { return func(c *toolConfig) { c.spec.Category = name } }

// Summary sets the tool's one-line summary for the man catalog.
func Summary(line string) Option { return func(c *toolConfig) { c.spec.Summary = line } }

// ManPage sets the tool's long documentation, shown by "man <tool>" after
// the generated NAME, SYNOPSIS and OPTIONS. It should have an EXAMPLES
// section.
func ManPage(text string) Option { return func(c *toolConfig) { c.spec.ManPage = text } }

// FriendlyName sets the label people see for the tool, in the imperative
// ("Create note"): the title MCP clients show and what a chat UI shows
// while the tool runs. It is the English entry of the message catalog.
func FriendlyName(name string) Option { return func(c *toolConfig) { c.spec.FriendlyName = name } }

// Scopes declares the OAuth scopes, such as "notes:write", that a
// principal's access token must grant to list and call the tool. A token
// without one of them gets the tool refused (ErrInsufficientScope), and an
// MCP client over HTTP gets 403 with error="insufficient_scope" and the
// scopes to ask for. Principals not limited by scopes, such as the users
// of the host's own chat (Principal.Scopes nil), are not checked.
func Scopes(scopes ...string) Option {
	return func(c *toolConfig) { c.spec.Scopes = append(c.spec.Scopes[:0:0], scopes...) }
}

// Destructive marks a write tool that may delete or overwrite data.
func Destructive() Option { return func(c *toolConfig) { c.spec.Destructive = true } }

// Idempotent marks a tool whose repeated calls with the same arguments have
// no further effect.
func Idempotent() Option { return func(c *toolConfig) { c.spec.Idempotent = true } }

// OpenWorld marks a tool that reaches outside the host's database, such as
// the web.
func OpenWorld() Option { return func(c *toolConfig) { c.spec.OpenWorld = true } }

// InputSchema supplies the tool's input schema verbatim, for keywords the
// inference from In does not emit ($schema, $defs and $ref, oneOf, ...).
// Listings send it byte for byte and arguments are validated against it
// with JSON Schema 2020-12 (or the draft its $schema names); In still
// decodes the arguments and supplies defaults from its tags.
//
// The schema must be an object schema whose top-level properties and
// required list name exactly In's JSON fields and required fields, so the
// two cannot disagree: the tool's definition panics, naming the
// difference, when they do or when the schema does not compile.
func InputSchema(schema json.RawMessage) Option {
	return func(c *toolConfig) { c.inputSchema = append(json.RawMessage(nil), schema...) }
}

// Guards adds checks that run, in the order given, inside the call's
// transaction after the arguments are validated and before the handler.
// The first guard that returns an error ends the call with that error and
// nothing is written. Their In type must be the tool's.
func Guards[In any](guards ...func(*ReadCtx, In) error) Option {
	return func(c *toolConfig) {
		for _, g := range guards {
			c.guards = append(c.guards, g)
		}
	}
}

// Read defines a read tool. Its handler gets a *ReadCtx, which can query
// but has no way to write, and runs in a read-only transaction.
//
// Read panics if the name is invalid, or if In or Out cannot be expressed
// as JSON Schema (channels, funcs, iterators, cycles), naming the field and
// what to use instead: defining tools in package-level variables makes any
// test of the package catch it.
func Read[In, Out any](name, description string, handler func(*ReadCtx, In) (Out, error), opts ...Option) *Tool {
	return define(name, description, true, opts, handler)
}

// Write defines a write tool. Its handler gets a *WriteCtx, which can Exec,
// and runs in a write transaction that commits when it returns a nil error
// and rolls back otherwise.
//
// On PostgreSQL the transaction is SERIALIZABLE, and a run that loses a
// race with a concurrent write (a serialization failure or deadlock) is
// run again, handler and all, on a fresh transaction; so is one that
// finds SQLite's write lock held by another process past the busy
// timeout. Runs go on, with growing pauses, until one commits or the
// call's deadline passes (Options.RetryFor when its context has none);
// then the model is told the database is busy and nothing changed. So a
// write handler must do nothing outside its transaction: no HTTP request,
// no message sent, no file written. Register such effects with
// WriteCtx.AfterCommit, which runs once, after the final commit.
//
// Write panics on the same definition errors as Read.
func Write[In, Out any](name, description string, handler func(*WriteCtx, In) (Out, error), opts ...Option) *Tool {
	return define(name, description, false, opts, func(c *ReadCtx, in In) (Out, error) { return handler(c.write, in) })
}

// define is Read and Write: it checks the definition, infers the schemas
// and binds the call: decode In, entity checks, guards in order, handler,
// encode Out.
func define[In, Out any](name, description string, read bool, opts []Option, handler func(*ReadCtx, In) (Out, error)) *Tool {
	if err := toolname.Validate(name); err != nil {
		panic(fmt.Sprintf("llmtool: %v", err))
	}
	cfg := toolConfig{spec: Spec{Name: name, Description: description, ReadOnly: read}}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.spec.Category == "" {
		cfg.spec.Category = defaultCategory
	}
	if read && cfg.spec.Destructive {
		panic(fmt.Sprintf("llmtool: tool %q: a Read tool cannot be Destructive; define it with Write", name))
	}
	guards := make([]func(*ReadCtx, In) error, 0, len(cfg.guards))
	for i, g := range cfg.guards {
		tg, ok := g.(func(*ReadCtx, In) error)
		if !ok {
			panic(fmt.Sprintf("llmtool: tool %q: guard %d has type %T; guards of this tool must be func(*llmtool.ReadCtx, %s) error", name, i+1, g, reflect.TypeFor[In]()))
		}
		guards = append(guards, tg)
	}
	inT, outT := reflect.TypeFor[In](), reflect.TypeFor[Out]()
	if inT.Kind() != reflect.Struct {
		panic(fmt.Sprintf("llmtool: tool %q: In type %s must be a struct, since arguments are a JSON object; use struct{} for a tool without arguments", name, inT))
	}
	if outT.Kind() != reflect.Struct && !(outT.Kind() == reflect.Map && outT.Key().Kind() == reflect.String) {
		panic(fmt.Sprintf("llmtool: tool %q: Out type %s must be a struct (or a map with string keys), since results are JSON objects; wrap it, as in struct{ Items []T `json:\"items\"` }", name, outT))
	}
	if read && cfg.spec.NeedsApproval {
		panic(fmt.Sprintf("llmtool: tool %q: a Read tool changes nothing to approve; NeedsApproval is for Write tools", name))
	}
	if read && len(cfg.updates) > 0 {
		panic(fmt.Sprintf("llmtool: tool %q: a Read tool updates no resource; Updates is for Write tools", name))
	}
	t := &Tool{spec: cfg.spec, updates: cfg.updates}
	t.in = schema.Infer(name, "In", inT)
	if cfg.inputSchema != nil {
		t.in = schema.Supplied(name, inT, t.in, cfg.inputSchema)
	}
	t.out = schema.Infer(name, "Out", outT)
	emptyNils := schema.EmptyNils(outT) // nil slices and maps as [] and {}; nil if Out has none
	t.spec.Rich = outT == reflect.TypeFor[Rich]()
	t.budget = planBudget[In](name, outT, &cfg) // budget.go
	if t.out.Root().HasProp("error") {
		panic(fmt.Sprintf("llmtool: tool %q: Out has a property named \"error\", which is reserved for failed calls; rename it", name))
	}
	t.spec.InputSchema = t.in.JSON()
	t.spec.OutputSchema = t.out.JSON()
	t.spec.Params = t.in.Root().Params()
	t.refs = schema.Refs(name, t.in.Root(), inT)
	t.run = func(c *ReadCtx, args []byte) ([]byte, error) {
		in := new(In)
		if err := c.call.decodeIn(args, in); err != nil {
			return nil, err
		}
		if err := runGuards(c, *in, guards); err != nil {
			return nil, err
		}
		var out Out
		var err error
		if c.call.traced {
			out, err = handleTraced(c, *in, handler) // in the span llmtool.handler (telemetry.go)
		} else {
			out, err = handler(c, *in)
		}
		if err != nil {
			return nil, err
		}
		var v any = out
		if emptyNils != nil {
			v = emptyNils(v)
		}
		b, err := encodeOut(v)
		if err == nil && c.call.tool.spec.Rich {
			c.call.content = any(out).(Rich).Content
		}
		return b, err
	}
	return t
}

// runGuards runs a call's entity checks, then its guards in order, until
// one fails; in the span llmtool.guards when the call is traced and has
// any.
func runGuards[In any](c *ReadCtx, in In, guards []func(*ReadCtx, In) error) (err error) {
	if c.call.traced && (len(guards) > 0 || len(c.call.tool.refs) > 0) {
		var span trace.Span
		c, span = c.child(spanGuards) // telemetry.go
		defer func() { endChild(span, err) }()
	}
	if len(c.call.tool.refs) > 0 {
		if err := c.checkRefs(in); err != nil {
			return err
		}
	}
	for _, g := range guards {
		if err := g(c, in); err != nil {
			return err
		}
	}
	return nil
}

// Content is one part of a rich tool result. MCP sends the parts as content
// blocks; chat adapters send them in the provider's shape. Build parts with
// TextContent, ImageContent, AudioContent and ResourceContent.
type Content struct {
	// Type is "text", "image", "audio" or "resource".
	Type string `json:"type" enum:"text|image|audio|resource"`
	// Text is the text of a text part, or of a text resource.
	Text string `json:"text,omitempty"`
	// Data is the bytes of an image, audio or binary resource part
	// (base64 in JSON).
	Data []byte `json:"data,omitempty"`
	// MIMEType is the media type of Data or of a resource.
	MIMEType string `json:"mimeType,omitempty"`
	// URI names an embedded resource.
	URI string `json:"uri,omitempty"`
}

// Rich is the Out type of a tool that answers with content parts (text,
// images, audio, embedded resources) rather than one JSON object.
type Rich struct {
	Content []Content `json:"content"`
}

// TextContent returns a text part.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// ImageContent returns an image part, such as a PNG.
func ImageContent(data []byte, mimeType string) Content {
	return Content{Type: "image", Data: data, MIMEType: mimeType}
}

// AudioContent returns an audio part, such as a WAV file.
func AudioContent(data []byte, mimeType string) Content {
	return Content{Type: "audio", Data: data, MIMEType: mimeType}
}

// ResourceContent returns an embedded resource part: text for a text
// resource, or data for a binary one.
func ResourceContent(uri, mimeType, text string, data []byte) Content {
	return Content{Type: "resource", URI: uri, MIMEType: mimeType, Text: text, Data: data}
}
