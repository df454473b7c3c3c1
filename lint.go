package llmtool

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/llmtool/llmtool/internal/schema"
)

// Lint checks the conventions that keep a tool set cheap and clear for a
// model, over every tool of a registry (switched on or not, after running
// its loaders; llmtool's own tools only with IncludeBuiltins). Each rule has a name, reported with its findings:
//
//	lean-description            the description fits a budget of approximate tokens
//	                            (DescriptionBudget; default DefaultDescriptionBudget):
//	                            it is sent with every request, so details belong in the man page
//	repeated-param-description  the description does not repeat a parameter's description,
//	                            which ships in the same payload
//	param-description           every parameter, nested ones too, has a description
//	default-stated              a parameter with a default says "(default X)" with the same X
//	                            as the schema default, and one without a default says none
//	name                        the name is lower_snake_case and valid for every target
//	summary                     the tool has a Summary for the man catalog
//	friendly-name               a write tool has a friendly name (FriendlyName or the message
//	                            catalog), in the imperative: "Create note", not "Creating note"
//	man-examples                the tool has a ManPage with an EXAMPLES section
//	entity-ref                  every ref tag names a declared entity kind (a module added
//	                            later or by a loader can still get this wrong)
//	enum-separator              an enum tag separates its values with "|", not commas:
//	                            enum:"a,b,c" allows the one value "a,b,c"
//	loader                      every loader resolved
//
// Run it in a test of the application or module, with RequireLintClean.
func Lint(reg *Registry, opts ...LintOption) []Finding {
	cfg := lintConfig{budget: DefaultDescriptionBudget, skip: map[string]bool{}}
	for _, o := range opts {
		o(&cfg)
	}
	l := &linter{cfg: cfg, reg: reg}
	_ = reg.resolve(context.Background())
	reg.mu.RLock()
	entries := append([]*entry(nil), reg.order...)
	loaders := append([]*loader(nil), reg.loaders...)
	reg.mu.RUnlock()
	for _, ld := range loaders {
		select {
		case <-ld.done:
		default:
			continue
		}
		if ld.err == nil {
			continue
		}
		var re *RefError
		if errors.As(ld.err, &re) {
			l.add(re.Tool, RuleEntityRef, "%s (loader %q)", re.Error(), ld.name)
		} else {
			l.add("", RuleLoader, "%v; fix the loader so its module registers", ld.err)
		}
	}
	decls := reg.entityMap()
	for _, e := range entries {
		if e.builtin && !cfg.builtins {
			continue
		}
		l.tool(e.tool, decls)
	}
	return l.out
}

// DefaultDescriptionBudget is the description budget of Lint, in
// approximate tokens (about four characters each).
const DefaultDescriptionBudget = 60

// The rules of Lint.
const (
	RuleLeanDescription   = "lean-description"
	RuleRepeatedParamDesc = "repeated-param-description"
	RuleParamDescription  = "param-description"
	RuleDefaultStated     = "default-stated"
	RuleName              = "name"
	RuleSummary           = "summary"
	RuleFriendlyName      = "friendly-name"
	RuleManExamples       = "man-examples"
	RuleEntityRef         = "entity-ref"
	RuleEnumSeparator     = "enum-separator"
	RuleLoader            = "loader"
)

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

// LintOption configures Lint.
type LintOption func(*lintConfig)

type lintConfig struct {
	budget   int
	skip     map[string]bool // rule or "tool\x00rule"
	builtins bool
}

// DescriptionBudget sets the lean-description budget in approximate tokens.
func DescriptionBudget(tokens int) LintOption {
	return func(c *lintConfig) { c.budget = tokens }
}

// IncludeBuiltins lints llmtool's own tools (man) too. They are left out by
// default, since the host cannot change them; llmtool's tests lint them.
func IncludeBuiltins() LintOption { return func(c *lintConfig) { c.builtins = true } }

// SkipRules turns rules off for every tool.
func SkipRules(rules ...string) LintOption {
	return func(c *lintConfig) {
		for _, r := range rules {
			c.skip[r] = true
		}
	}
}

// SkipFor turns rules off for one tool, for a documented exception.
func SkipFor(tool string, rules ...string) LintOption {
	return func(c *lintConfig) {
		for _, r := range rules {
			c.skip[tool+"\x00"+r] = true
		}
	}
}

// TestingT is the part of *testing.T that RequireLintClean uses.
type TestingT interface {
	Helper()
	Errorf(format string, args ...any)
	FailNow()
}

// RequireLintClean fails the test, listing every finding, if Lint finds
// anything:
//
//	func TestToolConventions(t *testing.T) {
//	    reg, err := llmtool.NewRegistry(nil, nil, notes.Tools)
//	    require.NoError(t, err)
//	    llmtool.RequireLintClean(t, reg)
//	}
//
// A registry for linting needs no database.
func RequireLintClean(t TestingT, reg *Registry, opts ...LintOption) {
	t.Helper()
	fs := Lint(reg, opts...)
	for _, f := range fs {
		t.Errorf("llmtool lint: %s", f)
	}
	if len(fs) > 0 {
		t.FailNow()
	}
}

type linter struct {
	cfg lintConfig
	reg *Registry
	out []Finding
}

func (l *linter) add(tool, rule, format string, args ...any) {
	if l.cfg.skip[rule] || l.cfg.skip[tool+"\x00"+rule] {
		return
	}
	l.out = append(l.out, Finding{Tool: tool, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

var snakeName = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// approxTokens estimates a text's tokens at four characters each.
func approxTokens(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }

func (l *linter) tool(t *Tool, decls map[string]entityDecl) {
	s := &t.spec
	name := s.Name
	if err := ValidateName(name); err != nil {
		l.add(name, RuleName, "%v", err)
	} else if !snakeName.MatchString(name) || len(name) > 64 {
		l.add(name, RuleName, "name %q is not lower_snake_case of at most 64 characters; rename it, such as %q", name, snakeCase(name))
	}
	if n := approxTokens(s.Description); n > l.cfg.budget {
		l.add(name, RuleLeanDescription, "description is about %d tokens, over the budget of %d; keep one or two sentences and move details to the man page", n, l.cfg.budget)
	}
	if strings.TrimSpace(s.Summary) == "" {
		l.add(name, RuleSummary, "no summary for the man catalog; add llmtool.Summary(\"...\") with one short line")
	}
	if !s.ReadOnly {
		friendly := l.reg.friendlyName(name, "en")
		if friendly == name || strings.TrimSpace(friendly) == "" {
			l.add(name, RuleFriendlyName, "write tool without a friendly name; add llmtool.FriendlyName(\"...\") in the imperative, such as %q", imperativeExample(name))
		} else if why := notImperative(friendly); why != "" {
			l.add(name, RuleFriendlyName, "friendly name %q %s; use the imperative, such as %q", friendly, why, imperativeExample(name))
		}
	}
	if strings.TrimSpace(s.ManPage) == "" {
		l.add(name, RuleManExamples, "no man page; add llmtool.ManPage with an EXAMPLES section")
	} else if !hasExamples(s.ManPage) {
		l.add(name, RuleManExamples, "man page has no EXAMPLES section; add a line EXAMPLES followed by example calls")
	}
	for _, ref := range t.refs {
		if _, ok := decls[ref.Kind]; !ok {
			l.add(name, RuleEntityRef, "field %s references entity kind %q, which no registered module declares; declare it with an llmtool.Entity and attach it with Module.WithEntities", ref.Field, ref.Kind)
		}
	}
	if t.in != nil && t.in.Root() != nil {
		l.params(name, s.Description, t.in.Root())
	}
}

// params checks the parameters of n, nested ones too.
func (l *linter) params(tool, description string, n *schema.Node) {
	descLower := strings.ToLower(description)
	n.Walk(func(p schema.ParamInfo) {
		d := strings.TrimSpace(p.Description)
		if d == "" {
			l.add(tool, RuleParamDescription, "parameter %s has no description; add a desc tag", p.Path)
		} else if core := strings.ToLower(strings.TrimSuffix(d, ".")); len(core) >= 16 && strings.Contains(descLower, core) {
			l.add(tool, RuleRepeatedParamDesc, "the description repeats the description of parameter %s, which is sent with it anyway; remove it from the description", p.Path)
		}
		l.defaultStated(tool, p.Path, d, p.Default)
		l.enumSeparator(tool, p.Path, p)
	})
}

// enumSeparator reports an enum tag written with commas where "|"
// separates values: enum:"a,b,c" is one allowed value, "a,b,c". A tag
// that has a "|" already, or a JSON array, says what it means.
func (l *linter) enumSeparator(tool, param string, p schema.ParamInfo) {
	for i, tag := range p.EnumTags {
		if !strings.Contains(tag, ",") || strings.Contains(tag, "|") {
			continue
		}
		l.add(tool, RuleEnumSeparator, "parameter %s has enum:%q, which allows the one value %s; separate values with |, as in enum:%q (for one value that contains commas, write enum:%q)",
			param, tag, p.FirstEnums[i], strings.ReplaceAll(tag, ",", "|"), "["+string(p.FirstEnums[i])+"]")
	}
}

var defaultStatement = regexp.MustCompile(`\(default:? ([^)]*)\)`)

func (l *linter) defaultStated(tool, param, desc string, def []byte) {
	m := defaultStatement.FindStringSubmatch(desc)
	if def == nil {
		if m != nil {
			l.add(tool, RuleDefaultStated, "parameter %s says (default %s) but has no default; add the tag default:%q, or remove the statement", param, m[1], strings.Trim(m[1], `"`))
		}
		return
	}
	want := string(def)
	if len(want) > 0 && want[0] == '"' {
		want = strings.Trim(want, `"`)
	}
	if m == nil {
		l.add(tool, RuleDefaultStated, "parameter %s has the default %s but its description does not say so; end it with \"(default %s)\"", param, def, want)
		return
	}
	if got := strings.Trim(strings.TrimSpace(m[1]), `"`); got != want {
		l.add(tool, RuleDefaultStated, "parameter %s says (default %s) but its default is %s; make them agree", param, m[1], def)
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
	return upperFirst(strings.ReplaceAll(snakeCase(name), "_", " "))
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
