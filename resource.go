package llmtool

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strings"
)

// Resource defines a resource a module serves beside its tools: data a
// client reads by URI rather than a model calls. uri is a fixed URI
// ("notes://recent") or a URI template whose variables, in braces, are
// fields of In named by their JSON names ("note://{noteId}"): reading
// "note://abc" runs read with In.NoteID set to "abc".
//
// A resource is read exactly as a read tool is called (Registry.Invoke with
// Call.Resource): in a read-only snapshot, with the entity checks of In's
// ref-tagged fields (the note exists, is not protected, the principal may
// read it) and the tool's Guards, under the same policy and audit. So
// `note://{noteId}` over a field tagged ref:"note" is refused for a
// protected note exactly as get_note is, and a template variable that
// references an entity kind completes its IDs through Entity.Complete
// (Registry.Complete).
//
// The handler answers with content parts: a text part becomes the
// resource's text, an image, audio or binary resource part its bytes. Parts
// without a URI get the URI that was read; Content.MIMEType sets the media
// type ("text/plain" for text parts without one).
//
// name follows the tool-name rules and shares their namespace: a module
// cannot define a tool and a resource of the same name. The options of
// tools apply (FriendlyName is the title clients show; Guards, Category,
// Summary, ManPage). Resource panics, naming the problem, when a template
// variable is not a string field of In or a required field of In is not a
// variable of the template.
func Resource[In any](name, uri, description string, read func(*ReadCtx, In) (Rich, error), opts ...Option) *Tool {
	t := define(name, description, true, opts, read)
	tmpl, err := parseTemplate(uri)
	if err != nil {
		panic(fmt.Sprintf("llmtool: resource %q: %v", name, err))
	}
	inT := reflect.TypeFor[In]()
	for _, v := range tmpl.vars {
		if p := param(t, v); p == nil || p.Type != "string" {
			panic(fmt.Sprintf("llmtool: resource %q: template variable {%s} must be a string field of %s with the JSON name %q", name, v, inT, v))
		}
	}
	for _, p := range t.spec.Params {
		if p.Required && !tmpl.has(p.Name) {
			panic(fmt.Sprintf("llmtool: resource %q: field %q of %s is required but is not a variable of %q; add {%s} to the URI or make the field optional", name, p.Name, inT, uri, p.Name))
		}
	}
	t.kind = kindResource
	t.tmpl = tmpl
	t.spec.URI = uri
	return t
}

// Message is one message of a rendered prompt: a role ("user" or
// "assistant") and one content part.
type Message struct {
	Role    string  `json:"role" enum:"user|assistant"`
	Content Content `json:"content"`
}

// promptOut is the Out of a prompt's handler as the registry encodes it.
type promptOut struct {
	Messages []Message `json:"messages"`
}

// Prompt defines a prompt a module serves beside its tools: a message
// template a person picks in the client (MCP prompts/list and prompts/get)
// or a host's chat offers, rendered by get from typed arguments. In is a
// struct like a tool's input, so the arguments have a schema, descriptions,
// defaults, friendly names and lint; MCP clients send prompt arguments as
// strings, so In's fields should be strings.
//
// A prompt is rendered exactly as a read tool is called (Registry.Invoke
// with Call.Prompt): in a read-only snapshot, so get can quote the data a
// prompt is about, with the entity checks of In's ref-tagged fields and
// the tool options' Guards. Arguments that reference an entity kind
// complete their IDs through Entity.Complete (Registry.Complete).
//
// name follows the tool-name rules and shares their namespace.
func Prompt[In any](name, description string, get func(*ReadCtx, In) ([]Message, error), opts ...Option) *Tool {
	t := define(name, description, true, opts, func(c *ReadCtx, in In) (promptOut, error) {
		msgs, err := get(c, in)
		if err == nil && msgs == nil {
			msgs = []Message{}
		}
		return promptOut{Messages: msgs}, err
	})
	t.kind = kindPrompt
	t.spec.Prompt = true
	return t
}

// param returns t's top-level parameter named name, or nil.
func param(t *Tool, name string) *Param {
	for i := range t.spec.Params {
		if t.spec.Params[i].Name == name {
			return &t.spec.Params[i]
		}
	}
	return nil
}

// uriTemplate is a URI template of RFC 6570's first level: literal text and
// {variables}, each matching one non-empty path segment.
type uriTemplate struct {
	raw  string
	vars []string
	re   *regexp.Regexp
}

var templateVar = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func parseTemplate(uri string) (*uriTemplate, error) {
	if uri == "" {
		return nil, fmt.Errorf("the URI is empty")
	}
	if strings.ContainsAny(templateVar.ReplaceAllString(uri, ""), "{}") {
		return nil, fmt.Errorf("%q has a brace that is not a {variable}; a variable is letters, digits and underscores in braces", uri)
	}
	u, err := url.Parse(templateVar.ReplaceAllString(uri, "x"))
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("%q is not an absolute URI (or URI template): give it a scheme, as in \"note://{noteId}\"", uri)
	}
	t := &uriTemplate{raw: uri}
	var re strings.Builder
	re.WriteString("^")
	last := 0
	for _, m := range templateVar.FindAllStringSubmatchIndex(uri, -1) {
		re.WriteString(regexp.QuoteMeta(uri[last:m[0]]))
		v := uri[m[2]:m[3]]
		if t.has(v) {
			return nil, fmt.Errorf("variable {%s} appears twice in %q", v, uri)
		}
		t.vars = append(t.vars, v)
		re.WriteString(`([^/?#]+)`)
		last = m[1]
	}
	re.WriteString(regexp.QuoteMeta(uri[last:]))
	re.WriteString("$")
	t.re = regexp.MustCompile(re.String())
	return t, nil
}

func (t *uriTemplate) has(v string) bool {
	for _, x := range t.vars {
		if x == v {
			return true
		}
	}
	return false
}

// match returns the variables of uri, unescaped, or ok false when uri does
// not match.
func (t *uriTemplate) match(uri string) (vars map[string]string, ok bool) {
	m := t.re.FindStringSubmatch(uri)
	if m == nil {
		return nil, false
	}
	vars = make(map[string]string, len(t.vars))
	for i, v := range t.vars {
		s, err := url.PathUnescape(m[i+1])
		if err != nil {
			return nil, false
		}
		vars[v] = s
	}
	return vars, true
}

// fill expands the template with the first string value each variable has
// in the maps given, escaping it; ok is false when a variable has none.
func (t *uriTemplate) fill(values ...map[string]any) (uri string, ok bool) {
	if len(t.vars) == 0 {
		return t.raw, true
	}
	uri = t.raw
	for _, v := range t.vars {
		var s string
		for _, m := range values {
			if x, isString := m[v].(string); isString && x != "" {
				s = x
				break
			}
		}
		if s == "" {
			return "", false
		}
		uri = strings.Replace(uri, "{"+v+"}", url.PathEscape(s), 1)
	}
	return uri, true
}
