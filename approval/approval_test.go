package approval_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/changeset"
)

// A preview's line counts the rows of the tables a person does not read
// in the host's words; a table in words shows its rows, not its counts.
func TestPreviewString(t *testing.T) {
	t.Parallel()
	notes := approval.TableCount{Table: "notes", Updated: 1}
	branches := approval.TableCount{Table: "branches", Deleted: 2}
	worded := &changeset.Set{Rows: []changeset.Row{{Table: "Notes", Op: changeset.Update, Text: `Delete note "Ideas"`}, {Table: "branches", Op: changeset.Delete}}}
	for _, tc := range []struct {
		name    string
		p       approval.Preview
		counted []approval.TableCount
		want    string
	}{
		{"nothing changed", approval.Preview{}, nil, "no rows changed"},
		{"counts", approval.Preview{Tables: []approval.TableCount{notes, branches}}, []approval.TableCount{notes, branches},
			"notes: 1 updated; branches: 2 deleted"},
		{"summary and counts", approval.Preview{Summary: `Delete note "Ideas".`, Tables: []approval.TableCount{notes}}, []approval.TableCount{notes},
			`Delete note "Ideas". (notes: 1 updated)`},
		{"a table in words, another not", approval.Preview{Summary: `Delete note "Ideas".`, Tables: []approval.TableCount{notes, branches}, Changeset: worded},
			[]approval.TableCount{branches}, `Delete note "Ideas". (branches: 2 deleted)`},
		{"every table in words", approval.Preview{Summary: `Delete note "Ideas".`, Tables: []approval.TableCount{notes}, Changeset: worded},
			nil, `Delete note "Ideas".`},
		{"in words, no summary: the counts", approval.Preview{Tables: []approval.TableCount{notes}, Changeset: worded},
			nil, "notes: 1 updated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.counted, tc.p.Counted())
			require.Equal(t, tc.want, tc.p.String())
		})
	}
}
