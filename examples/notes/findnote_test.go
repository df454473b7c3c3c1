package notes_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/llmtooltest"
)

// picker is an ask.Asker that answers find_note's question as a user
// would: with action, and noteID when it accepts. It records what it was
// asked.
type picker struct {
	action string
	noteID string

	mu    sync.Mutex
	asked []ask.ElicitRequest
}

func (p *picker) Sample(context.Context, ask.SampleRequest) (ask.SampleResult, error) {
	return ask.SampleResult{}, errors.New("picker: no sampling")
}

func (p *picker) Elicit(_ context.Context, req ask.ElicitRequest) (ask.ElicitResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, req)
	if p.action != ask.Accept {
		return ask.ElicitResult{Action: p.action}, nil
	}
	content, err := json.Marshal(map[string]string{"noteId": p.noteID})
	return ask.ElicitResult{Action: ask.Accept, Content: content}, err
}

func (p *picker) requests() []ask.ElicitRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked
}

// addNote creates a note titled title under parent and returns its ID.
func addNote(t *testing.T, db *sql.DB, parent, title string, protect bool) string {
	t.Helper()
	n, err := notes.CreateNote(t.Context(), db, parent, title, "", "<p>"+title+"</p>")
	require.NoError(t, err)
	if protect {
		_, err = db.ExecContext(t.Context(), `UPDATE notes SET isProtected = 1 WHERE noteId = $1`, n.ID)
		require.NoError(t, err)
	}
	return n.ID
}

// ids are the IDs of the notes TestFindNote adds: "Roadmap for dinners"
// and the protected "Private roadmap".
type ids struct{ dinner, private string }

// TestFindNote calls find_note through the registry (on the engine the
// environment selects), with no client to ask and with a user who
// accepts, declines, cancels or answers off the list.
func TestFindNote(t *testing.T) {
	t.Parallel()
	// Each case gets a fresh store with two more notes whose title has
	// "roadmap" (one under recipes, one protected under projects) and,
	// when asker is set, a client whose user answers with it.
	cases := []struct {
		name  string
		args  string
		asker *picker // nil: no client to ask (ask.ErrUnsupported)
		err   string
		check func(t *testing.T, out notes.FindNoteOut, ids ids, asked []ask.ElicitRequest)
	}{
		{name: "one match", args: `{"title": "pancakes"}`, check: func(t *testing.T, out notes.FindNoteOut, _ ids, asked []ask.ElicitRequest) {
			require.NotNil(t, out.Note)
			require.Equal(t, "pancakes", out.Note.ID)
			require.Equal(t, "Pancakes", out.Note.Title)
			require.Equal(t, []notes.NoteRef{{ID: "recipes", Title: "Recipes"}}, out.Note.Parents)
			require.Equal(t, "Whisk 250 g flour, 2 eggs, 500 ml milk and a pinch of salt. Rest the batter for 30 minutes, then fry thin pancakes in a hot buttered pan.", out.Note.ContentPreview)
			require.False(t, out.ChosenByUser)
			require.Equal(t, []notes.NoteCandidate{}, out.Candidates)
			require.Empty(t, out.Message)
		}},
		{name: "one match by prefix, no preview", args: `{"title": "panc*", "previewChars": 0}`, asker: &picker{action: ask.Accept, noteID: "roadmap"},
			check: func(t *testing.T, out notes.FindNoteOut, _ ids, asked []ask.ElicitRequest) {
				require.Equal(t, "pancakes", out.Note.ID)
				require.Equal(t, "", out.Note.ContentPreview)
				require.Empty(t, asked, "one match needs no question")
			}},
		{name: "several matches, no client to ask", args: `{"title": "roadmap"}`, check: func(t *testing.T, out notes.FindNoteOut, ids ids, _ []ask.ElicitRequest) {
			require.Nil(t, out.Note)
			require.Equal(t, []notes.NoteCandidate{
				{ID: "roadmap", Title: "Roadmap", ParentTitle: "Projects"},
				{ID: ids.dinner, Title: "Roadmap for dinners", ParentTitle: "Recipes"},
			}, out.Candidates, "the protected note is left out")
			require.Equal(t, `2 notes have a title matching "roadmap". Call get_note with the noteId of the one you mean; if you cannot tell which, ask the user.`, out.Message)
		}},
		{name: "the user chooses", args: `{"title": "Roadmap"}`, asker: &picker{action: ask.Accept}, // noteID: the dinner note, set below
			check: func(t *testing.T, out notes.FindNoteOut, ids ids, asked []ask.ElicitRequest) {
				require.NotNil(t, out.Note)
				require.Equal(t, ids.dinner, out.Note.ID)
				require.Equal(t, "Roadmap for dinners", out.Note.Title)
				require.True(t, out.ChosenByUser)
				require.Equal(t, []notes.NoteCandidate{}, out.Candidates)
				require.Empty(t, out.Message)
				require.Len(t, asked, 1)
				require.Equal(t, "choose-note", asked[0].Key)
				require.Equal(t, `2 notes have a title matching "Roadmap". Which one do you mean?`, asked[0].Message)
				require.JSONEq(t, `{"type":"object","required":["noteId"],"properties":{"noteId":{"type":"string","title":"Note","description":"The note you mean.","oneOf":[`+
					`{"const":"roadmap","title":"Roadmap (in Projects)"},{"const":"`+ids.dinner+`","title":"Roadmap for dinners (in Recipes)"}]}}}`,
					string(asked[0].Schema), "a picker of the candidates, the protected note left out")
			}},
		{name: "the user declines", args: `{"title": "roadmap"}`, asker: &picker{action: ask.Decline}, check: declined},
		{name: "the user cancels", args: `{"title": "roadmap"}`, asker: &picker{action: ask.Cancel}, check: declined},
		{name: "an answer off the list is no choice", args: `{"title": "roadmap"}`, asker: &picker{action: ask.Accept}, // noteID: the protected note, set below
			check: declined},
		{name: "the protected note alone is not found", args: `{"title": "private"}`, asker: &picker{action: ask.Accept, noteID: "roadmap"},
			err: `No note has a title matching "private". Try other words of the title, or call search_notes to search titles and content.`},
		{name: "content words are not title words", args: `{"title": "flour"}`,
			err: `No note has a title matching "flour". Try other words of the title, or call search_notes to search titles and content.`},
		{name: "no word", args: `{"title": "*** --"}`,
			err: `Error: /title: "*** --" has no word to search for. Send at least one word made of letters or digits.`},
		{name: "no title", args: `{}`,
			err: `Error: /title: missing required parameter "title". Send "title" as a string of at least 1 character (Words of the note's title. All words must occur in the title; end a word with * to match words starting with it).`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			ids := ids{
				dinner:  addNote(t, h.DB(), "recipes", "Roadmap for dinners", false),
				private: addNote(t, h.DB(), "projects", "Private roadmap", true),
			}
			ctx := h.Context()
			if tc.asker != nil {
				switch tc.name {
				case "the user chooses":
					tc.asker.noteID = ids.dinner
				case "an answer off the list is no choice":
					tc.asker.noteID = ids.private
				}
				ctx = ask.With(ctx, tc.asker)
			}
			if tc.err != "" {
				h.RequireUnchanged(func() { h.RequireError(h.CallContext(ctx, "find_note", tc.args), tc.err) })
				return
			}
			res := h.CallContext(ctx, "find_note", tc.args)
			h.RequireOK(res)
			require.NotContains(t, fromJSON[map[string]any](t, h, res.JSON), "error")
			var asked []ask.ElicitRequest
			if tc.asker != nil {
				asked = tc.asker.requests()
			}
			tc.check(t, fromJSON[notes.FindNoteOut](t, h, res.JSON), ids, asked)
		})
	}
}

// declined checks find_note's result when the user was asked and did not
// choose one of the two candidates.
func declined(t *testing.T, out notes.FindNoteOut, ids ids, asked []ask.ElicitRequest) {
	t.Helper()
	require.Len(t, asked, 1)
	require.Nil(t, out.Note)
	require.False(t, out.ChosenByUser)
	require.Equal(t, []notes.NoteCandidate{
		{ID: "roadmap", Title: "Roadmap", ParentTitle: "Projects"},
		{ID: ids.dinner, Title: "Roadmap for dinners", ParentTitle: "Recipes"},
	}, out.Candidates)
	require.Equal(t, `The user did not choose among the 2 notes whose title matches "roadmap". Call get_note with the noteId of the one you mean, or ask the user which one.`, out.Message)
}

// TestFindNoteTooMany: with more matches than a picker should hold, the
// user is not asked; the first ten are listed with what to do.
func TestFindNoteTooMany(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	manyChildren("recipes", 12)(t, h.DB())
	p := &picker{action: ask.Accept, noteID: "roadmap"}
	res := h.CallContext(ask.With(h.Context(), p), "find_note", `{"title": "child"}`)
	out := fromJSON[notes.FindNoteOut](t, h, res.JSON)
	require.Empty(t, p.requests())
	require.Nil(t, out.Note)
	require.Len(t, out.Candidates, 10)
	for i, c := range out.Candidates {
		require.Equal(t, notes.NoteCandidate{ID: c.ID, Title: "Child " + string(rune('0'+i/10)) + string(rune('0'+i%10)), ParentTitle: "Recipes"}, c)
	}
	require.Equal(t, `More than 10 notes have a title matching "child"; the first 10 are listed. Call find_note again with more words of the title, or call get_note with the noteId of the one you mean.`, out.Message)
}

// TestFindNoteDefinition: find_note is a read tool with the catalog
// entries lint asks for.
func TestFindNoteDefinition(t *testing.T) {
	t.Parallel()
	h := newHarness(t, &llmtooltest.Options{WritesOff: true})
	spec, ok := h.Registry().Tool(h.Context(), "find_note")
	require.True(t, ok)
	require.True(t, spec.ReadOnly)
	require.Equal(t, "Reading", spec.Category)
	require.Equal(t, "Find note", spec.FriendlyName)
	require.Contains(t, spec.ManPage, "\nEXAMPLES\n")
}
