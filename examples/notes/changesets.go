package notes

import "github.com/llmtool/llmtool/changeset"

// Changesets is the store's tracking for llmtool.Options.Changesets: every
// table of the store (not the full-text index, which its triggers keep in
// step), with the columns the store sets afresh on each write (new IDs and
// timestamps) declared generated, so that an approved write may set them
// anew; and the tools list_changes and undo_changes.
//
//	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Changesets: notes.Changesets}, notes.Tools)
var Changesets = changeset.Config{
	Tables: []string{"notes", "branches", "attributes", "revisions"},
	Generated: map[string][]string{
		"notes":      {"noteId", "dateCreated", "dateModified"},
		"branches":   {"branchId", "rowid"},
		"attributes": {"attributeId", "rowid"},
		"revisions":  {"revisionId", "dateCreated", "rowid"},
	},
	Tools:      true,
	Scopes:     []string{ScopeWrite},
	ReadScopes: []string{ScopeRead},
}
