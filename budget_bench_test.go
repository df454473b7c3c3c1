package llmtool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/llmtool/llmtool"
)

// BenchmarkOutputBudget measures what a budget costs the call path: one
// read Invoke of list_notes (plain_notes: no budget of its own) returning
// 1,000 notes (about 35 KB), on one registry, per path and round, in an
// order shuffled every round by a seeded generator:
//
//   - none: no budget;
//   - fits: a consumer budget the result fits (the check only);
//   - cut: a consumer budget of 16 KB, which cuts the result to about 450
//     notes (decode the top level, split the list, encode the marker).
//
// It reports fits/none and cut/none (total and median times) and each
// path's median in ns; ns/op is one round.
func BenchmarkOutputBudget(b *testing.B) {
	db := benchDB(b)
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()}, budgetModule)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { reg.Close() })
	args, _ := json.Marshal(ListNotesIn{N: 1000, Query: "plan"})
	calls := []llmtool.Call{
		{Tool: "plain_notes", Args: args},
		{Tool: "plain_notes", Args: args, OutputBudget: 1 << 20},
		{Tool: "plain_notes", Args: args, OutputBudget: 16 << 10},
	}
	sizes := make([]int, len(calls))
	t := shuffledRounds(b, len(calls), func(j int) {
		res := reg.Invoke(context.Background(), calls[j])
		if res.IsError {
			b.Fatal(res.Text())
		}
		sizes[j] = len(res.JSON)
	})
	t.report(b, 1, 0, "fits/none")
	t.report(b, 2, 0, "cut/none")
	for i, name := range []string{"none", "fits", "cut"} {
		b.ReportMetric(float64(t.median(i)), "ns-p50-"+name)
		b.ReportMetric(float64(sizes[i]), "bytes-"+name)
	}
}
