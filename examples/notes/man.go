package notes

// Man pages of the notes tools, shown by "man <tool>" after the NAME,
// SYNOPSIS, OPTIONS and DESCRIPTION that llmtool generates from each tool's
// definition. They say what the short descriptions leave out and end with
// EXAMPLES.

const manSearchNotes = `NOTES
    Each word is matched as a whole word, ignoring case and accents; all
    words must occur in the title or the content. Quotes and operators
    (AND, OR, NOT, NEAR) are ordinary words. A word ending in * matches
    every word that starts with it.
    Protected notes are found by title only and have no snippet; their
    content cannot be read. Deleted notes are never found.
    In snippets, the matched words are wrapped in **.

EXAMPLES
    {"query": "sync engine"}
        Notes that contain both "sync" and "engine".
    {"query": "panc*", "limit": 3}
        At most 3 notes with a word starting with "panc".
    {"query": "plugin", "ancestorNoteId": "projects"}
        Notes below "projects" that mention "plugin".

SEE ALSO
    get_note, get_note_content, get_subtree`

const manFindNote = `NOTES
    For a note the user names by its title ("my meeting notes"). Every
    word must occur in the title, ignoring case; a word ending in * matches
    every word that starts with it. Protected notes are never found.
    When exactly one note matches, the result has it as get_note gives it.
    When 2 to 10 match and the client can ask its user, the user picks one
    from a list of their titles (with each one's parent) and the result has
    that note, with chosenByUser true. Otherwise, when the user does not
    choose, the client cannot ask, or more than 10 match, the result lists
    the candidates (ID, title, parent's title) and says what to do: call
    get_note with the ID of the one meant. No match is an error.

EXAMPLES
    {"title": "pancakes"}
        The note "Pancakes", with a 200-character preview.
    {"title": "notes"}
        Several notes match ("Meeting notes", "Hidden Notes", ...): the
        user chooses one, or the result lists them.
    {"title": "road*", "previewChars": 0}
        The note whose title has a word starting with "road", no preview.

SEE ALSO
    search_notes, get_note`

const manGetNote = `NOTES
    The result has the note's title, type, MIME type, dates, parents (a
    cloned note has several), up to 50 children (childCount has them all),
    labels and relations, the content's length in characters and its start
    as plain text. Read the whole content with get_note_content.

EXAMPLES
    {"noteId": "roadmap"}
        Metadata of the note "roadmap" with a 200-character preview.
    {"noteId": "root", "previewChars": 0}
        The top of the tree: its children, without a preview.

SEE ALSO
    get_note_content, get_child_notes, get_attributes`

const manGetNoteContent = `NOTES
    Text and book notes hold HTML; code and mermaid notes hold plain text.
    A long content comes in parts: when truncated is true, call again with
    offset set to offset plus the number of characters received.
    A protected note's content is never returned.

EXAMPLES
    {"noteId": "pancakes"}
        The whole content of "pancakes" (up to 20000 characters).
    {"noteId": "meetings", "offset": 20000, "maxChars": 20000}
        The second part of a long note.

SEE ALSO
    get_note, edit_note_content, set_note_content`

const manGetChildNotes = `NOTES
    Children are listed in the order the tree shows them, each with its
    type and its own number of children. "root" is the top of the tree;
    start there to explore. When truncated is true, the note has more
    children than limit: raise limit or use search_notes.

EXAMPLES
    {"noteId": "root"}
        The top-level notes.
    {"noteId": "projects", "limit": 5}
        The first 5 children of "projects".

SEE ALSO
    get_subtree, get_note`

const manGetSubtree = `NOTES
    The result lists the descendants depth first, in tree order, each with
    its depth (1 for children of the top note), its parent and its number
    of children. At most 10 children are listed under each note; a note
    whose children are not all listed has truncated set: call get_subtree
    or get_child_notes on it to see more.

EXAMPLES
    {"noteId": "root"}
        The top two levels of the tree.
    {"noteId": "projects", "depth": 5}
        Everything below "projects", five levels deep.

SEE ALSO
    get_child_notes, search_notes`

const manGetAttributes = `NOTES
    A label is #name or #name=value; a relation is ~name=targetNoteId and
    points to another note. Each attribute has an ID, used by
    delete_attribute.

EXAMPLES
    {"noteId": "roadmap"}
        The labels and relations of "roadmap".

SEE ALSO
    get_attribute, set_attribute, delete_attribute`

const manGetAttribute = `NOTES
    If the note has both a label and a relation with the name, the label
    is returned; get_attributes lists both.

EXAMPLES
    {"noteId": "roadmap", "name": "priority"}
        The label #priority of "roadmap", with its value.
    {"noteId": "meetings", "name": "relatedTo"}
        The relation ~relatedTo of "meetings"; its value is the target
        note's ID.

SEE ALSO
    get_attributes, set_attribute`

const manCreateNote = `NOTES
    The note is added after the parent's existing children. Text and book
    notes hold HTML; code and mermaid notes hold plain text. The result
    has the new note's ID. Write tools must be enabled for the workspace.

EXAMPLES
    {"parentNoteId": "recipes", "title": "Crêpes"}
        An empty text note under "recipes".
    {"parentNoteId": "projects", "title": "Launch plan", "content": "<p>Draft.</p>"}
        A text note with content.
    {"parentNoteId": "root", "title": "Scripts", "type": "code", "content": "echo hi"}
        A code note at the top of the tree.

SEE ALSO
    set_note_content, move_note`

const manRenameNote = `NOTES
    Only the title changes; the content, place and attributes stay. The
    system notes (root, _hidden, _share, _lbRoot, _globalNoteMap) cannot
    be renamed.

EXAMPLES
    {"noteId": "meetings", "title": "Meeting minutes"}
        Renames "meetings".

SEE ALSO
    get_note`

const manSetNoteContent = `NOTES
    The whole content is replaced. The previous content is saved first as
    a revision marked as made by a model, so the user can restore it.
    Prefer edit_note_content to change one passage, and append_to_note to
    add at the end. Protected notes cannot be written.

EXAMPLES
    {"noteId": "pancakes", "content": "<p>Whisk 250 g flour, 3 eggs and 500 ml milk.</p>"}
        Replaces the recipe.

SEE ALSO
    edit_note_content, append_to_note, get_note_content`

const manAppendToNote = `NOTES
    The content is added as is, with no separator: for a text note send a
    whole HTML block, such as a paragraph or a list. Nothing is
    overwritten, so no revision is saved.

EXAMPLES
    {"noteId": "meetings", "content": "<p>Tuesday: the beta is on track.</p>"}
        Adds a paragraph at the end of "meetings".

SEE ALSO
    edit_note_content, set_note_content`

const manEditNoteContent = `NOTES
    oldText must occur exactly once in the current content, character for
    character, HTML tags included: copy it from get_note_content. If it
    occurs nowhere or several times, nothing is changed and the error says
    how to fix the call. The previous content is saved as a revision
    first.

EXAMPLES
    {"noteId": "pancakes", "oldText": "2 eggs", "newText": "3 eggs"}
        Changes one passage.
    {"noteId": "roadmap", "oldText": "<li>Write the plugin API documentation</li>", "newText": ""}
        Deletes a list item.

SEE ALSO
    get_note_content, set_note_content`

const manDeleteNote = `NOTES
    The note leaves every place it appears in the tree, with its
    attributes and the relations that point to it. Its children that have
    no other parent are deleted too; children cloned elsewhere stay there.
    The result lists every deleted note. Deleted notes disappear from all
    tools. The system notes (root, _hidden, _share, _lbRoot,
    _globalNoteMap) cannot be deleted, nor a note with a protected note
    below it. The server may ask the user to approve the deletion first
    (notes-mcp does); if the user refuses, nothing is deleted.

EXAMPLES
    {"noteId": "meetings"}
        Deletes "meetings".

SEE ALSO
    move_note, get_subtree`

const manMoveNote = `NOTES
    The note keeps its subtree and is added after the new parent's
    existing children. A note with several parents (clones) leaves only
    the parent given by fromParentNoteId, or its first parent. A note
    cannot move under itself or its own descendants, and the system notes
    (root, _hidden, _share, _lbRoot, _globalNoteMap) cannot move; they can
    be the new parent. The server may ask the user to approve the move
    first (notes-mcp does); if the user refuses, nothing moves.

EXAMPLES
    {"noteId": "pancakes", "parentNoteId": "projects"}
        Moves "pancakes" from "recipes" to "projects".
    {"noteId": "roadmap", "parentNoteId": "root", "fromParentNoteId": "projects"}
        Moves one placement of a cloned note to the top of the tree.

SEE ALSO
    clone_note, get_note`

const manCloneNote = `NOTES
    A clone is the same note in two places: editing it in one place edits
    it everywhere. To have a separate copy, create a note and set its
    content instead. A note cannot be cloned under itself or its own
    descendants, nor twice under the same parent, and the system notes
    (root, _hidden, _share, _lbRoot, _globalNoteMap) cannot be cloned.

EXAMPLES
    {"noteId": "pancakes", "parentNoteId": "projects"}
        "pancakes" now appears under "recipes" and under "projects".

SEE ALSO
    move_note, get_note`

const manSetAttribute = `NOTES
    A note has at most one label and one relation of each name: setting an
    existing one changes its value (or target). A relation's target must
    be an existing note.
    Names that make the application run code or inject markup are refused
    (in any case, as labels and as relations). Trilium's dangerous labels:
    run, customRequestHandler, customResourceProvider, widget, shareRaw,
    titleTemplate, webViewSrc, iconPack, docName, docUrl,
    scriptInLauncherContent. Its dangerous relations: runOnNoteCreation,
    runOnNoteTitleChange, runOnNoteChange, runOnNoteContentChange,
    runOnNoteDeletion, runOnBranchCreation, runOnBranchChange,
    runOnBranchDeletion, runOnChildNoteCreation, runOnAttributeCreation,
    runOnAttributeChange, widget, renderNote, searchScript, script,
    shareJs, shareHtml, shareTemplate. Refused here too: runOnInstance,
    runAtHour, widgetRelation, appCss, appTheme, shareCss.

EXAMPLES
    {"noteId": "roadmap", "name": "priority", "value": "low"}
        Sets the label #priority=low.
    {"noteId": "pancakes", "name": "todo"}
        Sets the label #todo, without a value.
    {"noteId": "meetings", "type": "relation", "name": "relatedTo", "targetNoteId": "pancakes"}
        Points the relation ~relatedTo at "pancakes".

SEE ALSO
    get_attributes, delete_attribute`

const manDeleteAttribute = `NOTES
    Take the attribute's ID from get_attributes; it must be an attribute
    of the given note.

EXAMPLES
    {"noteId": "roadmap", "attributeId": "attrTodo"}
        Removes the label #todo from "roadmap".

SEE ALSO
    get_attributes, set_attribute`

const manNoteResource = `NOTES
    A resource for MCP clients, read by URI rather than called: its text
    is the note's whole content with the note's MIME type (text/html for
    text notes). Missing, deleted and protected notes are refused as
    get_note refuses them. Clients complete {noteId} from the note IDs,
    protected notes left out.

EXAMPLES
    note://roadmap
        The HTML content of the note "roadmap".

SEE ALSO
    get_note_content`

const manSummarizeNote = `NOTES
    A prompt for a person to pick: one user message that asks for a
    summary and quotes the note's title and content, so the model needs
    no tool call. Protected notes are refused as get_note refuses them.

EXAMPLES
    {"noteId": "pancakes"}
        Asks for a summary of the note "Pancakes", its content quoted.

SEE ALSO
    get_note_content`
