package changeset_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/changeset"
)

func values(t *testing.T, s string) changeset.Values {
	t.Helper()
	var v changeset.Values
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

// TestString: a person reads each row's table and key; an insert's or a
// delete's values; an update's changes, then the rest of its row; or the
// row's Text, its change in the host's words, when it has one.
func TestString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		row  changeset.Row
		want string
	}{
		{"insert", changeset.Row{Table: "notes", Op: changeset.Insert, Key: values(t, `{"id": 7}`), After: values(t, `{"id": 7, "title": "Plans", "body": null}`)},
			`insert notes (id=7): body=null, id=7, title="Plans"`},
		{"delete", changeset.Row{Table: "notes", Op: changeset.Delete, Key: values(t, `{"id": 7}`), Before: values(t, `{"id": 7, "title": "Plans", "data": {"$bytes": "AAEC"}}`)},
			`delete notes (id=7): data=<3 bytes>, id=7, title="Plans"`},
		{"text not valid UTF-8, and a NUL byte", changeset.Row{Table: "notes", Op: changeset.Delete, Key: values(t, `{"id": 7}`), Before: values(t, `{"id": 7, "title": {"$text": "wyj/"}, "body": "a\u0000b"}`)},
			`delete notes (id=7): body="a\x00b", id=7, title="\xc3(\xff"`},
		{"update, the rest of the row", changeset.Row{Table: "notes", Op: changeset.Update, Key: values(t, `{"id": 7}`),
			Before: values(t, `{"id": 7, "title": "Plans", "done": 0, "body": "the original words"}`),
			After:  values(t, `{"id": 7, "title": "Plans", "done": 1, "body": "the original words"}`)},
			`update notes (id=7): done 0 → 1; unchanged: body="the original words", title="Plans"`},
		{"update, every column changed", changeset.Row{Table: "stats", Op: changeset.Update, Key: values(t, `{"k": "notes"}`),
			Before: values(t, `{"k": "notes", "n": 1}`), After: values(t, `{"k": "notes", "n": 0}`)},
			`update stats (k="notes"): n 1 → 0`},
		{"a long value is cut", changeset.Row{Table: "notes", Op: changeset.Update, Key: values(t, `{"id": 1}`),
			Before: values(t, `{"id": 1, "done": 0, "body": "0123456789012345678901234567890123456789012345678901234567890123456789"}`),
			After:  values(t, `{"id": 1, "done": 1, "body": "0123456789012345678901234567890123456789012345678901234567890123456789"}`)},
			`update notes (id=1): done 0 → 1; unchanged: body="012345678901234567890123456789012345678901234567890123456789…"`},
		{"a row in the host's words reads as them", changeset.Row{Table: "notes", Op: changeset.Update, Key: values(t, `{"id": 7}`),
			Before: values(t, `{"id": 7, "title": "Plans", "isDeleted": 0}`), After: values(t, `{"id": 7, "title": "Plans", "isDeleted": 1}`),
			Text: `Delete note "Plans"`},
			`Delete note "Plans"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := changeset.Set{Rows: []changeset.Row{tc.row}}
			require.Equal(t, tc.want, set.String())
		})
	}
}
