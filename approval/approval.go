// Package approval holds the data of approval that spans the transaction:
// what a write call would change (Preview), the question a person answers
// (Request) and the answer (Answer). It is plain data; llmtool's registry
// does the work.
//
// A write tool that needs a person's approval (llmtool.NeedsApproval, or a
// tenant's rule: Registry.Tenants().SetApproval) does not commit on its
// first call: the registry runs it in its transaction, records a Preview of
// what it changed, rolls back, and the call's Result carries a Request and
// an error wrapping ErrRequired. No transaction or lock is held while the
// person decides. The same call (tool and arguments) sent again with
// Call.Approval set to the person's Answer runs again and commits only if
// its preview is the one approved; otherwise it asks again. A dry run
// (Call.DryRun) gives the same preview for any write tool, and always rolls
// back.
package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/llmtool/llmtool/changeset"
)

// Preview is what a write call would change: its result, the rows it
// inserted, updated and deleted per table (as the database counted them:
// rows a trigger or a cascade changed too), and the one line the tool
// wrote about it
// (llmtool.WriteCtx.Describe). A tool that wrote none gets its changed
// rows in the host's words there, in the call's locale, when an entity
// describes their table (changeset.Row.Text; llmtool.Entity.NameColumn):
// like those words, it is what a person is shown, not what an approval
// binds.
type Preview struct {
	Result  json.RawMessage `json:"result"`
	Tables  []TableCount    `json:"changes"` // JSON "changes", as the dry runs' and approvals' wire has it
	Summary string          `json:"summary,omitempty"`
	// Changeset is the exact change, row by row, to the tables the host
	// tracks (llmtool.Options.Changesets); nil when none are tracked or
	// none changed. An approval binds it: the approved run commits only
	// if it changes the same rows, from the same values, to the same
	// values.
	Changeset *changeset.Set `json:"changeset,omitempty"`
}

// TableCount counts the rows a write inserted, updated and deleted in
// one table.
type TableCount struct {
	Table    string `json:"table"`
	Inserted int64  `json:"inserted"`
	Updated  int64  `json:"updated"`
	Deleted  int64  `json:"deleted"`
}

// Counted returns the tables whose rows a person reads as counts: those
// of Tables with no row in the host's words in Changeset
// (changeset.Row.Text). A table in words shows its rows one by one; its
// counts would say less (a soft delete counts as "updated").
func (p *Preview) Counted() []TableCount {
	worded := make(map[string]bool)
	if p.Changeset != nil {
		for _, r := range p.Changeset.Rows {
			if r.Text != "" {
				worded[strings.ToLower(r.Table)] = true
			}
		}
	}
	if len(worded) == 0 {
		return p.Tables
	}
	var out []TableCount
	for _, c := range p.Tables {
		if !worded[strings.ToLower(c.Table)] {
			out = append(out, c)
		}
	}
	return out
}

// String describes the preview in one line for a person: the tool's
// summary if it wrote one, then the rows changed per table (Counted);
// the summary alone when every changed table is in the host's words.
func (p *Preview) String() string {
	tables := p.Counted()
	if len(tables) == 0 && len(p.Tables) > 0 {
		if p.Summary != "" {
			return p.Summary
		}
		tables = p.Tables
	}
	var parts []string
	for _, c := range tables {
		var n []string
		for _, x := range []struct {
			n    int64
			verb string
		}{{c.Inserted, "inserted"}, {c.Updated, "updated"}, {c.Deleted, "deleted"}} {
			if x.n > 0 {
				n = append(n, fmt.Sprintf("%d %s", x.n, x.verb))
			}
		}
		if len(n) > 0 {
			parts = append(parts, c.Table+": "+strings.Join(n, ", "))
		}
	}
	changes := "no rows changed"
	if len(parts) > 0 {
		changes = strings.Join(parts, "; ")
	}
	if p.Summary != "" {
		changes = p.Summary + " (" + changes + ")"
	}
	return changes
}

// Request asks a person to approve the change a call previewed
// (llmtool.Result.Approval). Show the Preview; send the Token back in an
// Answer (llmtool.Call.Approval) with the person's decision, before
// Expires.
type Request struct {
	Preview Preview
	Token   string
	Expires time.Time
}

// Answer is a person's answer to a Request, sent with the same call (tool
// and arguments) in llmtool.Call.Approval by the same principal in the
// same tenant. The token is single-use.
type Answer struct {
	Token    string
	Approved bool // false: the person denied the change
}

// ErrRequired is wrapped by the result of a call that needs a person's
// approval first, or again because the data changed since the preview was
// approved: nothing was saved, and llmtool.Result.Approval asks.
var ErrRequired = errors.New("llmtool: approval required")

// ErrRefused is wrapped by the result of a call whose approval was denied,
// or whose token is expired, used, forged or for another call, principal or
// tenant: nothing was saved.
var ErrRefused = errors.New("llmtool: approval refused")
