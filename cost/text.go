package cost

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// WriteText writes the report as a table: one line per tool with its
// tokens in each shape, then one line per module and the catalog's total.
// Estimated counts carry a "~"; a tool a format cannot express shows "-"
// there, and the reason follows the table.
func (c *Catalog) WriteText(w io.Writer) error {
	var b strings.Builder
	what := "every tool"
	if !c.AllTools {
		what = fmt.Sprintf("the tools of tenant %q", c.Tenant)
	}
	fmt.Fprintf(&b, "Tokens of the tool definitions: %s, counted with %s; ~ marks an estimate (%s × %s).\n",
		what, c.Encoding, c.Encoding, strconv.FormatFloat(c.EstimateFactor, 'g', -1, 64))
	cell := func(s string, n int, ok bool) string {
		switch {
		case !ok:
			return "-"
		case isEstimate(s):
			return "~" + strconv.Itoa(n)
		}
		return strconv.Itoa(n)
	}
	// The lines as cells: tool (or module, or total), module, one per shape.
	head := append([]string{"tool", "module"}, c.Shapes...)
	lines := [][]string{head}
	rows := c.index()
	for _, t := range c.Tools {
		l := []string{t, ""}
		for _, s := range c.Shapes {
			r, ok := rows[rowKey{t, s}]
			if ok {
				l[1] = r.Module
			}
			l = append(l, cell(s, r.Tokens, ok))
		}
		lines = append(lines, l)
	}
	sums := map[rowKey]int{} // by module (in tool) and shape; "" for the total
	for _, r := range c.Rows {
		sums[rowKey{r.Module, r.Shape}] += r.Tokens
		sums[rowKey{"", r.Shape}] += r.Tokens
	}
	for _, m := range c.Modules() {
		l := []string{"module " + m, ""}
		for _, s := range c.Shapes {
			l = append(l, cell(s, sums[rowKey{m, s}], true))
		}
		lines = append(lines, l)
	}
	total := []string{"total", ""}
	for _, s := range c.Shapes {
		total = append(total, cell(s, sums[rowKey{"", s}], true))
	}
	lines = append(lines, total)
	widths := make([]int, len(head))
	for _, l := range lines {
		for i, v := range l {
			widths[i] = max(widths[i], len(v))
		}
	}
	for _, l := range lines {
		var line strings.Builder
		for i, v := range l {
			pad := strings.Repeat(" ", widths[i]-len(v))
			switch i {
			case 0:
				line.WriteString(v + pad)
			case 1:
				line.WriteString("  " + v + pad)
			default: // numbers, and their heads, aligned right
				line.WriteString("  " + pad + v)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	for _, u := range c.Unsupported {
		fmt.Fprintf(&b, "left out: %v\n", u)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Budget bounds what a catalog may cost, in tokens, in every shape
// reported. A zero field sets no bound.
type Budget struct {
	// Total bounds the whole catalog: the sum of its tools.
	Total int
	// Tool bounds each tool's definition.
	Tool int
}

// ErrOverBudget is what Check's errors wrap (errors.Is finds it).
var ErrOverBudget = errors.New("cost: over budget")

// Check returns nil if the catalog fits the budget in every shape it
// reports, else an error wrapping ErrOverBudget with one line per excess:
// for each shape whose total is over, the largest tools that together make
// up the excess (the ones to trim or leave out); for each tool over the
// per-tool bound, its most expensive shape.
func (c *Catalog) Check(b Budget) error {
	var errs []error
	if b.Total > 0 {
		for _, s := range c.Shapes {
			total := c.Total(s)
			if total <= b.Total {
				continue
			}
			excess := total - b.Total
			rows := slices.DeleteFunc(slices.Clone(c.Rows), func(r Row) bool { return r.Shape != s })
			slices.SortStableFunc(rows, func(x, y Row) int { return cmp.Compare(y.Tokens, x.Tokens) })
			var names []string
			sum := 0
			for _, r := range rows {
				if sum >= excess {
					break
				}
				names = append(names, fmt.Sprintf("%s (%d)", r.Tool, r.Tokens))
				sum += r.Tokens
			}
			//lint:ignore ST1005 the message ends with the sentence that says what to do; CI logs print it as is
			errs = append(errs, fmt.Errorf("%w: the catalog costs %d tokens in %s%s, %d over the budget of %d; the largest tools, together %d: %s. Shorten their descriptions, or leave tools out of the scope.",
				ErrOverBudget, total, title(s), estimated(s), excess, b.Total, sum, strings.Join(names, ", ")))
		}
	}
	if b.Tool > 0 {
		worst := make(map[string]Row, len(c.Tools)) // each tool's most expensive row
		for _, r := range c.Rows {
			if r.Tokens > worst[r.Tool].Tokens {
				worst[r.Tool] = r
			}
		}
		for _, t := range c.Tools {
			if worst := worst[t]; worst.Tokens > b.Tool {
				//lint:ignore ST1005 the message ends with the sentence that says what to do; CI logs print it as is
				errs = append(errs, fmt.Errorf("%w: tool %s costs %d tokens in %s%s, %d over the per-tool budget of %d. Shorten its description or its parameters' descriptions.",
					ErrOverBudget, t, worst.Tokens, title(worst.Shape), estimated(worst.Shape), worst.Tokens-b.Tool, b.Tool))
			}
		}
	}
	return errors.Join(errs...)
}

// title returns the full name of the format named s, such as "Anthropic
// Messages" or "MCP tools/list".
func title(s string) string {
	if c, ok := chatShape(s); ok && c != 0 {
		return c.String()
	}
	if s == mcpShape {
		return "MCP tools/list"
	}
	return s
}

func estimated(s string) string {
	if isEstimate(s) {
		return " (estimated)"
	}
	return ""
}

type rowKey struct {
	tool  string
	shape string
}

// index returns the rows by tool and shape.
func (c *Catalog) index() map[rowKey]Row {
	m := make(map[rowKey]Row, len(c.Rows))
	for _, r := range c.Rows {
		m[rowKey{r.Tool, r.Shape}] = r
	}
	return m
}
