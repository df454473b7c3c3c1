package llmtool

import (
	"context"
	"errors"
)

// The write path and its hooks. One run of a write call reads
//
//	begin → handler → before commit → commit → after commit
//
// (execWrite, txn.go), and each feature plugs in at the points it needs,
// registered once when the registry is made (initHooks), as
// net/http/httptrace's ClientTrace lets a feature listen at the named
// points of a request while the transport never knows which one listens.
// The points, and who listens:
//
//   - statement: after each statement of the handler, whichever method
//     ran it (Exec, Query, QueryRow, PrepareContext; see statement):
//     retry notes a statement that lost to another write (retry.go), the
//     capture notes what a statement's text names (PostgreSQL,
//     changesets.go).
//   - begin: after BEGIN, before the handler: the role and the capture
//     turned on, in one statement on PostgreSQL (role.go), and a
//     preview's count (approval.go).
//   - before commit: after the handler returned nil, in llmtool's own
//     mode, in this order: the check of the triggers the handler created
//     (boundary.go), the role left (role.go), the capture read
//     (changesets.go), the entity checks of the rows it changed
//     (rowchecks.go), the preview, which may end the run without
//     committing it (approval.go), the history row (changesets.go), the
//     audit row (audit.go). An error rolls the run back.
//   - after commit: the handler's AfterCommit functions.
//
// Two things are not hooks, because no call goes without them: the
// boundary that every statement passes (check and denied, boundary.go),
// and the one decision whether a run that failed runs again (runAgain,
// retry.go).
type writeHooks struct {
	statement    []func(cs *callState, query string, rows int64, err error)
	begin        []func(ctx context.Context, cs *callState) error
	beforeCommit []func(ctx context.Context, cs *callState) error
	afterCommit  []func(cs *callState)
}

// add appends h's functions to w's, point by point: they run after w's.
func (w *writeHooks) add(h writeHooks) {
	w.statement = append(w.statement, h.statement...)
	w.begin = append(w.begin, h.begin...)
	w.beforeCommit = append(w.beforeCommit, h.beforeCommit...)
	w.afterCommit = append(w.afterCommit, h.afterCommit...)
}

// errRolledBack is what a before-commit hook returns to end a run that
// succeeded without committing it: a preview's (a dry run, or a call that
// asks for approval). The run rolls back and the call answers with the
// handler's result.
var errRolledBack = errors.New("llmtool: the run ends rolled back, its result kept")

// initHooks registers the features of the registry's write path, in the
// order they run at each point. Call it once the options are applied.
func (r *Registry) initHooks() {
	h := &r.hooks
	h.add(retryHooks)        // retry.go
	h.add(triggerHooks)      // boundary.go
	h.add(r.roleHooks())     // role.go: begin, and the role left before commit
	h.add(r.captureHooks())  // changesets.go: each statement's text, the capture read
	h.add(r.rowCheckHooks()) // rowchecks.go: the changed rows of entity tables
	h.add(previewHooks)      // approval.go
	h.add(r.historyHooks())  // changesets.go
	h.add(auditHooks)        // audit.go
	h.add(writeHooks{afterCommit: []func(*callState){runAfterCommit}})
}
