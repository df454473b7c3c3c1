package notes

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// ---------------------------------------------------------------------------
// find_note

// maxChoices is the most notes find_note offers the user to choose from;
// with more matches it lists the first ones and asks for more words.
const maxChoices = 10

// FindNoteIn is the input of find_note.
type FindNoteIn struct {
	Title        string `json:"title" desc:"Words of the note's title. All words must occur in the title; end a word with * to match words starting with it." minLength:"1"`
	PreviewChars int    `json:"previewChars,omitempty" desc:"Length of the plain-text content preview of the note found, in characters (default 200)." default:"200" minimum:"0" maximum:"2000"`
}

// NoteCandidate is a note whose title matches, offered when find_note
// could not settle on one.
type NoteCandidate struct {
	ID    string `json:"noteId"`
	Title string `json:"title"`
	// ParentTitle is the title of the note's first parent, which tells
	// notes of the same title apart.
	ParentTitle string `json:"parentTitle"`
}

// FindNoteOut is the result of find_note: the note found, or the
// candidates and what to do with them.
type FindNoteOut struct {
	// Note is the note found, as get_note gives it: the only match, or the
	// one the user chose. It is null when Candidates are listed instead.
	Note *NoteOut `json:"note"`
	// ChosenByUser is true when the user picked Note among several matches.
	ChosenByUser bool `json:"chosenByUser"`
	// Candidates are the matching notes, by title, when none was settled
	// on: the user did not choose, the client cannot ask the user, or too
	// many notes match. Empty when Note is set.
	Candidates []NoteCandidate `json:"candidates"`
	// Message says what to do with Candidates; empty when Note is set.
	Message string `json:"message,omitempty"`
}

var findNote = llmtool.Read("find_note", "Find one note by words of its title; when several match, the user is asked to choose.",
	func(c *llmtool.ReadCtx, in FindNoteIn) (FindNoteOut, error) {
		cands, more, err := titleMatches(c, in.Title)
		if err != nil {
			return FindNoteOut{}, err
		}
		switch {
		case len(cands) == 0:
			return FindNoteOut{}, llmtool.NotFound("No note has a title matching %q.", in.Title).
				Next("Try other words of the title, or call search_notes to search titles and content.")
		case len(cands) == 1:
			return found(c, cands[0].ID, in.PreviewChars, false)
		case more:
			return listed(cands, fmt.Sprintf("More than %d notes have a title matching %q; the first %d are listed. "+
				"Call find_note again with more words of the title, or call get_note with the noteId of the one you mean.", maxChoices, in.Title, maxChoices)), nil
		}
		id, err := chooseNote(c, in.Title, cands)
		switch {
		case errors.Is(err, ask.ErrUnsupported):
			return listed(cands, fmt.Sprintf("%d notes have a title matching %q. "+
				"Call get_note with the noteId of the one you mean; if you cannot tell which, ask the user.", len(cands), in.Title)), nil
		case err != nil:
			return FindNoteOut{}, err // ErrInputRequired: the call runs again with the user's answer
		case id == "":
			return listed(cands, fmt.Sprintf("The user did not choose among the %d notes whose title matches %q. "+
				"Call get_note with the noteId of the one you mean, or ask the user which one.", len(cands), in.Title)), nil
		}
		return found(c, id, in.PreviewChars, true)
	},
	llmtool.Category(catReading), llmtool.Summary("Find a note by its title, asking the user when several match"),
	llmtool.FriendlyName("Find note"), llmtool.ManPage(manFindNote), llmtool.Scopes(ScopeRead))

// titleMatches returns the notes, protected ones left out, whose title
// holds every word of query, by title then ID: at most maxChoices, and
// whether there were more. It takes them from the full-text search (which
// matches titles and contents), then keeps those whose title matches.
func titleMatches(c *llmtool.ReadCtx, query string) (cands []NoteCandidate, more bool, err error) {
	hits, err := Search(c, c, query, "", MaxSearchLimit)
	if errors.Is(err, ErrInvalidArgument) {
		return nil, false, llmtool.InvalidArgs("/title: %q has no word to search for.", query).
			Next("Send at least one word made of letters or digits.")
	}
	if err != nil {
		return nil, false, err
	}
	for _, h := range hits {
		if h.IsProtected || !titleHasWords(h.Title, query) {
			continue
		}
		cands = append(cands, NoteCandidate{ID: h.ID, Title: h.Title})
	}
	slices.SortFunc(cands, func(a, b NoteCandidate) int {
		return cmp.Or(strings.Compare(strings.ToLower(a.Title), strings.ToLower(b.Title)), strings.Compare(a.ID, b.ID))
	})
	if len(cands) > maxChoices {
		cands, more = cands[:maxChoices], true
	}
	for i := range cands {
		// The entity's own check, besides the search's flag: a protected
		// note is never offered.
		p, err := IsProtected(c, c, cands[i].ID)
		if err != nil {
			return nil, false, err
		}
		if p {
			return nil, false, fmt.Errorf("find_note: note %q is protected but the search did not say so", cands[i].ID)
		}
		n, err := GetNote(c, c, cands[i].ID)
		if err != nil {
			return nil, false, err
		}
		if len(n.Parents) > 0 {
			cands[i].ParentTitle = n.Parents[0].Title
		}
	}
	return cands, more, nil
}

// titleHasWords reports whether every word of query occurs in title as a
// word, ignoring case; a word ending in * needs a word of the title that
// starts with it. A query word that holds punctuation ("offline-sync")
// needs each of its parts.
func titleHasWords(title, query string) bool {
	words := lowerWords(title)
	for _, w := range strings.Fields(query) {
		prefix := strings.HasSuffix(w, "*")
		parts := lowerWords(strings.TrimRight(w, "*"))
		for i, p := range parts {
			last := prefix && i == len(parts)-1
			if !slices.ContainsFunc(words, func(t string) bool { return t == p || last && strings.HasPrefix(t, p) }) {
				return false
			}
		}
	}
	return true
}

// lowerWords splits s into its words (runs of letters and digits), in
// lower case.
func lowerWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// chooseNote asks the user which of cands they mean, with a form of one
// field whose values are the candidates' IDs, titled with their titles and
// parents (a picker in MCP clients). It returns the chosen ID, or "" when
// the user declined, cancelled, or answered with a note not among cands.
func chooseNote(c *llmtool.ReadCtx, query string, cands []NoteCandidate) (string, error) {
	options := make([]map[string]string, len(cands))
	for i, n := range cands {
		label := n.Title
		if n.ParentTitle != "" {
			label += " (in " + n.ParentTitle + ")"
		}
		options[i] = map[string]string{"const": n.ID, "title": label}
	}
	schema, err := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"noteId": map[string]any{"type": "string", "title": "Note", "description": "The note you mean.", "oneOf": options},
		},
		"required": []string{"noteId"},
	})
	if err != nil {
		return "", err
	}
	res, err := ask.Elicit(c, ask.ElicitRequest{
		Key:     "choose-note",
		Message: fmt.Sprintf("%d notes have a title matching %q. Which one do you mean?", len(cands), query),
		Schema:  schema,
	})
	if err != nil || res.Action != ask.Accept {
		return "", err
	}
	var answer struct {
		NoteID string `json:"noteId"`
	}
	if json.Unmarshal(res.Content, &answer) != nil || !slices.ContainsFunc(cands, func(n NoteCandidate) bool { return n.ID == answer.NoteID }) {
		return "", nil
	}
	return answer.NoteID, nil
}

// found is the result of find_note for the note id.
func found(c *llmtool.ReadCtx, id string, previewChars int, chosen bool) (FindNoteOut, error) {
	n, err := readNote(c, id, previewChars)
	if err != nil {
		return FindNoteOut{}, err
	}
	if n.IsProtected { // the candidates leave protected notes out; this keeps it so
		return FindNoteOut{}, fmt.Errorf("find_note: note %q is protected", id)
	}
	return FindNoteOut{Note: &n, ChosenByUser: chosen, Candidates: []NoteCandidate{}}, nil
}

// listed is the result of find_note that lists cands with msg.
func listed(cands []NoteCandidate, msg string) FindNoteOut {
	return FindNoteOut{Candidates: cands, Message: msg}
}
