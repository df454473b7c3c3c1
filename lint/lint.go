// Package lint checks the conventions that keep an llmtool tool set cheap
// and clear for a model: short descriptions, described parameters, stated
// defaults, names every target accepts, and the documentation the man
// catalog and chat UIs show.
//
// # Use
//
// Run [Require] in a test of the application or of a module. A registry
// for linting needs no database:
//
//	func TestToolConventions(t *testing.T) {
//		reg, err := llmtool.NewRegistry(nil, nil, notes.Tools)
//		if err != nil {
//			t.Fatal(err)
//		}
//		lint.Require(t, reg, nil)
//	}
//
// [Check] returns the findings instead, for a start-up check or a tool of
// one's own. Both take an [*Options], nil for the defaults: a description
// budget, rules to skip everywhere or for one tool (a documented exception),
// and whether to lint llmtool's own tools too.
//
// # What it reads
//
// The linter sees the tools as a model and a host see them: every tool's
// [llmtool.Spec] as [llmtool.Registry.List] returns it with
// [llmtool.ListOptions].All (switched on or not, whatever any tenant
// allows, after running the registry's loaders), and the input JSON Schema
// in [llmtool.Spec.InputSchema], from which it reads the parameters, their
// descriptions, defaults and enums, nested ones too. A tool defined with [llmtool.InputSchema] is linted on the
// schema it supplied, which is what the model gets.
//
// # Rules
//
// Each rule has a name, reported with its findings and accepted by
// [Options.Skip] and [Options.SkipFor]:
//
//	lean-description            the description fits a budget of approximate tokens
//	                            (Options.DescriptionBudget; default 60):
//	                            it is sent with every request, so details belong in the man page
//	repeated-param-description  the description does not repeat a parameter's description,
//	                            which ships in the same payload
//	param-description           every parameter, nested ones too, has a description
//	default-stated              a parameter with a default says "(default X)" with the same X
//	                            as the schema default, and one without a default says none
//	name                        the name is lower_snake_case and valid for every target
//	summary                     the tool has a Summary for the man catalog
//	friendly-name               a write tool has a friendly name (llmtool.FriendlyName), in the
//	                            imperative: "Create note", not "Creating note"
//	man-examples                the tool has a ManPage with an EXAMPLES section
//	entity-ref                  every ref tag names a declared entity kind: the registry refuses
//	                            a module that gets this wrong, so this reports a loader's module
//	enum-separator              an enum tag separates its values with "|", not commas:
//	                            enum:"a,b,c" allows the one value "a,b,c"
//	loader                      every loader resolved
//
// Resources and prompts (llmtool.Resource, llmtool.Prompt) are linted like
// tools, except for summary and man-examples: the man catalog lists tools
// only.
//
// # By design
//
// Friendly names from a host's per-locale message catalog do not count:
// the rule asks for the definition's own, which every locale falls back
// to.
//
// The schema cannot tell enum:"a,b" from the JSON-array tag
// enum:`["a,b"]`: both allow the one value "a,b". So enum-separator reports
// any enum of one string value that has a comma and no "|", however it was
// written; a tool that means it skips the rule with [Options.SkipFor].
// Enums of two values or more are never reported.
package lint

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/llmtool/llmtool"
	ischema "github.com/llmtool/llmtool/internal/schema" // RefError; this package has a schema type of its own
	"github.com/llmtool/llmtool/internal/toolname"
)

// defaultDescriptionBudget is the description budget of [Check], in
// approximate tokens (about four characters each).
const defaultDescriptionBudget = 60

// The rules, by the name reported in [Finding.Rule] and accepted by
// [Options.Skip]: the names of the package documentation's table.
const (
	ruleLeanDescription   = "lean-description"           // the description fits the budget
	ruleRepeatedParamDesc = "repeated-param-description" // the description repeats no parameter's
	ruleParamDescription  = "param-description"          // every parameter has a description
	ruleDefaultStated     = "default-stated"             // "(default X)" agrees with the schema default
	ruleName              = "name"                       // lower_snake_case, valid for every target
	ruleSummary           = "summary"                    // a Summary for the man catalog
	ruleFriendlyName      = "friendly-name"              // a write tool's friendly name, imperative
	ruleManExamples       = "man-examples"               // a ManPage with an EXAMPLES section
	ruleEntityRef         = "entity-ref"                 // ref tags name declared entity kinds
	ruleEnumSeparator     = "enum-separator"             // enum tags separate values with "|"
	ruleLoader            = "loader"                     // every loader resolved
)

// Options configures [Check] and [Require]. A nil *Options, like the zero
// value, gives the defaults.
type Options struct {
	// DescriptionBudget is the lean-description budget in approximate
	// tokens. Zero means 60.
	DescriptionBudget int

	// IncludeBuiltins lints llmtool's own tools (man) too. They are left
	// out by default, since the host cannot change them; llmtool's tests
	// lint them.
	IncludeBuiltins bool

	// Skip turns rules off for every tool.
	Skip []string

	// SkipFor turns rules off for one tool each, for documented
	// exceptions: it maps a tool's name to the rules it may break.
	SkipFor map[string][]string
}

// Finding is one convention a tool breaks.
type Finding struct {
	Tool    string // the tool, "" for the registry as a whole
	Rule    string // the rule's name, such as "default-stated"
	Message string // what is wrong and how to fix it
}

// String returns "tool: message [rule]".
func (f Finding) String() string {
	if f.Tool == "" {
		return f.Message + " [" + f.Rule + "]"
	}
	return f.Tool + ": " + f.Message + " [" + f.Rule + "]"
}

// Require fails the test, listing every finding, if [Check] finds
// anything.
func Require(t testing.TB, reg *llmtool.Registry, opts *Options) {
	t.Helper()
	fs := Check(reg, opts)
	for _, f := range fs {
		t.Errorf("llmtool lint: %s", f)
	}
	if len(fs) > 0 {
		t.FailNow()
	}
}

// builtinModule is the module of llmtool's own tools.
const builtinModule = "llmtool"

// Check returns the findings of every rule over every tool of reg, in
// registration order, after any loader's; opts may be nil.
func Check(reg *llmtool.Registry, opts *Options) []Finding {
	l := &linter{budget: defaultDescriptionBudget, skip: map[string]bool{}}
	if opts != nil {
		if opts.DescriptionBudget != 0 {
			l.budget = opts.DescriptionBudget
		}
		l.builtins = opts.IncludeBuiltins
		for _, r := range opts.Skip {
			l.skip[r] = true
		}
		for tool, rules := range opts.SkipFor {
			for _, r := range rules {
				l.skip[tool+"\x00"+r] = true
			}
		}
	}
	specs, err := reg.List(context.Background(), &llmtool.ListOptions{All: true})
	for _, e := range joined(err) {
		l.loader(e)
	}
	for _, s := range specs {
		if s.Module == builtinModule && !l.builtins {
			continue
		}
		l.tool(s)
	}
	return l.out
}

type linter struct {
	budget   int
	builtins bool
	skip     map[string]bool // rule or "tool\x00rule"
	out      []Finding
}

func (l *linter) add(tool, rule, format string, args ...any) {
	if l.skip[rule] || l.skip[tool+"\x00"+rule] {
		return
	}
	l.out = append(l.out, Finding{Tool: tool, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// joined splits the errors.Join of the registry's loader errors.
func joined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// loader reports a loader's failure: a module it returned that references
// an undeclared entity kind (which the registry refused), or any other.
func (l *linter) loader(err error) {
	var re *ischema.RefError
	if !errors.As(err, &re) {
		l.add("", ruleLoader, "%v; fix the loader so its module registers", err)
		return
	}
	msg := re.Error()
	// The registry names the loader first: `llmtool: loader "name": ...`.
	if rest, ok := strings.CutPrefix(err.Error(), "llmtool: loader "); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			msg += " (loader " + q + ")"
		}
	}
	l.add(re.Tool, ruleEntityRef, "%s", msg)
}

var snakeName = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// approxTokens estimates a text's tokens at four characters each.
func approxTokens(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }

func (l *linter) tool(s *llmtool.Spec) {
	name := s.Name
	if err := toolname.Validate(name); err != nil {
		l.add(name, ruleName, "%v", err)
	} else if !snakeName.MatchString(name) || len(name) > 64 {
		l.add(name, ruleName, "name %q is not lower_snake_case of at most 64 characters; rename it, such as %q", name, snakeCase(name))
	}
	if n := approxTokens(s.Description); n > l.budget {
		l.add(name, ruleLeanDescription, "description is about %d tokens, over the budget of %d; keep one or two sentences and move details to the man page", n, l.budget)
	}
	// The man catalog lists tools, not resources and prompts.
	catalogued := s.URI == "" && !s.Prompt
	if catalogued && strings.TrimSpace(s.Summary) == "" {
		l.add(name, ruleSummary, "no summary for the man catalog; add llmtool.Summary(\"...\") with one short line")
	}
	if !s.ReadOnly {
		friendly := s.FriendlyName
		if friendly == name || strings.TrimSpace(friendly) == "" {
			l.add(name, ruleFriendlyName, "write tool without a friendly name; add llmtool.FriendlyName(\"...\") in the imperative, such as %q", imperativeExample(name))
		} else if why := notImperative(friendly); why != "" {
			l.add(name, ruleFriendlyName, "friendly name %q %s; use the imperative, such as %q", friendly, why, imperativeExample(name))
		}
	}
	if !catalogued {
		// no man page needed
	} else if strings.TrimSpace(s.ManPage) == "" {
		l.add(name, ruleManExamples, "no man page; add llmtool.ManPage with an EXAMPLES section")
	} else if !hasExamples(s.ManPage) {
		l.add(name, ruleManExamples, "man page has no EXAMPLES section; add a line EXAMPLES followed by example calls")
	}
	if root := parseSchema(s.InputSchema); root != nil {
		l.params(name, strings.ToLower(s.Description), root, root, "", nil)
	}
}

var defaultStatement = regexp.MustCompile(`\(default:? ([^)]*)\)`)

// defaultStated checks that a parameter's description states its default,
// def (JSON, nil if none), and no other.
func (l *linter) defaultStated(tool, param, desc string, def []byte) {
	m := defaultStatement.FindStringSubmatch(desc)
	if def == nil {
		if m != nil {
			l.add(tool, ruleDefaultStated, "parameter %s says (default %s) but has no default; add the tag default:%q, or remove the statement", param, m[1], strings.Trim(m[1], `"`))
		}
		return
	}
	want := string(def)
	if len(want) > 0 && want[0] == '"' {
		want = strings.Trim(want, `"`)
	}
	if m == nil {
		l.add(tool, ruleDefaultStated, "parameter %s has the default %s but its description does not say so; end it with \"(default %s)\"", param, def, want)
		return
	}
	if got := strings.Trim(strings.TrimSpace(m[1]), `"`); got != want {
		l.add(tool, ruleDefaultStated, "parameter %s says (default %s) but its default is %s; make them agree", param, m[1], def)
	}
}

func hasExamples(page string) bool {
	lines := strings.Split(page, "\n")
	for i, line := range lines {
		h := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
		h = strings.TrimSuffix(h, ":")
		if !strings.EqualFold(h, "EXAMPLES") {
			continue
		}
		for _, rest := range lines[i+1:] {
			if strings.TrimSpace(rest) != "" {
				return true
			}
		}
	}
	return false
}

// notImperative says why a label does not read as an imperative, or "".
func notImperative(label string) string {
	w, _, _ := strings.Cut(strings.TrimSpace(label), " ")
	w = strings.ToLower(strings.Trim(w, ".,:;!?"))
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ing"):
		return "starts with a gerund"
	case len(w) > 3 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed") && w != "embed" && w != "shred":
		return "starts with a past participle"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return "starts with a third-person verb"
	}
	return ""
}

// imperativeExample turns create_note into "Create note".
func imperativeExample(name string) string {
	s := strings.ReplaceAll(snakeCase(name), "_", " ")
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// snakeCase turns getNote or Get-Note into get_note.
func snakeCase(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r >= 'A' && r <= 'Z':
			if i > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
			b.WriteRune(r + 'a' - 'A')
		case r == '-' || r == '.' || r == ' ':
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
