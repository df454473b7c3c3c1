package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

type ListNotesIn struct {
	Query  string `json:"query,omitempty" desc:"Words the notes contain."`
	Offset int    `json:"offset,omitempty" desc:"How many notes to skip." minimum:"0"`
	N      int    `json:"n" desc:"Test hook: how many notes the handler returns." minimum:"0"`
	Body   int    `json:"body,omitempty" desc:"Test hook: the length of the result's preamble."`
}

type BudgetNote struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
}

type ListNotesOut struct {
	Preamble  string             `json:"preamble"`
	Notes     []BudgetNote       `json:"notes"`
	Truncated *llmtool.Truncated `json:"truncated,omitempty" desc:"Set when the list was cut to fit the output budget."`
}

// listNotes returns in.N notes after in.Offset; the registry cuts them
// to fit the budget.
func listNotes(_ *llmtool.ReadCtx, in ListNotesIn) (ListNotesOut, error) {
	out := ListNotesOut{Notes: []BudgetNote{}}
	for i := range in.N {
		id := in.Offset + i + 1
		out.Notes = append(out.Notes, BudgetNote{ID: id, Title: fmt.Sprintf("note %d", id)})
	}
	for range in.Body {
		out.Preamble += "x"
	}
	return out, nil
}

func nextNotes(in ListNotesIn, shown int) ListNotesIn {
	in.Offset += shown
	return in
}

var (
	// list_notes has its own budget of 400 bytes and says how to continue.
	budgetedNotes = llmtool.Read("list_notes", "List notes.", listNotes,
		llmtool.OutputBudget(400), llmtool.Continue(nextNotes))
	// plain_notes has no budget of its own and no Continue.
	plainNotes = llmtool.Read("plain_notes", "List notes.", listNotes)
	// blob has no *Truncated field: it cannot be cut.
	blobTool = llmtool.Read("blob", "Return a blob.",
		func(_ *llmtool.ReadCtx, in ListNotesIn) (ItemOut, error) {
			return ItemOut{ID: 1, Name: fmt.Sprintf("%0*d", in.N, 0)}, nil
		})
	// add_blob writes, then returns a result that cannot be cut.
	addBlob = llmtool.Write("add_blob", "Add an item and return a blob.",
		func(c *llmtool.WriteCtx, in AddItemIn) (ItemOut, error) {
			if _, err := c.Exec(`INSERT INTO items (name, qty) VALUES (?, ?)`, in.Name, in.Qty); err != nil {
				return ItemOut{}, err
			}
			return ItemOut{ID: 2, Name: fmt.Sprintf("%0*d", 500, 0)}, nil
		})
	budgetModule = llmtool.DefineTools("budget", budgetedNotes, plainNotes, blobTool, addBlob)
)

// budgetRegistry validates every result against its output schema, so a
// cut result that broke it would fail the call.
func budgetRegistry(t *testing.T) (*llmtool.Registry, *sql.DB) {
	db := openDB(t)
	return newRegistryOpts(t, db, &llmtool.Options{ValidateOutput: true, Logger: quietLogger()}, budgetModule), db
}

// referenceCut is the cut the registry must make, computed the slow way:
// the most notes, from the start, whose result with the marker fits.
func referenceCut(t *testing.T, tool string, in ListNotesIn, budget int, next bool) string {
	full, err := listNotes(nil, in)
	require.NoError(t, err)
	for n := len(full.Notes) - 1; n >= 1; n-- {
		out := full
		out.Notes = full.Notes[:n]
		sentence := fmt.Sprintf("Showing %d of %d notes, as many as fit in the output budget; call %s again with narrower arguments to see the others.", n, len(full.Notes), tool)
		if next {
			a, err := json.Marshal(nextNotes(in, n))
			require.NoError(t, err)
			sentence = fmt.Sprintf("Showing %d of %d notes; call %s with %s for the rest.", n, len(full.Notes), tool, a)
		}
		out.Truncated = &llmtool.Truncated{Shown: n, Total: len(full.Notes), List: "notes", Next: sentence}
		b, err := json.Marshal(out)
		require.NoError(t, err)
		if len(b) <= budget {
			return string(b)
		}
	}
	return ""
}

func TestOutputBudget(t *testing.T) {
	t.Parallel()
	over := func(tool string, size, budget int) string {
		return fmt.Sprintf("The result of %s is %d bytes, over the output budget of %d bytes, and cannot be shortened to fit. Call %s again with narrower arguments (a filter, a smaller limit) so that it returns less.", tool, size, budget, tool)
	}
	tests := []struct {
		name     string
		consumer int // Call.OutputBudget; 0 for none
		tool     string
		args     string
		want     string // the exact JSON of a success
		wantErr  string // the exact message of a failure
	}{
		{name: "under the budget", tool: "list_notes", args: `{"n":2}`,
			want: `{"preamble":"","notes":[{"id":1,"title":"note 1"},{"id":2,"title":"note 2"}]}`},
		{name: "the tool's budget", tool: "list_notes", args: `{"n":20,"query":"plan"}`,
			want: `{"preamble":"","notes":[{"id":1,"title":"note 1"},{"id":2,"title":"note 2"},{"id":3,"title":"note 3"},{"id":4,"title":"note 4"},{"id":5,"title":"note 5"},{"id":6,"title":"note 6"},{"id":7,"title":"note 7"},{"id":8,"title":"note 8"}],"truncated":{"shown":8,"total":20,"list":"notes","next":"Showing 8 of 20 notes; call list_notes with {\"query\":\"plan\",\"offset\":8,\"n\":20} for the rest."}}`},
		{name: "the consumer's budget raises nothing", consumer: 10000, tool: "list_notes", args: `{"n":20,"query":"plan"}`,
			want: `{"preamble":"","notes":[{"id":1,"title":"note 1"},{"id":2,"title":"note 2"},{"id":3,"title":"note 3"},{"id":4,"title":"note 4"},{"id":5,"title":"note 5"},{"id":6,"title":"note 6"},{"id":7,"title":"note 7"},{"id":8,"title":"note 8"}],"truncated":{"shown":8,"total":20,"list":"notes","next":"Showing 8 of 20 notes; call list_notes with {\"query\":\"plan\",\"offset\":8,\"n\":20} for the rest."}}`},
		{name: "the consumer's budget lowers the tool's", consumer: 300, tool: "list_notes", args: `{"n":20,"offset":40}`,
			want: `{"preamble":"","notes":[{"id":41,"title":"note 41"},{"id":42,"title":"note 42"},{"id":43,"title":"note 43"},{"id":44,"title":"note 44"}],"truncated":{"shown":4,"total":20,"list":"notes","next":"Showing 4 of 20 notes; call list_notes with {\"offset\":44,\"n\":20} for the rest."}}`},
		{name: "a tool without a budget of its own, under the consumer's", consumer: 300, tool: "plain_notes", args: `{"n":1000}`,
			want: `{"preamble":"","notes":[{"id":1,"title":"note 1"},{"id":2,"title":"note 2"},{"id":3,"title":"note 3"}],"truncated":{"shown":3,"total":1000,"list":"notes","next":"Showing 3 of 1,000 notes, as many as fit in the output budget; call plain_notes again with narrower arguments to see the others."}}`},
		{name: "no list left to show", consumer: 300, tool: "list_notes", args: `{"n":3,"body":200}`,
			wantErr: over("list_notes", 303, 300)},
		{name: "no marker", consumer: 100, tool: "blob", args: `{"n":200}`,
			wantErr: over("blob", 226, 100)},
		{name: "an empty list", consumer: 100, tool: "plain_notes", args: `{"n":0,"body":120}`,
			wantErr: over("plain_notes", 146, 100)},
		{name: "a write is rolled back", consumer: 100, tool: "add_blob", args: `{"name":"pear"}`,
			wantErr: "The result of add_blob is 526 bytes, over the output budget of 100 bytes, and cannot be shortened to fit. Nothing was saved. Call add_blob again with narrower arguments (a filter, a smaller limit) so that it returns less."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg, db := budgetRegistry(t)
			ctx := context.Background()
			res := reg.Invoke(ctx, llmtool.Call{Tool: tt.tool, Args: json.RawMessage(tt.args), OutputBudget: tt.consumer})
			if tt.wantErr != "" {
				require.True(t, res.IsError, res.Text())
				require.Equal(t, llmtool.KindLimited, llmtool.KindOf(res.Err))
				require.Equal(t, tt.wantErr, res.Text())
				if tt.tool == "add_blob" {
					require.Equal(t, 1, countItems(t, db))
				}
				return
			}
			require.False(t, res.IsError, res.Text())
			require.Equal(t, tt.want, string(res.JSON))
			var m map[string]any
			require.NoError(t, json.Unmarshal(res.JSON, &m))
			require.NotContains(t, m, "error")
		})
	}
}

// The size the cut result must fit in, worked out by hand above, and the
// messages with thousands separators, are checked again against the
// reference cut for many budgets and list lengths: the registry's cut is
// the reference's, byte for byte, and fits.
func TestOutputBudgetReference(t *testing.T) {
	t.Parallel()
	reg, _ := budgetRegistry(t)
	rng := rand.New(rand.NewSource(14))
	seen := map[string]int{}
	for range 200 {
		in := ListNotesIn{N: rng.Intn(60), Offset: rng.Intn(2000), Body: rng.Intn(40)}
		if rng.Intn(2) == 0 {
			in.Query = "plan"
		}
		tool := []string{"list_notes", "plain_notes"}[rng.Intn(2)]
		budget := 100 + rng.Intn(1500)
		args, err := json.Marshal(in)
		require.NoError(t, err)
		res := reg.Invoke(context.Background(), llmtool.Call{Tool: tool, Args: args, OutputBudget: budget})
		full, err := json.Marshal(must(listNotes(nil, in)))
		require.NoError(t, err)
		limit := budget
		if tool == "list_notes" {
			limit = min(budget, 400)
		}
		switch want := referenceCut(t, tool, in, limit, tool == "list_notes"); {
		case len(full) <= limit:
			seen["whole"]++
			require.False(t, res.IsError, res.Text())
			require.JSONEq(t, string(full), string(res.JSON))
		case want == "":
			seen["failed"]++
			require.True(t, res.IsError, "%s %s budget %d: %s", tool, args, limit, res.JSON)
			require.Equal(t, llmtool.KindLimited, llmtool.KindOf(res.Err))
		default:
			seen["cut"]++
			require.False(t, res.IsError, res.Text())
			require.Equal(t, want, string(res.JSON), "%s %s budget %d", tool, args, limit)
			require.LessOrEqual(t, len(res.JSON), limit)
		}
	}
	require.Len(t, seen, 3, "every outcome is exercised: %v", seen)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Budget options are checked at definition: each mistake panics with its
// fix.
func TestOutputBudgetDefinition(t *testing.T) {
	t.Parallel()
	type noOmit struct {
		Notes     []BudgetNote       `json:"notes"`
		Truncated *llmtool.Truncated `json:"truncated"`
	}
	tests := []struct {
		name   string
		define func()
		want   string
	}{
		{"budget without a marker", func() {
			llmtool.Read("t", "d", func(*llmtool.ReadCtx, struct{}) (ItemOut, error) { return ItemOut{}, nil }, llmtool.OutputBudget(100))
		}, "llmtool: tool \"t\": OutputBudget and Continue need a field of type *llmtool.Truncated in Out to mark a cut result; add `Truncated *llmtool.Truncated `json:\"truncated,omitempty\"`` to llmtool_test.ItemOut"},
		{"Continue without a marker", func() {
			llmtool.Read("t", "d", func(*llmtool.ReadCtx, ListNotesIn) (ItemOut, error) { return ItemOut{}, nil }, llmtool.Continue(nextNotes))
		}, "llmtool: tool \"t\": OutputBudget and Continue need a field of type *llmtool.Truncated in Out to mark a cut result; add `Truncated *llmtool.Truncated `json:\"truncated,omitempty\"`` to llmtool_test.ItemOut"},
		{"Continue of another In", func() {
			llmtool.Read("t", "d", func(*llmtool.ReadCtx, GetItemIn) (ListNotesOut, error) { return ListNotesOut{}, nil }, llmtool.Continue(nextNotes))
		}, "llmtool: tool \"t\": Continue's function has type func(llmtool_test.ListNotesIn, int) llmtool_test.ListNotesIn; this tool's must be func(llmtool_test.GetItemIn, int) llmtool_test.GetItemIn"},
		{"marker without omitempty", func() {
			llmtool.Read("t", "d", func(*llmtool.ReadCtx, struct{}) (noOmit, error) { return noOmit{}, nil })
		}, "llmtool: tool \"t\": Out's *llmtool.Truncated field Truncated needs omitempty, so that a result that was not cut has none: `json:\"truncated,omitempty\"`"},
		{"negative budget", func() {
			llmtool.Read("t", "d", listNotes, llmtool.OutputBudget(-1))
		}, "llmtool: tool \"t\": OutputBudget(-1) is negative; give the budget in bytes, or leave it out for none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.PanicsWithValue(t, tt.want, tt.define)
		})
	}
}
