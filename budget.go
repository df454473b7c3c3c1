package llmtool

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/llmtool/llmtool/internal/jsonenc"
	"github.com/llmtool/llmtool/internal/text"
)

// Output budgets.
//
// A model pays for every byte a tool returns, and a client that gets too
// much cuts it blindly. An output budget bounds the bytes of a tool's
// result, and has two homes, one per party: the tool's own
// (OutputBudget), which its author sets, and the consumer's
// (Call.OutputBudget), which the host sets for each consumer (a chat with
// a small context window, an MCP client) through the adapter's own
// OutputBudget option; the smaller of the two when both are set. Budgets are counted in bytes, which is exact;
// for a budget in tokens, count about 4 bytes per token, the usual figure
// for English text and JSON with the providers' tokenizers. A result over the budget is cut
// by the registry, inside the call's transaction, so that it stays valid
// against the tool's output schema:
//
//   - the largest top-level list of the result keeps its longest prefix
//     that fits, of one item at least;
//   - Out's *Truncated field says so: how many items are shown, of how
//     many, which list, and a sentence that tells the model how to get the
//     rest (from Continue, when the tool has it).
//
// A result that cannot be cut to fit (Out has no *Truncated field, no
// top-level list, or is over the budget with one item of its list) fails with
// KindLimited and a message that tells the model to narrow the request;
// a write's changes are rolled back, so the message says nothing was
// saved. Rich results (content parts), resources and prompts are not
// budgeted.

// Truncated marks a result that the registry cut to fit an output budget.
// A tool whose result may be cut declares a field of this type in Out,
// with omitempty, so that a result that was not cut has none:
//
//	type SearchOut struct {
//		Notes     []Note             `json:"notes"`
//		Truncated *llmtool.Truncated `json:"truncated,omitempty"`
//	}
//
// The handler leaves it nil; the registry fills it.
type Truncated struct {
	// Shown is how many items of the list the result keeps.
	Shown int `json:"shown" desc:"How many items of the list this result shows."`
	// Total is how many items the tool returned.
	Total int `json:"total" desc:"How many items the tool returned before the result was cut."`
	// List is the JSON name of the list that was cut.
	List string `json:"list" desc:"The list that was cut."`
	// Next tells the model how to get the rest, as a sentence such as
	// "Showing 50 of 1,240 notes; call search_notes with
	// {"offset":50,"query":"plan"} for the rest."
	Next string `json:"next" desc:"How to get the items not shown."`
}

// OutputBudget bounds the tool's results to this many bytes of JSON (about
// 4 bytes per token): a longer result is cut to fit, marked by Out's
// *Truncated field, which the tool's definition panics without. A
// consumer's budget (Call.OutputBudget) may lower it.
func OutputBudget(bytes int) Option {
	return func(c *toolConfig) { c.spec.OutputBudget = bytes }
}

// Continue tells the model how to get the rest of a result cut to fit an
// output budget: next gets the call's arguments and how many items the cut
// result shows, and returns the arguments of the call that continues, such
// as the same query with the offset moved on by shown. The registry puts
// them in the Truncated sentence: "Showing 50 of 1,240 notes; call
// search_notes with {"offset":50,"query":"plan"} for the rest." Without
// Continue, the sentence asks the model to narrow its arguments. next's In
// type must be the tool's.
func Continue[In any](next func(in In, shown int) In) Option {
	return func(c *toolConfig) { c.next = next }
}

// budgetKey carries Call.OutputBudget from the call path to the cut
// (Registry.run), through the transaction's context.
type budgetKey struct{}

// budget is how a tool's result is cut: Out's *Truncated field and the
// tool's Continue.
type budget struct {
	marker string                                                   // the JSON name of Out's *Truncated field; "" if none
	next   func(c *ReadCtx, args []byte, shown int) ([]byte, error) // Continue, over JSON arguments; nil if none
}

var truncatedType = reflect.TypeFor[*Truncated]()

// planBudget checks a tool's budget options at definition and finds Out's
// *Truncated field.
func planBudget[In any](name string, outT reflect.Type, cfg *toolConfig) budget {
	var b budget
	if outT.Kind() == reflect.Struct {
		for _, f := range reflect.VisibleFields(outT) {
			if f.Type != truncatedType || !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			jname, opts, _ := strings.Cut(tag, ",")
			if jname == "-" {
				continue
			}
			if !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,") {
				panic(fmt.Sprintf("llmtool: tool %q: Out's *llmtool.Truncated field %s needs omitempty, so that a result that was not cut has none: `json:\"%s,omitempty\"`", name, f.Name, cmp.Or(jname, f.Name)))
			}
			b.marker = cmp.Or(jname, f.Name)
		}
	}
	if cfg.spec.OutputBudget < 0 {
		panic(fmt.Sprintf("llmtool: tool %q: OutputBudget(%d) is negative; give the budget in bytes, or leave it out for none", name, cfg.spec.OutputBudget))
	}
	if b.marker == "" && (cfg.spec.OutputBudget > 0 || cfg.next != nil) {
		panic(fmt.Sprintf("llmtool: tool %q: OutputBudget and Continue need a field of type *llmtool.Truncated in Out to mark a cut result; add `Truncated *llmtool.Truncated `json:\"truncated,omitempty\"`` to %s", name, outT))
	}
	if cfg.next != nil {
		f, ok := cfg.next.(func(In, int) In)
		if !ok {
			panic(fmt.Sprintf("llmtool: tool %q: Continue's function has type %T; this tool's must be func(%s, int) %[3]s", name, cfg.next, reflect.TypeFor[In]()))
		}
		b.next = func(c *ReadCtx, args []byte, shown int) ([]byte, error) {
			var in In // decoded as the handler's, defaults set
			if err := c.call.decodeIn(args, &in); err != nil {
				return nil, err
			}
			return jsonenc.Marshal(f(in, shown))
		}
	}
	return b
}

// outputBudget returns the budget of a call of t under ctx: the smaller of
// the tool's and the consumer's (Call.OutputBudget); 0 for none.
func (r *Registry) outputBudget(ctx context.Context, t *Tool) int {
	b := t.spec.OutputBudget
	if c, _ := ctx.Value(budgetKey{}).(int); c > 0 && (b == 0 || c < b) {
		b = c
	}
	return b
}

// member is one top-level property of a result, in its order.
type member struct {
	name string          // the key
	key  []byte          // the key, as encoded
	val  json.RawMessage // the value, as encoded
	ends []int           // a list's elements' ends in val (splitArray)
}

// fit cuts out, a result of t longer than limit bytes, to fit: the largest
// top-level list keeps its longest prefix that fits with the Truncated
// marker. It returns a KindLimited error when the result cannot be cut.
func (t *Tool) fit(c *ReadCtx, args, out []byte, limit int) ([]byte, error) {
	members, cut := t.members(out)
	if cut < 0 {
		return nil, t.overBudget(len(out), limit)
	}
	list, ends := members[cut].val, members[cut].ends
	name := members[cut].name
	// The result's size with the list empty and no marker; a candidate
	// adds its elements and its marker, measured for each candidate since
	// its sentence and counts grow with it.
	fixed := 2 // {}
	for i, m := range members {
		if i > 0 {
			fixed++ // ,
		}
		if i == cut {
			fixed += len(m.key) + 1 + 2 // "key":[]
		} else {
			fixed += len(m.key) + 1 + len(m.val)
		}
	}
	markerKey := jsonenc.AppendString(nil, t.budget.marker)
	size := func(n int, marker []byte) int {
		s := fixed + 1 + len(markerKey) + 1 + len(marker) // ,"marker":{...}
		if n > 0 {
			s += ends[n-1] - 1 // the first n elements, after "["
		}
		return s
	}
	// The largest n whose result fits: sizes grow with n. The whole list
	// does not fit: the result was over the budget without the marker.
	// At least one item, or the model's next call, asking for the rest,
	// would get none again.
	var marker []byte
	shown := -1
	for lo, hi := 1, len(ends)-1; lo <= hi; {
		mid := (lo + hi) / 2
		m, err := t.marker(c, args, name, mid, len(ends))
		if err != nil {
			return nil, err
		}
		if size(mid, m) <= limit {
			shown, marker, lo = mid, m, mid+1
		} else {
			hi = mid - 1
		}
	}
	if shown < 0 {
		return nil, t.overBudget(len(out), limit)
	}
	b := make([]byte, 0, size(shown, marker))
	b = append(b, '{')
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, m.key...), ':')
		if i != cut {
			b = append(b, m.val...)
			continue
		}
		b = append(append(b, list[:ends[shown-1]]...), ']')
	}
	b = append(append(append(append(b, ','), markerKey...), ':'), marker...)
	return append(b, '}'), nil
}

// members splits a result into its top-level properties, without the
// marker's, and returns the index of the largest list; -1 when the tool
// has no marker or the result no list.
func (t *Tool) members(out []byte) ([]member, int) {
	if t.budget.marker == "" {
		return nil, -1
	}
	ms, ok := splitObject(out)
	if !ok {
		return nil, -1
	}
	cut := -1
	kept := ms[:0]
	for _, m := range ms {
		if m.name == t.budget.marker {
			continue // a marker the handler set is replaced
		}
		if m.val[0] == '[' && (cut < 0 || len(m.val) > len(kept[cut].val)) {
			cut = len(kept)
		}
		kept = append(kept, m)
	}
	return kept, cut
}

// splitObject splits a JSON object, as the encoder wrote it (valid), into
// its members in order, in one pass: a result is cut on the call path,
// and encoding/json's decoder costs several times as much (the reference
// in budget_internal_test.go).
func splitObject(b []byte) ([]member, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	var ms []member
	for i = skipSpace(b, i+1); i < len(b) && b[i] != '}'; {
		if b[i] != '"' {
			return nil, false
		}
		k := skipString(b, i)
		var m member
		m.key = b[i:k]
		if bytes.IndexByte(m.key, '\\') < 0 && utf8.Valid(m.key) {
			m.name = string(m.key[1 : len(m.key)-1])
		} else if json.Unmarshal(m.key, &m.name) != nil {
			return nil, false
		}
		i = skipSpace(b, k)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		var v int
		if i < len(b) && b[i] == '[' {
			// A list is split as it is skipped, should it be the one cut.
			ends, end, ok := splitArray(b[i:])
			if !ok {
				return nil, false
			}
			m.ends, v = ends, i+end
		} else {
			v = skipValue(b, i)
		}
		if v <= i {
			return nil, false
		}
		m.val = b[i:v]
		ms = append(ms, m)
		if i = skipSpace(b, v); i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return ms, i < len(b)
}

// splitArray returns the end of each element of the JSON array at the
// start of b, as the encoder wrote it (b[:ends[n-1]] is the array's first
// n elements after its "["), and the end of the array. One loop over the
// bytes, with no call per element.
func splitArray(b []byte) (ends []int, end int, ok bool) {
	if len(b) == 0 || b[0] != '[' {
		return nil, 0, false
	}
	depth, last, seen := 1, 0, false // last: the end of the element's last byte so far
	for j := 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			j = skipString(b, j) - 1
			last, seen = j+1, true
		case '[', '{':
			depth++
			last, seen = j+1, true
		case ']', '}':
			if depth--; depth == 0 {
				if seen {
					ends = append(ends, last)
				}
				return ends, j + 1, true
			}
			last = j + 1
		case ',':
			if depth == 1 {
				ends = append(ends, last)
				seen = false
			}
		case ' ', '\t', '\n', '\r':
		default:
			last, seen = j+1, true
		}
	}
	return nil, 0, false
}

// skipValue returns the end of the JSON value at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			for j < len(b) && !structural[b[j]] {
				j++ // a run of plain bytes: one table lookup each
			}
			if j == len(b) {
				break
			}
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && !isSpace(b[j]) {
		j++
	}
	return j
}

// structural marks the bytes skipValue stops at inside a list or object.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// skipString returns the end of the JSON string at b[i], after its quote.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// marker encodes the Truncated marker of a result showing shown of total
// items of list.
func (t *Tool) marker(c *ReadCtx, args []byte, list string, shown, total int) ([]byte, error) {
	name := t.spec.Name
	var next string
	if t.budget.next != nil {
		a, err := t.budget.next(c, args, shown)
		if err != nil {
			return nil, fmt.Errorf("llmtool: tool %s: Continue: %w", name, err)
		}
		next = fmt.Sprintf("Showing %s of %s %s; call %s with %s for the rest.", text.Group(shown), text.Group(total), list, name, a)
	} else {
		next = fmt.Sprintf("Showing %s of %s %s, as many as fit in the output budget; call %s again with narrower arguments to see the others.", text.Group(shown), text.Group(total), list, name)
	}
	return jsonenc.Marshal(Truncated{Shown: shown, Total: total, List: list, Next: next})
}

// overBudget is the failure of a result that cannot be cut to fit.
func (t *Tool) overBudget(size, limit int) error {
	saved := ""
	if !t.spec.ReadOnly {
		saved = " Nothing was saved."
	}
	return Limited("The result of %s is %s bytes, over the output budget of %s bytes, and cannot be shortened to fit.%s", t.spec.Name, text.Group(size), text.Group(limit), saved).
		Next(fmt.Sprintf("Call %s again with narrower arguments (a filter, a smaller limit) so that it returns less.", t.spec.Name))
}
