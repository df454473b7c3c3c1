package llmtool

import (
	"bytes"
	"slices"
	"strings"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
)

// Fresh values: what a tool makes afresh on each run, such as a new id
// from a PostgreSQL sequence (which a rolled-back run does not give
// back), the time, or a random token. An approval that bound them would
// never match its approved run, and the person would be asked again and
// again. A call that asks for approval therefore runs twice, both runs
// rolled back, with the same data: a new value of a column in a row
// that both runs changed alike (same table, operation, key and values
// before) is fresh, and the approval binds that the column is set, not
// to what, as for the columns the host declares (changeset.Config.
// Generated); a tool output that differs is left unbound. The token
// carries what was found, so the approved run's digest leaves out the
// same values.

// fresh is what the two runs of a request found.
type fresh struct {
	result  bool            // the tool's output differed
	columns map[string]bool // freshKey(table, column)
}

func freshKey(table, column string) string { return table + "\x00" + column }

// revealFresh compares the previews of a request's two runs.
func revealFresh(a, b *approval.Preview) fresh {
	f := fresh{result: !bytes.Equal(a.Result, b.Result)}
	if a.Changeset == nil || b.Changeset == nil || len(a.Changeset.Rows) != len(b.Changeset.Rows) {
		return f
	}
	for i, ra := range a.Changeset.Rows {
		rb := b.Changeset.Rows[i]
		same := ra.Table == rb.Table && ra.Op == rb.Op && equalValues(ra.Before, rb.Before) &&
			(ra.Op == changeset.Insert || equalValues(ra.Key, rb.Key))
		if !same {
			continue // another row, not a fresh value in the same one
		}
		for c, v := range ra.After {
			if !bytes.Equal(v, rb.After[c]) {
				if f.columns == nil {
					f.columns = make(map[string]bool)
				}
				f.columns[freshKey(ra.Table, c)] = true
			}
		}
	}
	return f
}

func equalValues(a, b changeset.Values) bool {
	if len(a) != len(b) {
		return false
	}
	for c, v := range a {
		w, ok := b[c]
		if !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// encode writes f for a token: "r" or "-" for the output, then the
// columns' keys in order, a line each.
func (f *fresh) encode() string {
	keys := make([]string, 0, len(f.columns))
	for k := range f.columns {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	head := "-"
	if f.result {
		head = "r"
	}
	return strings.Join(append([]string{head}, keys...), "\n")
}

// decodeFresh reads what encode wrote; a token is signed, so it holds
// what this server wrote.
func decodeFresh(s string) fresh {
	lines := strings.Split(s, "\n")
	f := fresh{result: lines[0] == "r"}
	for _, k := range lines[1:] {
		if f.columns == nil {
			f.columns = make(map[string]bool)
		}
		f.columns[k] = true
	}
	return f
}
