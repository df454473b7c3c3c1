package notes_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/examples/notes"
)

// The lists this example takes from Trilium, written out here so that an
// entry dropped from the code fails a test.
var (
	// triliumSystemNotes is PROTECTED_SYSTEM_NOTES, in
	// packages/trilium-core/src/services/llm/tools/helpers.ts.
	triliumSystemNotes = []string{"root", "_hidden", "_share", "_lbRoot", "_globalNoteMap"}

	// triliumDangerousLabels and triliumDangerousRelations are the entries
	// marked isDangerous in packages/commons/src/lib/builtin_attributes.ts,
	// which attributeService.isAttributeDangerous consults.
	triliumDangerousLabels = []string{
		"run", "customRequestHandler", "customResourceProvider", "widget",
		"shareRaw", "titleTemplate", "webViewSrc", "iconPack", "docName", "docUrl",
		"scriptInLauncherContent",
	}
	triliumDangerousRelations = []string{
		"runOnNoteCreation", "runOnNoteTitleChange", "runOnNoteChange",
		"runOnNoteContentChange", "runOnNoteDeletion",
		"runOnBranchCreation", "runOnBranchChange", "runOnBranchDeletion",
		"runOnChildNoteCreation", "runOnAttributeCreation", "runOnAttributeChange",
		"widget", "renderNote", "searchScript", "script", "shareJs", "shareHtml", "shareTemplate",
	}

	// ourStricterNames are refused here beyond Trilium's list.
	ourStricterNames = []string{"runOnInstance", "runAtHour", "widgetRelation", "appCss", "appTheme", "shareCss"}
)

// TestSystemNotesRefused: every write tool refuses to change each of
// Trilium's system notes, with the entity guard's message, and changes
// nothing.
func TestSystemNotesRefused(t *testing.T) {
	t.Parallel()
	tools := []struct{ tool, args string }{
		{"rename_note", `{"noteId": %q, "title": "X"}`},
		{"set_note_content", `{"noteId": %q, "content": "x"}`},
		{"append_to_note", `{"noteId": %q, "content": "x"}`},
		{"edit_note_content", `{"noteId": %q, "oldText": "a", "newText": "b"}`},
		{"delete_note", `{"noteId": %q}`},
		{"move_note", `{"noteId": %q, "parentNoteId": "projects"}`},
		{"clone_note", `{"noteId": %q, "parentNoteId": "projects"}`},
		{"set_attribute", `{"noteId": %q, "name": "todo"}`},
		{"delete_attribute", `{"noteId": %q, "attributeId": "attrTodo"}`},
	}
	for _, tt := range tools {
		t.Run(tt.tool, func(t *testing.T) {
			t.Parallel()
			var specs []spec
			for _, id := range triliumSystemNotes {
				specs = append(specs, spec{name: id, args: fmt.Sprintf(tt.args, id), err: system(id, "noteId", tt.tool)})
			}
			runSpecs(t, tt.tool, specs)
		})
	}
}

// TestSystemNotesSeeded: the system notes exist (so the system guard, not
// the existence guard, refuses them), can be read, and can still be the
// parent of a new note.
func TestSystemNotesSeeded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, id := range triliumSystemNotes {
		out := h.RequireOK(h.Call("get_note", fmt.Sprintf(`{"noteId": %q}`, id)))
		require.Equal(t, id, out["noteId"])
		require.True(t, notes.IsSystem(id), id)
	}
	out := h.RequireOK(h.Call("create_note", `{"parentNoteId": "_lbRoot", "title": "Launcher"}`))
	require.Equal(t, []any{map[string]any{"noteId": "_lbRoot", "title": "Launch Bar"}}, out["parents"])
}

// TestDangerousAttributesRefused: set_attribute refuses each of Trilium's
// dangerous labels and relations and each of our stricter additions, as a
// label and as a relation, in any case, with the exact message, and
// changes nothing.
func TestDangerousAttributesRefused(t *testing.T) {
	t.Parallel()
	denied := func(name string) string {
		return fmt.Sprintf(`name %q is not allowed in set_attribute. It would make the application run code; man set_attribute lists the refused names. Use a name that describes the note, such as "status".`, name)
	}
	var specs []spec
	label := func(name string) spec {
		return spec{name: "label " + name, args: fmt.Sprintf(`{"noteId": "pancakes", "name": %q, "value": "x"}`, name), err: denied(name)}
	}
	relation := func(name string) spec {
		return spec{name: "relation " + name, args: fmt.Sprintf(`{"noteId": "pancakes", "type": "relation", "name": %q, "targetNoteId": "roadmap"}`, name), err: denied(name)}
	}
	for _, n := range triliumDangerousLabels {
		specs = append(specs, label(n), relation(n), label(strings.ToUpper(n)))
	}
	for _, n := range triliumDangerousRelations {
		specs = append(specs, relation(n), label(n), relation(strings.ToLower(n)))
	}
	for _, n := range ourStricterNames {
		specs = append(specs, label(n), relation(n))
	}
	// Names next to the refused ones stay allowed.
	for _, n := range []string{"disabled:run", "scripts", "shareRoot", "template", "iconClass"} {
		specs = append(specs, spec{name: "allowed " + n, args: fmt.Sprintf(`{"noteId": "pancakes", "name": %q}`, n)})
	}
	runSpecs(t, "set_attribute", specs)
}

// TestCodeAttributeNamesExactly: the refused names are Trilium's dangerous
// attributes and our additions, nothing more or less.
func TestCodeAttributeNamesExactly(t *testing.T) {
	t.Parallel()
	want := map[string]bool{}
	for _, list := range [][]string{triliumDangerousLabels, triliumDangerousRelations, ourStricterNames} {
		for _, n := range list {
			want[strings.ToLower(n)] = true
		}
	}
	got := map[string]bool{}
	for _, n := range notes.CodeAttributeNames() {
		require.False(t, got[strings.ToLower(n)], "listed twice: %s", n)
		got[strings.ToLower(n)] = true
	}
	require.Equal(t, want, got)
}
