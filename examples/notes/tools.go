package notes

import (
	"errors"
	"fmt"
	"html"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/guard"
)

// The OAuth scopes the notes tools declare (llmtool.Scopes): an access
// token's principal lists and calls the read tools, the note resource and
// the prompt with ScopeRead, and the write tools with ScopeWrite.
// Principals not limited by scopes, such as the chat's user, call all.
const (
	ScopeRead  = "notes:read"
	ScopeWrite = "notes:write"
)

// Tools is the notes tool module: eighteen tools that search, read and
// edit the note store, the resource note://{noteId} (a note's content),
// the prompt summarize_note, and the "note" entity kind their inputs
// reference, whose IDs complete in MCP clients. Register it with one line:
//
//	reg, err := llmtool.NewRegistry(db, nil, notes.Tools)
//
// where db is a store opened with [Open]. The entity guards of the "note"
// kind apply to every tool: a note must exist (deleted notes do not), a
// system note (root, _hidden, _share, _lbRoot, _globalNoteMap; see
// [IsSystem]) is never changed by a write tool, except as the new parent
// of a note or the target of a relation, and a protected note is neither
// read nor written. A principal limited by OAuth scopes (package oauth)
// needs the scope notes:read for the read tools, the resource and the
// prompt, and notes:write for the write tools; the users of a host's own
// chat are not limited by scopes.
var Tools = llmtool.DefineTools("notes",
	searchNotes, findNote, getNote, getNoteContent, getChildNotes, getSubtree,
	getAttributes, getAttribute,
	createNote, renameNote, setNoteContent, appendToNote, editNoteContent,
	deleteNote, moveNote, cloneNote,
	setAttribute, deleteAttribute,
	noteResource, summarizeNote,
).WithEntities(noteEntity(), branchEntity(), attributeEntity())

// noteEntity returns the declaration of the "note" entity kind that the
// inputs of [Tools] reference with ref:"note" tags. [Tools] ships it; a host
// that writes tools of its own over the same store references the kind
// with the same tag and registers Tools alongside them.
func noteEntity() *llmtool.Entity {
	return &llmtool.Entity{
		Kind: "note",
		Exists: func(c *llmtool.ReadCtx, id string) (bool, error) {
			return Exists(c, c, id)
		},
		System: func(_ *llmtool.ReadCtx, id string) (bool, error) {
			return IsSystem(id), nil
		},
		Protected: func(c *llmtool.ReadCtx, id string) (bool, error) {
			return IsProtected(c, c, id)
		},
		NotFoundNext: "Call search_notes or get_child_notes to find the note's ID.",
		// With the store's tracking (Changesets), every row of notes a
		// write changes meets these checks before commit, whatever tool
		// changed it; a rename, a type change or a (soft) deletion of a
		// system note is refused.
		Table: "notes", Key: "noteId", SystemColumns: []string{"title", "type", "mime", "isDeleted"},
		// How a change to a note reads to the person who approves it, in
		// the chat and in MCP clients, and in list_changes: `Delete note
		// "Ideas": content "…"`, not the row's IDs and timestamps; a note
		// is deleted by setting isDeleted.
		NameColumn:    "title",
		HiddenColumns: []string{"rowid", "mime", "dateCreated", "dateModified", "fts"}, // fts: PostgreSQL's search column
		ColumnLabels:  map[string]string{"isProtected": "protected"},
		DeletedColumn: "isDeleted",
		// Completion of note IDs in MCP clients (the note resource's
		// {noteId}, summarize_note's noteId): the registry drops protected
		// notes from what this returns.
		Complete: func(c *llmtool.ReadCtx, prefix string, limit int) ([]string, error) {
			return IDsWithPrefix(c, c, prefix, limit)
		},
	}
}

// branchEntity returns the declaration of the "branch" kind, a note's
// place under a parent (a note cloned to two parents has two), for the
// words of its changes: a branch has no name of its own, so a change
// reads by its parent's ID, `Delete branch: under "projects"`. It
// has no checks: the note's own row carries them.
func branchEntity() *llmtool.Entity {
	return &llmtool.Entity{
		Kind:   "branch",
		Exists: liveRow("branches", "branchId"),
		Table:  "branches", Key: "branchId",
		Columns:       []string{"parentNoteId"},
		ColumnLabels:  map[string]string{"parentNoteId": "under"},
		DeletedColumn: "isDeleted",
	}
}

// attributeEntity returns the declaration of the "attribute" kind, a
// note's label or relation, for the words of its changes: `Delete
// attribute "priority": value "high"`. Like a branch it has no checks.
func attributeEntity() *llmtool.Entity {
	return &llmtool.Entity{
		Kind:   "attribute",
		Exists: liveRow("attributes", "attributeId"),
		Table:  "attributes", Key: "attributeId",
		NameColumn:    "name",
		Columns:       []string{"name", "value"},
		DeletedColumn: "isDeleted",
	}
}

// liveRow is the Exists check of a kind whose rows are deleted softly:
// the row with the ID in column key of table, not marked isDeleted.
func liveRow(table, key string) func(c *llmtool.ReadCtx, id string) (bool, error) {
	q := `SELECT EXISTS (SELECT 1 FROM ` + table + ` WHERE ` + key + ` = ? AND isDeleted = 0)`
	return func(c *llmtool.ReadCtx, id string) (bool, error) {
		var ok bool
		err := c.QueryRow(q, id).Scan(&ok)
		return ok, err
	}
}

// Categories of the man catalog.
const (
	catReading    = "Reading"
	catWriting    = "Writing"
	catTree       = "Tree"
	catAttributes = "Attributes"
)

// Sizes of results.
const (
	// subtreeChildrenPerLevel is the most children get_subtree lists under
	// one note.
	subtreeChildrenPerLevel = 10
	// noteChildrenListed is the most children get_note lists.
	noteChildrenListed = 50
)

// CodeAttributeNames returns the attribute names set_attribute refuses,
// because a note carrying them makes the host application run code or
// inject markup: scripts run on events or on a schedule, widgets, HTTP
// handlers, search scripts and launcher scripts, application CSS and
// themes, rendered HTML notes, web views, title templates, icon packs, doc
// pages and the share templates. The comparison ignores case, and a name
// is refused as a label and as a relation alike.
//
// The list is Trilium's dangerous attributes (attributeService.
// isAttributeDangerous: the entries marked isDangerous in
// packages/commons/src/lib/builtin_attributes.ts), followed by our
// additions beyond Trilium.
func CodeAttributeNames() []string {
	return slices.Concat(triliumDangerousLabels, triliumDangerousRelations, stricterAttributeNames)
}

// triliumDangerousLabels are the labels Trilium marks dangerous.
var triliumDangerousLabels = []string{
	"run", "customRequestHandler", "customResourceProvider", "widget",
	"shareRaw", "titleTemplate", "webViewSrc", "iconPack", "docName", "docUrl",
	"scriptInLauncherContent",
}

// triliumDangerousRelations are the relations Trilium marks dangerous.
var triliumDangerousRelations = []string{
	"runOnNoteCreation", "runOnNoteTitleChange", "runOnNoteChange",
	"runOnNoteContentChange", "runOnNoteDeletion",
	"runOnBranchCreation", "runOnBranchChange", "runOnBranchDeletion",
	"runOnChildNoteCreation", "runOnAttributeCreation", "runOnAttributeChange",
	"renderNote", "searchScript", "script", "shareJs", "shareHtml", "shareTemplate",
	// "widget" is a dangerous relation too; it is in the labels above.
}

// stricterAttributeNames are our additions beyond Trilium's list: the
// scheduled script labels runOnInstance and runAtHour (Trilium marks them
// not dangerous, but they say when a #run script runs), the legacy
// widgetRelation, appCss and appTheme (CSS applied to the whole
// application) and the shareCss relation (CSS on shared pages).
var stricterAttributeNames = []string{
	"runOnInstance", "runAtHour", "widgetRelation", "appCss", "appTheme", "shareCss",
}

// ---------------------------------------------------------------------------
// search_notes

// SearchNotesIn is the input of search_notes.
type SearchNotesIn struct {
	Query          string `json:"query" desc:"Words to find in titles and content. All words must match; end a word with * to match words starting with it." minLength:"1"`
	AncestorNoteID string `json:"ancestorNoteId,omitempty" ref:"note" desc:"Only search notes below this note. Leave out to search every note."`
	Limit          int    `json:"limit,omitempty" desc:"Maximum number of results (default 10)." default:"10" minimum:"1" maximum:"50"`
}

// SearchNotesOut is the result of search_notes.
type SearchNotesOut struct {
	Results []SearchResult `json:"results"`
}

var searchNotes = llmtool.Read("search_notes", "Full-text search over note titles and content, best match first.",
	func(c *llmtool.ReadCtx, in SearchNotesIn) (SearchNotesOut, error) {
		res, err := Search(c, c, in.Query, in.AncestorNoteID, in.Limit)
		if errors.Is(err, ErrInvalidArgument) {
			return SearchNotesOut{}, llmtool.InvalidArgs("/query: %q has no word to search for.", in.Query).
				Next("Send at least one word made of letters or digits.")
		}
		if err != nil {
			return SearchNotesOut{}, err
		}
		for i := range res {
			res[i].Snippet = cleanSnippet(res[i].Snippet)
		}
		return SearchNotesOut{Results: res}, nil
	},
	llmtool.Category(catReading), llmtool.Summary("Find notes by words in their title or content"),
	llmtool.FriendlyName("Search notes"), llmtool.Idempotent(), llmtool.ManPage(manSearchNotes), llmtool.Scopes(ScopeRead))

// cleanSnippet turns a snippet of HTML content into plain text: tags, and
// pieces of tags cut at either end, are removed, entities decoded and white
// space collapsed. The ** around matched words and the … marking a cut
// stay.
func cleanSnippet(s string) string {
	const ellipsis = "…"
	head, tail := strings.HasPrefix(s, ellipsis), strings.HasSuffix(s, ellipsis)
	s = strings.TrimSuffix(strings.TrimPrefix(s, ellipsis), ellipsis)
	if i, j := strings.IndexByte(s, '>'), strings.IndexByte(s, '<'); i >= 0 && (j < 0 || i < j) {
		s, head = s[i+1:], true // the end of a tag cut at the start
	}
	if i, j := strings.LastIndexByte(s, '<'), strings.LastIndexByte(s, '>'); i >= 0 && i > j {
		s, tail = s[:i], true // the start of a tag cut at the end
	}
	s = plainText(s)
	if head && s != "" {
		s = ellipsis + s
	}
	if tail && s != "" {
		s += ellipsis
	}
	return s
}

// plainText removes the HTML tags of s, decodes its entities and collapses
// its white space.
func plainText(s string) string {
	var b strings.Builder
	inTag := false
	for _, r := range s {
		switch {
		case r == '<':
			inTag = true
			b.WriteByte(' ')
		case r == '>' && inTag:
			inTag = false
		case !inTag:
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(html.UnescapeString(b.String())), " ")
}

// ---------------------------------------------------------------------------
// get_note

// GetNoteIn is the input of get_note.
type GetNoteIn struct {
	NoteID       string `json:"noteId" ref:"note" desc:"ID of the note."`
	PreviewChars int    `json:"previewChars,omitempty" desc:"Length of the plain-text content preview in characters (default 200)." default:"200" minimum:"0" maximum:"2000"`
}

// NoteOut is the result of get_note: the note's metadata, parents, children
// (the first 50; ChildCount has them all), attributes and the start of its
// content as plain text.
type NoteOut struct {
	Note
	ChildCount     int    `json:"childCount"`
	ContentLength  int    `json:"contentLength"`
	ContentPreview string `json:"contentPreview"`
}

var getNote = llmtool.Read("get_note", "Read a note's metadata: title, type, parents, children, attributes and a content preview.",
	func(c *llmtool.ReadCtx, in GetNoteIn) (NoteOut, error) {
		return readNote(c, in.NoteID, in.PreviewChars)
	},
	llmtool.Category(catReading), llmtool.Summary("Read a note's metadata and a content preview"),
	llmtool.FriendlyName("Read note"), llmtool.Idempotent(), llmtool.ManPage(manGetNote), llmtool.Scopes(ScopeRead))

// readNote returns what get_note returns for the note id, with a preview
// of previewChars characters.
func readNote(c *llmtool.ReadCtx, id string, previewChars int) (NoteOut, error) {
	n, err := GetNote(c, c, id)
	if err != nil {
		return NoteOut{}, err
	}
	content, err := GetContent(c, c, id)
	if err != nil {
		return NoteOut{}, err
	}
	out := NoteOut{Note: *n, ChildCount: len(n.Children), ContentLength: utf8.RuneCountInString(content)}
	if len(out.Children) > noteChildrenListed {
		out.Children = out.Children[:noteChildrenListed]
	}
	out.ContentPreview = preview(content, previewChars)
	return out, nil
}

// preview returns the first n characters of content as plain text: HTML
// tags removed, entities decoded, white space collapsed, "…" added when
// cut. n <= 0 gives no preview.
func preview(content string, n int) string {
	if n <= 0 {
		return ""
	}
	text := plainText(content)
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	runes := []rune(text)
	return strings.TrimRightFunc(string(runes[:n]), unicode.IsSpace) + "…"
}

// ---------------------------------------------------------------------------
// get_note_content

// GetNoteContentIn is the input of get_note_content.
type GetNoteContentIn struct {
	NoteID   string `json:"noteId" ref:"note" desc:"ID of the note."`
	Offset   int    `json:"offset,omitempty" desc:"Character to start from, to read a long note in parts (default 0)." default:"0" minimum:"0"`
	MaxChars int    `json:"maxChars,omitempty" desc:"Most characters to return (default 20000)." default:"20000" minimum:"1" maximum:"100000"`
}

// NoteContentOut is the result of get_note_content.
type NoteContentOut struct {
	NoteID     string `json:"noteId"`
	Title      string `json:"title"`
	Type       string `json:"type"`
	Mime       string `json:"mime"`
	Content    string `json:"content"`
	Offset     int    `json:"offset"`
	TotalChars int    `json:"totalChars"`
	// Truncated is true when content stops before the end; read on with
	// offset set to Offset plus the length of Content.
	Truncated bool `json:"truncated"`
}

var getNoteContent = llmtool.Read("get_note_content", "Read a note's full content (HTML for text notes).",
	func(c *llmtool.ReadCtx, in GetNoteContentIn) (NoteContentOut, error) {
		n, err := GetNote(c, c, in.NoteID)
		if err != nil {
			return NoteContentOut{}, err
		}
		content, err := GetContent(c, c, in.NoteID)
		if err != nil {
			return NoteContentOut{}, err
		}
		runes := []rune(content)
		if in.Offset > len(runes) {
			return NoteContentOut{}, llmtool.InvalidArgs("/offset: %d is past the end of the content, which has %d characters.", in.Offset, len(runes)).
				Next("Send an offset below the content's length, or leave it out to read from the start.")
		}
		end := min(len(runes), in.Offset+in.MaxChars)
		return NoteContentOut{
			NoteID: n.ID, Title: n.Title, Type: n.Type, Mime: n.Mime,
			Content: string(runes[in.Offset:end]), Offset: in.Offset,
			TotalChars: len(runes), Truncated: end < len(runes),
		}, nil
	},
	llmtool.Category(catReading), llmtool.Summary("Read a note's full content"),
	llmtool.FriendlyName("Read note content"), llmtool.Idempotent(), llmtool.ManPage(manGetNoteContent), llmtool.Scopes(ScopeRead))

// ---------------------------------------------------------------------------
// get_child_notes

// GetChildNotesIn is the input of get_child_notes.
type GetChildNotesIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the parent note; the tree starts at \"root\"."`
	Limit  int    `json:"limit,omitempty" desc:"Most children to list (default 50)." default:"50" minimum:"1" maximum:"500"`
}

// ChildNote is one child in the result of get_child_notes, or one note of
// the result of get_subtree.
type ChildNote struct {
	NoteID       string `json:"noteId"`
	Title        string `json:"title"`
	Type         string `json:"type"`
	IsProtected  bool   `json:"isProtected,omitempty"`
	ChildCount   int    `json:"childCount"`
	ParentNoteID string `json:"parentNoteId,omitempty"` // get_subtree only
	Depth        int    `json:"depth,omitempty"`        // get_subtree only: 1 for children of the top note
	// Truncated is true when some of the note's children are not listed.
	Truncated bool `json:"truncated,omitempty"`
}

// ChildNotesOut is the result of get_child_notes.
type ChildNotesOut struct {
	NoteID     string      `json:"noteId"`
	Title      string      `json:"title"`
	ChildCount int         `json:"childCount"`
	Children   []ChildNote `json:"children"`
	// Truncated is true when there are more children than listed.
	Truncated bool `json:"truncated"`
}

var getChildNotes = llmtool.Read("get_child_notes", "List the children of a note in tree order.",
	func(c *llmtool.ReadCtx, in GetChildNotesIn) (ChildNotesOut, error) {
		t, err := Subtree(c, c, in.NoteID, 1, in.Limit)
		if err != nil {
			return ChildNotesOut{}, err
		}
		out := ChildNotesOut{NoteID: t.ID, Title: t.Title, ChildCount: t.ChildCount, Truncated: t.Truncated, Children: []ChildNote{}}
		for _, k := range t.Children {
			out.Children = append(out.Children, ChildNote{NoteID: k.ID, Title: k.Title, Type: k.Type, IsProtected: k.IsProtected, ChildCount: k.ChildCount})
		}
		return out, nil
	},
	llmtool.Category(catReading), llmtool.Summary("List a note's children"),
	llmtool.FriendlyName("List child notes"), llmtool.Idempotent(), llmtool.ManPage(manGetChildNotes), llmtool.Scopes(ScopeRead))

// ---------------------------------------------------------------------------
// get_subtree

// GetSubtreeIn is the input of get_subtree.
type GetSubtreeIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note at the top of the subtree."`
	Depth  int    `json:"depth,omitempty" desc:"Levels below the note to list, 1 to 5 (default 2)." default:"2" minimum:"1" maximum:"5"`
}

// SubtreeOut is the result of get_subtree: the top note, then its
// descendants in depth-first tree order, each with its depth and parent.
type SubtreeOut struct {
	NoteID     string      `json:"noteId"`
	Title      string      `json:"title"`
	ChildCount int         `json:"childCount"`
	Notes      []ChildNote `json:"notes"`
}

var getSubtree = llmtool.Read("get_subtree", "List a note's descendants a few levels deep, at most 10 children per note.",
	func(c *llmtool.ReadCtx, in GetSubtreeIn) (SubtreeOut, error) {
		t, err := Subtree(c, c, in.NoteID, in.Depth, subtreeChildrenPerLevel)
		if err != nil {
			return SubtreeOut{}, err
		}
		out := SubtreeOut{NoteID: t.ID, Title: t.Title, ChildCount: t.ChildCount, Notes: []ChildNote{}}
		var walk func(parent *TreeNode, depth int)
		walk = func(parent *TreeNode, depth int) {
			for i := range parent.Children {
				k := &parent.Children[i]
				out.Notes = append(out.Notes, ChildNote{
					NoteID: k.ID, Title: k.Title, Type: k.Type, IsProtected: k.IsProtected,
					ChildCount: k.ChildCount, ParentNoteID: parent.ID, Depth: depth, Truncated: k.Truncated,
				})
				walk(k, depth+1)
			}
		}
		walk(t, 1)
		return out, nil
	},
	llmtool.Category(catReading), llmtool.Summary("List a note's descendants"),
	llmtool.FriendlyName("Read subtree"), llmtool.Idempotent(), llmtool.ManPage(manGetSubtree), llmtool.Scopes(ScopeRead))

// ---------------------------------------------------------------------------
// get_attributes, get_attribute

// GetAttributesIn is the input of get_attributes.
type GetAttributesIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note."`
}

// AttributesOut is the result of get_attributes.
type AttributesOut struct {
	NoteID     string          `json:"noteId"`
	Attributes []NoteAttribute `json:"attributes"`
}

var getAttributes = llmtool.Read("get_attributes", "List a note's labels and relations.",
	func(c *llmtool.ReadCtx, in GetAttributesIn) (AttributesOut, error) {
		attrs, err := Attributes(c, c, in.NoteID)
		if err != nil {
			return AttributesOut{}, err
		}
		return AttributesOut{NoteID: in.NoteID, Attributes: attrs}, nil
	},
	llmtool.Category(catAttributes), llmtool.Summary("List a note's labels and relations"),
	llmtool.FriendlyName("List attributes"), llmtool.Idempotent(), llmtool.ManPage(manGetAttributes), llmtool.Scopes(ScopeRead))

// GetAttributeIn is the input of get_attribute.
type GetAttributeIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note."`
	Name   string `json:"name" desc:"Name of the label or relation, without # or ~." minLength:"1"`
}

var getAttribute = llmtool.Read("get_attribute", "Read one label or relation of a note by name.",
	func(c *llmtool.ReadCtx, in GetAttributeIn) (NoteAttribute, error) {
		a, err := Attribute(c, c, in.NoteID, in.Name)
		if errors.Is(err, ErrNotFound) {
			return NoteAttribute{}, llmtool.NotFound("Note %q has no attribute named %q.", in.NoteID, in.Name).
				Next("Call get_attributes to see the note's attributes.")
		}
		if err != nil {
			return NoteAttribute{}, err
		}
		return *a, nil
	},
	llmtool.Category(catAttributes), llmtool.Summary("Read one attribute of a note"),
	llmtool.FriendlyName("Read attribute"), llmtool.Idempotent(), llmtool.ManPage(manGetAttribute), llmtool.Scopes(ScopeRead))

// ---------------------------------------------------------------------------
// create_note, rename_note

// CreateNoteIn is the input of create_note.
type CreateNoteIn struct {
	ParentNoteID string `json:"parentNoteId" ref:"note,system-ok" desc:"ID of the parent note; \"root\" is the top of the tree."`
	Title        string `json:"title" desc:"Title of the new note." minLength:"1" maxLength:"200"`
	Type         string `json:"type,omitempty" desc:"Note type (default text)." default:"text" enum:"text|code|book|mermaid"`
	Content      string `json:"content,omitempty" desc:"Initial content: HTML for text and book notes, plain text for code and mermaid."`
}

// NoteSummary is the result of the write tools that change one note.
type NoteSummary struct {
	NoteID        string    `json:"noteId"`
	Title         string    `json:"title"`
	Type          string    `json:"type"`
	Parents       []NoteRef `json:"parents"`
	ContentLength int       `json:"contentLength"`
}

// summary reads the note's summary after a write, in the same transaction.
func summary(c *llmtool.WriteCtx, id string) (NoteSummary, error) {
	n, err := GetNote(c, c, id)
	if err != nil {
		return NoteSummary{}, err
	}
	var length int
	if err := c.QueryRow(`SELECT length(content) FROM notes WHERE noteId = ?`, id).Scan(&length); err != nil {
		return NoteSummary{}, fmt.Errorf("read content length of note %q: %w", id, err)
	}
	return NoteSummary{NoteID: n.ID, Title: n.Title, Type: n.Type, Parents: n.Parents, ContentLength: length}, nil
}

// blankTitle refuses a title of white space only.
func blankTitle(title string) error {
	if strings.TrimSpace(title) == "" {
		return llmtool.InvalidArgs("/title: is blank.").Next("Send a title with at least one visible character.")
	}
	return nil
}

var createNote = llmtool.Write("create_note", "Create a note as the last child of a parent note.",
	func(c *llmtool.WriteCtx, in CreateNoteIn) (NoteSummary, error) {
		if err := blankTitle(in.Title); err != nil {
			return NoteSummary{}, err
		}
		n, err := CreateNote(c, c, in.ParentNoteID, in.Title, in.Type, in.Content)
		if err != nil {
			return NoteSummary{}, err
		}
		return summary(c, n.ID)
	},
	llmtool.Category(catWriting), llmtool.Summary("Create a note under a parent"),
	llmtool.FriendlyName("Create note"), llmtool.ManPage(manCreateNote), llmtool.Scopes(ScopeWrite))

// RenameNoteIn is the input of rename_note.
type RenameNoteIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note to rename."`
	Title  string `json:"title" desc:"The new title." minLength:"1" maxLength:"200"`
}

var renameNote = llmtool.Write("rename_note", "Change a note's title.",
	func(c *llmtool.WriteCtx, in RenameNoteIn) (NoteSummary, error) {
		if err := blankTitle(in.Title); err != nil {
			return NoteSummary{}, err
		}
		if err := Rename(c, c, in.NoteID, in.Title); err != nil {
			return NoteSummary{}, err
		}
		return summary(c, in.NoteID)
	},
	llmtool.Category(catWriting), llmtool.Summary("Change a note's title"),
	llmtool.FriendlyName("Rename note"), llmtool.Idempotent(), llmtool.ManPage(manRenameNote), llmtool.Scopes(ScopeWrite))

// ---------------------------------------------------------------------------
// set_note_content, append_to_note, edit_note_content

// SetNoteContentIn is the input of set_note_content.
type SetNoteContentIn struct {
	NoteID  string `json:"noteId" ref:"note" desc:"ID of the note."`
	Content string `json:"content" desc:"The whole new content: HTML for text notes, plain text for code notes."`
}

var setNoteContent = llmtool.Write("set_note_content", "Replace a note's whole content; the old content is kept as a revision.",
	func(c *llmtool.WriteCtx, in SetNoteContentIn) (NoteSummary, error) {
		if err := SetContent(c, c, in.NoteID, in.Content, SourceModel); err != nil {
			return NoteSummary{}, err
		}
		return summary(c, in.NoteID)
	},
	llmtool.Category(catWriting), llmtool.Summary("Replace a note's content"),
	llmtool.FriendlyName("Replace note content"), llmtool.Idempotent(), llmtool.ManPage(manSetNoteContent), llmtool.Scopes(ScopeWrite))

// AppendToNoteIn is the input of append_to_note.
type AppendToNoteIn struct {
	NoteID  string `json:"noteId" ref:"note" desc:"ID of the note."`
	Content string `json:"content" desc:"Text to add at the end, as is: for text notes an HTML block such as <p>…</p>." minLength:"1"`
}

var appendToNote = llmtool.Write("append_to_note", "Add content at the end of a note.",
	func(c *llmtool.WriteCtx, in AppendToNoteIn) (NoteSummary, error) {
		if err := AppendContent(c, c, in.NoteID, in.Content); err != nil {
			return NoteSummary{}, err
		}
		return summary(c, in.NoteID)
	},
	llmtool.Category(catWriting), llmtool.Summary("Add content at the end of a note"),
	llmtool.FriendlyName("Append to note"), llmtool.ManPage(manAppendToNote), llmtool.Scopes(ScopeWrite))

// EditNoteContentIn is the input of edit_note_content.
type EditNoteContentIn struct {
	NoteID  string `json:"noteId" ref:"note" desc:"ID of the note."`
	OldText string `json:"oldText" desc:"Exact text to replace, copied from get_note_content; it must occur exactly once." minLength:"1"`
	NewText string `json:"newText" desc:"Text to put in its place; empty to delete oldText."`
}

// countOccurrences counts the places sub starts in s, overlapping ones
// included, so that an ambiguous oldText is never taken as unique.
func countOccurrences(s, sub string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return n
		}
		n++
		_, size := utf8.DecodeRuneInString(s[i+j:])
		i += j + size
	}
}

var editNoteContent = llmtool.Write("edit_note_content", "Replace one exact passage of a note's content; the old content is kept as a revision.",
	func(c *llmtool.WriteCtx, in EditNoteContentIn) (NoteSummary, error) {
		content, err := GetContent(c, c, in.NoteID)
		if err != nil {
			return NoteSummary{}, err
		}
		switch n := countOccurrences(content, in.OldText); n {
		case 1:
		case 0:
			return NoteSummary{}, llmtool.Conflict("oldText does not occur in the content of note %q; nothing was changed.", in.NoteID).
				Next("Call get_note_content and copy oldText from it exactly, HTML tags and spaces included.")
		default:
			return NoteSummary{}, llmtool.Conflict("oldText occurs %d times in the content of note %q; it must occur exactly once, so nothing was changed.", n, in.NoteID).
				Next("Add the words around the passage to oldText so that it occurs only once.")
		}
		if err := SetContent(c, c, in.NoteID, strings.Replace(content, in.OldText, in.NewText, 1), SourceModel); err != nil {
			return NoteSummary{}, err
		}
		return summary(c, in.NoteID)
	},
	llmtool.Category(catWriting), llmtool.Summary("Replace one passage of a note's content"),
	llmtool.FriendlyName("Edit note content"), llmtool.ManPage(manEditNoteContent), llmtool.Scopes(ScopeWrite))

// ---------------------------------------------------------------------------
// delete_note

// DeleteNoteIn is the input of delete_note.
type DeleteNoteIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note to delete."`
}

// DeleteNoteOut is the result of delete_note.
type DeleteNoteOut struct {
	// DeletedNoteIDs lists the note and the descendants deleted with it,
	// the note first.
	DeletedNoteIDs []string `json:"deletedNoteIds"`
}

// noteTitle returns a note's title, for the line a person approving a
// change reads (WriteCtx.Describe).
func noteTitle(c *llmtool.WriteCtx, id string) (string, error) {
	var title string
	err := c.QueryRow(`SELECT title FROM notes WHERE noteId = $1`, id).Scan(&title)
	return title, err
}

// noProtectedDescendant refuses to delete a subtree that holds a protected
// note, which a model must not change.
func noProtectedDescendant(c *llmtool.ReadCtx, in DeleteNoteIn) error {
	p, err := ProtectedDescendant(c, c, in.NoteID)
	if err != nil {
		return err
	}
	if p != "" {
		return llmtool.Denied("Note %q has the protected note %q below it, which would be deleted too.", in.NoteID, p).
			Next("Delete the other notes below it one by one, or ask the user to delete this note.")
	}
	return nil
}

var deleteNote = llmtool.Write("delete_note", "Delete a note, and its children that have no other parent.",
	func(c *llmtool.WriteCtx, in DeleteNoteIn) (DeleteNoteOut, error) {
		title, err := noteTitle(c, in.NoteID)
		if err != nil {
			return DeleteNoteOut{}, err
		}
		ids, err := DeleteNote(c, c, in.NoteID)
		if err != nil {
			return DeleteNoteOut{}, err
		}
		switch below := len(ids) - 1; below {
		case 0:
			c.Describe("Delete note %q.", title)
		case 1:
			c.Describe("Delete note %q and the note below it.", title)
		default:
			c.Describe("Delete note %q and the %d notes below it.", title, below)
		}
		return DeleteNoteOut{DeletedNoteIDs: ids}, nil
	},
	llmtool.Guards(noProtectedDescendant),
	llmtool.Category(catWriting), llmtool.Summary("Delete a note"),
	llmtool.FriendlyName("Delete note"), llmtool.Destructive(), llmtool.ManPage(manDeleteNote), llmtool.Scopes(ScopeWrite))

// ---------------------------------------------------------------------------
// move_note, clone_note

// MoveNoteIn is the input of move_note.
type MoveNoteIn struct {
	NoteID           string `json:"noteId" ref:"note" desc:"ID of the note to move."`
	ParentNoteID     string `json:"parentNoteId" ref:"note,system-ok" desc:"ID of the new parent."`
	FromParentNoteID string `json:"fromParentNoteId,omitempty" ref:"note,system-ok" desc:"The parent to move it away from, for a note with several parents. Leave out to use its first parent."`
}

var moveNote = llmtool.Write("move_note", "Move a note, with its subtree, under another parent.",
	func(c *llmtool.WriteCtx, in MoveNoteIn) (NoteSummary, error) {
		n, err := GetNote(c, c, in.NoteID)
		if err != nil {
			return NoteSummary{}, err
		}
		from := in.FromParentNoteID
		if from == "" && len(n.Parents) > 0 {
			from = n.Parents[0].ID
		}
		err = MoveNote(c, c, in.NoteID, in.FromParentNoteID, in.ParentNoteID)
		switch {
		case errors.Is(err, ErrCycle):
			return NoteSummary{}, llmtool.Conflict("Note %q cannot be moved under %q, which is the note itself or below it.", in.NoteID, in.ParentNoteID).
				Next("Choose a parent outside the note's subtree; call get_subtree on the note to see it.")
		case errors.Is(err, ErrConflict):
			return NoteSummary{}, llmtool.Conflict("Note %q is already a child of %q.", in.NoteID, in.ParentNoteID).
				Next("Leave it there, or choose another parent.")
		case errors.Is(err, ErrNotFound):
			return NoteSummary{}, llmtool.NotFound("Note %q is not a child of %q.", in.NoteID, in.FromParentNoteID).
				Next("Call get_note to see its parents, or leave fromParentNoteId out.")
		case err != nil:
			return NoteSummary{}, err
		}
		fromTitle, err := noteTitle(c, from)
		if err != nil {
			return NoteSummary{}, err
		}
		toTitle, err := noteTitle(c, in.ParentNoteID)
		if err != nil {
			return NoteSummary{}, err
		}
		if from == in.ParentNoteID {
			c.Describe("Leave note %q under %q, where it is.", n.Title, toTitle)
		} else {
			c.Describe("Move note %q from under %q to under %q.", n.Title, fromTitle, toTitle)
		}
		return summary(c, in.NoteID)
	},
	llmtool.Category(catTree), llmtool.Summary("Move a note under another parent"),
	llmtool.FriendlyName("Move note"), llmtool.Idempotent(), llmtool.ManPage(manMoveNote), llmtool.Scopes(ScopeWrite))

// CloneNoteIn is the input of clone_note.
type CloneNoteIn struct {
	NoteID       string `json:"noteId" ref:"note" desc:"ID of the note to clone."`
	ParentNoteID string `json:"parentNoteId" ref:"note,system-ok" desc:"ID of the additional parent."`
}

var cloneNote = llmtool.Write("clone_note", "Place a note under one more parent; it stays where it is too.",
	func(c *llmtool.WriteCtx, in CloneNoteIn) (NoteSummary, error) {
		err := CloneNote(c, c, in.NoteID, in.ParentNoteID)
		switch {
		case errors.Is(err, ErrCycle):
			return NoteSummary{}, llmtool.Conflict("Note %q cannot be cloned under %q, which is the note itself or below it.", in.NoteID, in.ParentNoteID).
				Next("Choose a parent outside the note's subtree; call get_subtree on the note to see it.")
		case errors.Is(err, ErrConflict):
			return NoteSummary{}, llmtool.Conflict("Note %q is already a child of %q.", in.NoteID, in.ParentNoteID).
				Next("Choose another parent; get_note lists the note's parents.")
		case err != nil:
			return NoteSummary{}, err
		}
		return summary(c, in.NoteID)
	},
	llmtool.Category(catTree), llmtool.Summary("Place a note under one more parent"),
	llmtool.FriendlyName("Clone note"), llmtool.ManPage(manCloneNote), llmtool.Scopes(ScopeWrite))

// ---------------------------------------------------------------------------
// set_attribute, delete_attribute

// SetAttributeIn is the input of set_attribute.
type SetAttributeIn struct {
	NoteID       string `json:"noteId" ref:"note" desc:"ID of the note."`
	Type         string `json:"type,omitempty" desc:"label (#name=value) or relation (~name=targetNoteId) (default label)." default:"label" enum:"label|relation"`
	Name         string `json:"name" desc:"Attribute name: letters, digits, _ and :." minLength:"1" maxLength:"100" pattern:"^[\\p{L}\\p{N}_:]+$"`
	Value        string `json:"value,omitempty" desc:"A label's value; may be empty. Not used by relations."`
	TargetNoteID string `json:"targetNoteId,omitempty" ref:"note,system-ok" desc:"A relation's target note. Required for relations, not used by labels."`
}

// attributeShape checks that a label has no target and a relation has one
// and no value.
func attributeShape(_ *llmtool.ReadCtx, in SetAttributeIn) error {
	if in.Type == AttributeRelation {
		if in.TargetNoteID == "" {
			return llmtool.InvalidArgs("/targetNoteId: is required for a relation.").
				Next("Send the ID of the note the relation points to.")
		}
		if in.Value != "" {
			return llmtool.InvalidArgs("/value: a relation has no value; its target goes in targetNoteId.").
				Next("Leave value out and send targetNoteId.")
		}
		return nil
	}
	if in.TargetNoteID != "" {
		return llmtool.InvalidArgs("/targetNoteId: is only for relations.").
			Next("Put a label's text in value, or send type \"relation\".")
	}
	return nil
}

var setAttribute = llmtool.Write("set_attribute", "Set a label or relation on a note, replacing one of the same type and name.",
	func(c *llmtool.WriteCtx, in SetAttributeIn) (NoteAttribute, error) {
		value := in.Value
		if in.Type == AttributeRelation {
			value = in.TargetNoteID
		}
		a, err := SetAttribute(c, c, in.NoteID, in.Type, in.Name, value)
		if err != nil {
			return NoteAttribute{}, err
		}
		return *a, nil
	},
	llmtool.Guards(
		guard.DenyValues("name", func(in SetAttributeIn) string { return in.Name }, CodeAttributeNames(),
			"It would make the application run code; man set_attribute lists the refused names. Use a name that describes the note, such as \"status\"."),
		attributeShape,
	),
	llmtool.Category(catAttributes), llmtool.Summary("Set a label or relation on a note"),
	llmtool.FriendlyName("Set attribute"), llmtool.Idempotent(), llmtool.ManPage(manSetAttribute), llmtool.Scopes(ScopeWrite))

// DeleteAttributeIn is the input of delete_attribute.
type DeleteAttributeIn struct {
	NoteID      string `json:"noteId" ref:"note" desc:"ID of the note the attribute is on."`
	AttributeID string `json:"attributeId" desc:"ID of the attribute, from get_attributes." minLength:"1"`
}

// DeleteAttributeOut is the result of delete_attribute.
type DeleteAttributeOut struct {
	NoteID      string `json:"noteId"`
	AttributeID string `json:"attributeId"`
	Deleted     bool   `json:"deleted"`
}

var deleteAttribute = llmtool.Write("delete_attribute", "Remove a label or relation from a note.",
	func(c *llmtool.WriteCtx, in DeleteAttributeIn) (DeleteAttributeOut, error) {
		err := DeleteAttribute(c, c, in.AttributeID, in.NoteID)
		switch {
		case errors.Is(err, ErrNotOwned):
			return DeleteAttributeOut{}, llmtool.NotFound("Attribute %q is not on note %q.", in.AttributeID, in.NoteID).
				Next("Call get_attributes on the note to see its attribute IDs.")
		case errors.Is(err, ErrNotFound):
			return DeleteAttributeOut{}, llmtool.NotFound("Attribute %q does not exist.", in.AttributeID).
				Next("Call get_attributes on the note to see its attribute IDs.")
		case err != nil:
			return DeleteAttributeOut{}, err
		}
		return DeleteAttributeOut{NoteID: in.NoteID, AttributeID: in.AttributeID, Deleted: true}, nil
	},
	llmtool.Category(catAttributes), llmtool.Summary("Remove a label or relation"),
	llmtool.FriendlyName("Delete attribute"), llmtool.Destructive(), llmtool.ManPage(manDeleteAttribute), llmtool.Scopes(ScopeWrite))

// ---------------------------------------------------------------------------
// The note resource and the summarize_note prompt

// NoteIn is the input of the note resource and of summarize_note: the note
// the URI (note://{noteId}) or the prompt's argument names.
type NoteIn struct {
	NoteID string `json:"noteId" ref:"note" desc:"ID of the note."`
}

// noteResource serves a note's content to MCP clients as a resource, with
// the note's MIME type (text/html for text notes). It runs as get_note
// does, so a missing, deleted or protected note is refused with the same
// sentence.
var noteResource = llmtool.Resource("note", "note://{noteId}", "A note's content, with its MIME type.",
	func(c *llmtool.ReadCtx, in NoteIn) (llmtool.Rich, error) {
		var mime, content string
		if err := c.QueryRow(`SELECT mime, content FROM notes WHERE noteId = $1 AND isDeleted = 0`, in.NoteID).Scan(&mime, &content); err != nil {
			return llmtool.Rich{}, fmt.Errorf("read note %q: %w", in.NoteID, err)
		}
		return llmtool.Rich{Content: []llmtool.Content{{Type: "text", Text: content, MIMEType: mime}}}, nil
	},
	llmtool.Category(catReading), llmtool.Summary("A note's content"),
	llmtool.FriendlyName("Note"), llmtool.ManPage(manNoteResource), llmtool.Scopes(ScopeRead))

// summarizeNote is a prompt a person picks in an MCP client (or a host's
// chat offers): it asks the model to summarize a note, quoting the note's
// title and content so that no tool call is needed.
var summarizeNote = llmtool.Prompt("summarize_note", "Ask for a short summary of a note.",
	func(c *llmtool.ReadCtx, in NoteIn) ([]llmtool.Message, error) {
		var title, mime, content string
		if err := c.QueryRow(`SELECT title, mime, content FROM notes WHERE noteId = $1 AND isDeleted = 0`, in.NoteID).Scan(&title, &mime, &content); err != nil {
			return nil, fmt.Errorf("read note %q: %w", in.NoteID, err)
		}
		return []llmtool.Message{{Role: "user", Content: llmtool.TextContent(summarizeText(in.NoteID, title, mime, content))}}, nil
	},
	llmtool.Category(catReading), llmtool.Summary("Summarize a note"),
	llmtool.FriendlyName("Summarize note"), llmtool.ManPage(manSummarizeNote), llmtool.Scopes(ScopeRead))

// summarizeText is the message of summarize_note.
func summarizeText(id, title, mime, content string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Summarize the note %q (ID %s) in at most three sentences.\n", title, id)
	if strings.TrimSpace(content) == "" {
		b.WriteString("The note is empty; say so.")
		return b.String()
	}
	if mime == "" {
		mime = "no MIME type"
	}
	fmt.Fprintf(&b, "Its content (%s) follows between the lines.\n---\n%s\n---", mime, content)
	return b.String()
}
