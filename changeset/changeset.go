// Package changeset holds what a write call changed, row by row: the data
// of llmtool's exact approval, history and undo. It is plain data; the
// registry captures it.
//
// A host names the tables to track (llmtool.Options.Changesets). Each
// write call that changes rows of those tables then yields a Set: for
// every row, its table, its key (primary key, or SQLite's rowid), the
// operation, and the values of its columns before and after. Changes that
// several statements of one call made to one row are merged into one Row
// (an insert then an update is an insert of the final values; an insert
// then a delete is nothing).
//
// The Set goes with the call's Result (llmtool.Result.Changeset), into an
// approval's preview (a person approves these rows, and the approved run
// commits only if it changes the same rows the same way), and into the
// history table llmtool_changes in the write's own transaction, from
// which List reads and the tool undo_changes undoes.
//
// Values are JSON, exactly as stored: on SQLite an integer is a JSON
// integer, a real always has a fraction or exponent (1.0), text is a
// string (text whose bytes are not valid UTF-8, which a JSON string
// cannot hold, is {"$text": "<base64>"}), a blob is {"$bytes":
// "<base64>"}; on PostgreSQL a value is its
// column's to_jsonb. So a value compares equal only to the same stored
// value, and undo writes back exactly what was there.
package changeset

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Op is what a call did to a row.
type Op string

// The operations.
const (
	Insert Op = "insert"
	Update Op = "update"
	Delete Op = "delete"
)

// Values are a row's columns, by name, as JSON.
type Values map[string]json.RawMessage

// Row is one row a call changed. Before is nil for an insert and After
// for a delete; an update has both, with every column of the row.
type Row struct {
	Table  string `json:"table"`
	Op     Op     `json:"op"`
	Key    Values `json:"key"`
	Before Values `json:"before,omitempty"`
	After  Values `json:"after,omitempty"`
	// Steps are the row's changes in the order of all the call's row
	// changes, present when the order matters to undo it: when a row
	// changed more than once and a value moved between rows (a swap of
	// two unique values through a third, say), which undoing the merged
	// rows one by one would break. Undo then undoes each step, last
	// first, as the database accepted them.
	Steps []Step `json:"steps,omitempty"`
	// Text is the row's change in the host's words, in the locale of
	// the call that shows it, such as `Delete note "Ideas"`, when an
	// entity describes its table (llmtool.Entity.NameColumn): a
	// registry sets it in what it shows a person (a preview, a write's
	// result, the history), never in what it records or binds.
	Text string `json:"text,omitempty"`
}

// Step is one change of a row: Seq is its place among the call's row
// changes, Before the row's values before it (nil: the row did not
// exist). A row's first step has no Before: it is the row's Before.
type Step struct {
	Seq    int    `json:"seq"`
	Before Values `json:"before,omitempty"`
}

// Changed returns the columns an update changed, sorted; for an insert or
// a delete, every column.
func (r *Row) Changed() []string {
	var cols []string
	switch r.Op {
	case Insert:
		cols = keys(r.After)
	case Delete:
		cols = keys(r.Before)
	default:
		for c, v := range r.After {
			if string(r.Before[c]) != string(v) {
				cols = append(cols, c)
			}
		}
		slices.Sort(cols)
	}
	return cols
}

func keys(v Values) []string {
	ks := make([]string, 0, len(v))
	for k := range v {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Set is what one write call changed in the tracked tables.
type Set struct {
	// ID is the call's entry in the history, once its write committed;
	// 0 in a preview or a dry run. Pass it to the tool undo_changes.
	ID int64 `json:"id,omitempty"`
	// Rows are the rows changed, in the order the call first changed
	// them.
	Rows []Row `json:"rows"`
	// NotUndoable says why the call cannot be undone: it changed the
	// schema, a table that is not tracked, or a value larger than the
	// limit (which is recorded as {"$omitted": <bytes>}). Empty when it
	// can be.
	NotUndoable string `json:"notUndoable,omitempty"`
}

// Digest is the set's fingerprint, what an approval binds: each row's
// table, operation and key, its values before, and which columns it
// changes to what. generated reports the columns whose values the tool
// makes afresh on each run (a timestamp, a new random id): for those the
// digest binds that the column is set, not the value. It may be nil.
func (s *Set) Digest(generated func(table, column string) bool) string {
	h := sha256.New()
	var n [8]byte
	field := func(b string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write([]byte(b))
	}
	values := func(table string, v Values) {
		field(fmt.Sprint(len(v)))
		for _, c := range keys(v) {
			field(c)
			if generated != nil && generated(table, c) {
				field("(generated)")
				continue
			}
			field(string(v[c]))
		}
	}
	for _, r := range s.Rows {
		field(r.Table)
		field(string(r.Op))
		values(r.Table, r.Key)
		values(r.Table, r.Before)
		after := r.After
		if r.Op == Update { // bind what changes, not the columns that stay
			after = make(Values)
			for _, c := range r.Changed() {
				after[c] = r.After[c]
			}
		}
		values(r.Table, after)
	}
	field(s.NotUndoable)
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0]))
}

// excerptLen bounds each value a person is shown.
const excerptLen = 60

// String describes the set for a person, one line per row: its Text
// when it has one, else the row's table and key, and for an insert or a
// delete its values, for an update each changed column as before → after
// and then its other values ("unchanged: ..."). Long values are cut.
func (s *Set) String() string {
	var b strings.Builder
	for i, r := range s.Rows {
		if i > 0 {
			b.WriteString("\n")
		}
		if r.Text != "" {
			b.WriteString(r.Text)
			continue
		}
		fmt.Fprintf(&b, "%s %s (%s)", r.Op, r.Table, pairs(r.Key, keys(r.Key)))
		switch r.Op {
		case Insert:
			fmt.Fprintf(&b, ": %s", pairs(r.After, r.Changed()))
		case Delete:
			fmt.Fprintf(&b, ": %s", pairs(r.Before, r.Changed()))
		case Update:
			var parts []string
			changed := r.Changed()
			for _, c := range changed {
				parts = append(parts, fmt.Sprintf("%s %s → %s", c, Excerpt(r.Before[c]), Excerpt(r.After[c])))
			}
			fmt.Fprintf(&b, ": %s", strings.Join(parts, ", "))
			// The rest of the row, so a person knows what it holds.
			var rest []string
			for _, c := range keys(r.Before) {
				if _, key := r.Key[c]; !key && !slices.Contains(changed, c) {
					rest = append(rest, c)
				}
			}
			if len(rest) > 0 {
				fmt.Fprintf(&b, "; unchanged: %s", pairs(r.Before, rest))
			}
		}
	}
	if s.NotUndoable != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("Cannot be undone: " + s.NotUndoable)
	}
	return b.String()
}

func pairs(v Values, cols []string) string {
	parts := make([]string, 0, len(cols))
	for _, c := range cols {
		parts = append(parts, c+"="+Excerpt(v[c]))
	}
	return strings.Join(parts, ", ")
}

// Excerpt returns a value as a person reads it, cut to about 60
// characters: text quoted, numbers as they are, a blob by its size.
func Excerpt(v json.RawMessage) string {
	if string(v) == "null" || len(v) == 0 {
		return "null"
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return quoteCut(s)
	}
	var special struct {
		Bytes   *string `json:"$bytes"`
		Text    *string `json:"$text"`
		Omitted *int64  `json:"$omitted"`
	}
	if json.Unmarshal(v, &special) == nil {
		switch {
		case special.Text != nil:
			b, _ := base64.StdEncoding.DecodeString(*special.Text)
			return quoteCut(string(b)) // bad bytes as \x escapes
		case special.Bytes != nil:
			return fmt.Sprintf("<%d bytes>", base64.StdEncoding.DecodedLen(len(*special.Bytes)))
		case special.Omitted != nil:
			return fmt.Sprintf("<%d bytes, not recorded>", *special.Omitted)
		}
	}
	out := string(v)
	if r := []rune(out); len(r) > excerptLen {
		out = string(r[:excerptLen]) + "…"
	}
	return out
}

// quoteCut quotes text for a person, cut to excerptLen characters.
func quoteCut(s string) string {
	r := []rune(s)
	if len(r) > excerptLen {
		s = string(r[:excerptLen]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Config says which tables a registry tracks, and how it keeps their
// history.
type Config struct {
	// Tables are the host's tables whose rows each write call captures
	// exactly. On PostgreSQL each must be an ordinary table with a
	// primary key, and the registry installs two triggers on each
	// (llmtool_capture and llmtool_capture_truncate), which record only
	// the changes of llmtool's write calls. There the triggers see the
	// tracked tables only: a call's change to another table is known from
	// its statements' text (an INSERT, UPDATE or DELETE aimed at it), not
	// when the host's triggers, cascades or functions make it.
	Tables []string
	// Generated lists, per table, the columns a tool sets afresh on each
	// run, such as updated_at or a random id: an approval binds that they
	// change, not to what, so the approved run may set them anew.
	Generated map[string][]string
	// MaxValue bounds a recorded value, in bytes (on SQLite a text or a
	// blob, on PostgreSQL any value's JSON); a larger one is recorded as
	// omitted and makes the call not undoable. Zero means 64 KiB.
	MaxValue int
	// Retention is how long the history keeps a call's changes; zero
	// keeps them until the host deletes them.
	Retention time.Duration
	// Tools adds the module "changesets" with the tools list_changes
	// (read) and undo_changes (write), served like any other tool.
	Tools bool
	// Scopes are the OAuth scopes a caller needs to see and call
	// undo_changes, as llmtool.Scopes declares them for a tool: those of
	// the host's other write tools, usually.
	Scopes []string
	// ReadScopes are the OAuth scopes a caller needs to see and call
	// list_changes and read changes://recent, whose rows show what the
	// host's tables held: those of the host's read tools, usually. Nil
	// means Scopes, so the history is never open to a token the host's
	// tools would refuse.
	ReadScopes []string
	// MayUndo decides whether the caller of undo_changes may undo e, a
	// change another principal made (its own principal always may), in
	// the caller's tenant: an administrator, say, or anyone in a shared
	// workspace. ctx is the undo call's (llmtool.PrincipalFrom). It
	// returns nil to allow; an error refuses, as Options.Authorize's
	// does (the model sees the message of an *llmtool.Error in its
	// chain). Nil allows no one else.
	MayUndo func(ctx context.Context, e Entry) error
}
