package llmtool_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// BenchmarkApprovalRatio compares a write that needs approval, the whole
// path through Invoke (the call that previews and rolls back, then the
// call with the approved token that runs again and commits), with one
// plain write of the same tool (add_item) on the same registry, in the
// same run: one of each per round, in an order shuffled every round by a
// seeded generator, so both see the same machine load. The target is at
// most about two plain writes. It reports the ratio of total times and of
// median times ("-p50"), and each path's p10, p50 and p90 in ns. ns/op is
// one round: both paths.
func BenchmarkApprovalRatio(b *testing.B) {
	db := benchDB(b)
	reg := benchRegistry(b, db)
	plainCtx := context.Background()
	approveCtx := llmtool.WithScope(context.Background(), "approve")
	enableWrites(b, reg, approveCtx)
	require.NoError(b, reg.SetApproval(context.Background(), "approve", "add_item", true))
	call := llmtool.Call{Tool: "add_item", Args: insertArgs}
	paths := []func(){
		func() { // plain
			if res := reg.Invoke(plainCtx, call); res.IsError {
				b.Fatal(res.Text())
			}
		},
		func() { // approval: request, then approve and commit
			req := reg.Invoke(approveCtx, call)
			if req.Approval == nil || !errors.Is(req.Err, llmtool.ErrApprovalRequired) {
				b.Fatal("no approval request: " + req.Text())
			}
			ok := call
			ok.Approval = &llmtool.Approval{Token: req.Approval.Token, Approved: true}
			if res := reg.Invoke(approveCtx, ok); res.IsError {
				b.Fatal(res.Text())
			}
		},
	}
	times := make([][]time.Duration, len(paths))
	rng := rand.New(rand.NewPCG(2026, 11))
	order := []int{0, 1}
	for b.Loop() {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, j := range order {
			t0 := time.Now()
			paths[j]()
			times[j] = append(times[j], time.Since(t0))
		}
	}
	sum := func(i int) float64 {
		var s time.Duration
		for _, d := range times[i] {
			s += d
		}
		return float64(s)
	}
	sorted := [][]time.Duration{slices.Sorted(slices.Values(times[0])), slices.Sorted(slices.Values(times[1]))}
	pct := func(i int, p float64) float64 { return float64(sorted[i][int(p*float64(len(sorted[i])-1))]) }
	b.ReportMetric(sum(1)/sum(0), "approval/plain")
	b.ReportMetric(pct(1, .5)/pct(0, .5), "approval/plain-p50")
	for i, name := range []string{"plain", "approval"} {
		b.ReportMetric(pct(i, .1), "ns-p10-"+name)
		b.ReportMetric(pct(i, .5), "ns-p50-"+name)
		b.ReportMetric(pct(i, .9), "ns-p90-"+name)
	}
}
