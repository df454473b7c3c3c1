package interop_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/llmtool/llmtool/chatadapter"
)

func TestGeminiTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	set := f.set(t, chatadapter.Gemini)
	// Every keyword we send is a field of genai.Schema: a round trip
	// through the SDK's types loses nothing.
	tools := roundTrip[[]*genai.Tool](t, set.JSON)
	require.Len(t, tools, 1)
	decls := tools[0].FunctionDeclarations
	require.Len(t, decls, len(set.Names))
	byName := map[string]*genai.FunctionDeclaration{}
	for i, d := range decls {
		require.Equal(t, set.Names[i], d.Name)
		byName[d.Name] = d
		if d.Parameters != nil {
			require.Equal(t, genai.TypeObject, d.Parameters.Type)
			checkGeminiSchema(t, d.Name, d.Parameters)
		}
	}
	// create_note's type: an enum of strings, its default said in the
	// description.
	typ := byName["create_note"].Parameters.Properties["type"]
	require.Equal(t, genai.TypeString, typ.Type)
	require.Equal(t, []string{"text", "code", "book", "mermaid"}, typ.Enum)
	require.Nil(t, typ.Default)
	require.Contains(t, typ.Description, "default text")
	require.Equal(t, []string{"parentNoteId", "title"}, byName["create_note"].Parameters.Required)

	config := &genai.GenerateContentConfig{Tools: tools}
	require.NotEmpty(t, mustJSON(t, config))
}

// checkGeminiSchema walks a schema: every node has one type, and objects
// below the top have properties.
func checkGeminiSchema(t *testing.T, path string, s *genai.Schema) {
	t.Helper()
	require.NotEmpty(t, s.Type, path)
	require.NotEqual(t, genai.TypeNULL, s.Type, path)
	for name, p := range s.Properties {
		checkGeminiSchema(t, path+"."+name, p)
	}
	if s.Items != nil {
		checkGeminiSchema(t, path+"[]", s.Items)
	}
}

func TestGeminiDispatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	call := func(id, name string, args map[string]any) *genai.Part {
		p := genai.NewPartFromFunctionCall(name, args)
		p.FunctionCall.ID = id
		return p
	}
	turn := genai.NewContentFromParts([]*genai.Part{
		genai.NewPartFromText("Let me look."),
		call("", "get_note", map[string]any{"noteId": "roadmap", "previewChars": 40}),
		call("fc_2", "create_note", map[string]any{"parentNoteId": "projects", "title": "Idea"}),
		call("fc_3", "create_note", map[string]any{"parentNoteId": "projects"}),
		call("fc_4", "get_nite", map[string]any{}),
		call("fc_5", "photo", map[string]any{"id": "p1"}),
	}, genai.RoleModel)
	resp := &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{Content: turn}}}
	reply, err := f.a.Dispatch(f.ctx, chatadapter.Gemini, mustJSON(t, resp))
	require.NoError(t, err)
	require.Len(t, reply.Messages, 1, "one content holds every functionResponse")
	content := roundTrip[genai.Content](t, reply.Messages[0])
	require.Equal(t, genai.RoleUser, content.Role)
	require.Len(t, content.Parts, 5)
	for i, p := range content.Parts {
		fr := p.FunctionResponse
		require.NotNil(t, fr)
		require.Equal(t, turn.Parts[i+1].FunctionCall.ID, fr.ID)
		require.Equal(t, turn.Parts[i+1].FunctionCall.Name, fr.Name)
		_, isErr := fr.Response["error"]
		require.Equal(t, reply.Outcomes[i].Result.IsError, isErr, reply.Outcomes[i].Result.Text())
	}
	require.Equal(t, "roadmap", content.Parts[0].FunctionResponse.Response["noteId"])
	require.Equal(t, "Idea", content.Parts[1].FunctionResponse.Response["title"])
	require.Equal(t, reply.Outcomes[3].Result.Text(), content.Parts[3].FunctionResponse.Response["error"])
	photo := content.Parts[4].FunctionResponse
	require.Equal(t, "Photo p1.\n\n[image (image/png, 4 bytes) attached]\n\n[resource file:///photos/p1.pdf (application/pdf, 8 bytes) attached]", photo.Response["output"])
	require.Len(t, photo.Parts, 2)
	require.Equal(t, "image/png", photo.Parts[0].InlineData.MIMEType)
	require.Equal(t, []byte("\x89PNG"), photo.Parts[0].InlineData.Data)
	require.Equal(t, []byte("%PDF-1.7"), photo.Parts[1].InlineData.Data)
	require.Contains(t, f.childTitles(t, "projects"), "Idea")
}
