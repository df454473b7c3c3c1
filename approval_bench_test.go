package llmtool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
)

// BenchmarkApprovalRatio compares a write that needs approval, the whole
// path through Invoke (the call that previews and rolls back, then the
// call with the approved token that runs again and commits), with one
// plain write of the same tool (add_item) on the same registry, in the
// same run: one of each per round, in an order shuffled every round by a
// seeded generator, so both see the same machine load. The request runs
// the handler twice, both rolled back (approval_fresh.go), so the target
// is at most about three plain writes. It reports the ratio of total times and of
// median times ("-p50"), and each path's p10, p50 and p90 in ns. ns/op is
// one round: both paths.
func BenchmarkApprovalRatio(b *testing.B) {
	db := benchDB(b)
	reg := benchRegistry(b, db)
	plainCtx := context.Background()
	approveCtx := llmtool.WithTenant(context.Background(), "approve")
	enableWrites(b, reg, approveCtx)
	require.NoError(b, reg.Tenants().SetApproval(context.Background(), "approve", "add_item", true))
	call := llmtool.Call{Tool: "add_item", Args: insertArgs}
	paths := []func(){
		func() { // plain
			if res := reg.Invoke(plainCtx, call); res.IsError {
				b.Fatal(res.Text())
			}
		},
		func() { // approval: request, then approve and commit
			req := reg.Invoke(approveCtx, call)
			if req.Approval == nil || !errors.Is(req.Err, approval.ErrRequired) {
				b.Fatal("no approval request: " + req.Text())
			}
			ok := call
			ok.Approval = &approval.Answer{Token: req.Approval.Token, Approved: true}
			if res := reg.Invoke(approveCtx, ok); res.IsError {
				b.Fatal(res.Text())
			}
		},
	}
	t := shuffledRounds(b, len(paths), func(j int) { paths[j]() })
	t.report(b, 1, 0, "approval/plain")
	t.reportSpread(b, []string{"plain", "approval"}, "ns", 1)
}
