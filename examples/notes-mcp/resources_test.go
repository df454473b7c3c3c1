package main

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/pgtest"
)

// protocolVersions are the MCP revisions TestResourcesAndPrompts runs at,
// each over every transport.
var protocolVersions = []string{
	mcp.ProtocolVersion20260728,
	mcp.ProtocolVersion20251125,
}

// Seeded content the scenario reads.
const (
	roadmapHTML   = `<h2>Q3 roadmap</h2><ul><li>Ship the offline sync engine</li><li>Migrate the search index to FTS5</li><li>Write the plugin API documentation</li></ul>`
	pancakesHTML  = `<p>Whisk 250 g flour, 2 eggs, 500 ml milk and a pinch of salt. Rest the batter for 30 minutes, then fry thin pancakes in a hot buttered pan.</p>`
	secretRefusal = `Note "secret" (noteId) is protected; tools may neither read nor change it. Work with another note, or ask the user to remove the protection.`
)

// initializeAt initializes c at protocol revision version and requires
// the server to agree to it and to offer resources, prompts and
// completions.
func initializeAt(t *testing.T, c *client.Client, version string) {
	t.Helper()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: "notes-mcp-test", Version: "1"}
	res, err := c.Initialize(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, version, res.ProtocolVersion)
	require.NotNil(t, res.Capabilities.Resources)
	require.NotNil(t, res.Capabilities.Prompts)
	require.NotNil(t, res.Capabilities.Completions)
}

// stdioClient serves a fresh SQLite store over stdio and connects a client
// at version.
func stdioClient(t *testing.T, bin, version string) *client.Client {
	t.Helper()
	// Not t.Context(): it is cancelled, and the process killed, before the
	// cleanup below checks that the server exits cleanly.
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-stdio", "-db", filepath.Join(t.TempDir(), "notes.db"))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	c := client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))))
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		defer cancel()
		require.NoError(t, c.Close())
		require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
		require.NotContains(t, stderr.String(), "panic")
	})
	initializeAt(t, c, version)
	return c
}

// httpClient serves db over streamable HTTP (with args added) and connects
// a client with the bearer token at version.
func httpClient(t *testing.T, bin, version, db string, args ...string) *client.Client {
	t.Helper()
	s := pgServeHTTP(t, bin, pgEnv(tokenEnv+"=resource-test-token"), append([]string{"-db", db, "-addr", "127.0.0.1:0"}, args...)...)
	c, err := client.NewStreamableHttpClient(s.url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + s.token}))
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { _ = c.Close() })
	initializeAt(t, c, version)
	return c
}

// TestResourcesAndPrompts drives notes-mcp with mcp-go's client at each
// revision of protocolVersions, over stdio and HTTP (with and without
// sessions) on SQLite, and over HTTP on PostgreSQL (skipped without
// LLMTOOL_TEST_POSTGRES): the note://{noteId} template, reading notes, the
// protected note refused, note IDs completed without it, and the
// summarize_note prompt.
func TestResourcesAndPrompts(t *testing.T) {
	bin := buildBinary(t)
	transports := []struct {
		name    string
		connect func(t *testing.T, version string) *client.Client
	}{
		{"stdio", func(t *testing.T, version string) *client.Client { return stdioClient(t, bin, version) }},
		{"http", func(t *testing.T, version string) *client.Client {
			return httpClient(t, bin, version, filepath.Join(t.TempDir(), "notes.db"))
		}},
		{"stateless http", func(t *testing.T, version string) *client.Client {
			return httpClient(t, bin, version, filepath.Join(t.TempDir(), "notes.db"), "-stateless")
		}},
		{"postgres http", func(t *testing.T, version string) *client.Client {
			return httpClient(t, bin, version, pgtest.DSN(t)) // skips without a server
		}},
	}
	for _, version := range protocolVersions {
		for _, tr := range transports {
			t.Run(version+"/"+tr.name, func(t *testing.T) {
				t.Parallel()
				resourceScenario(t, tr.connect(t, version))
			})
		}
	}
}

// resourceScenario is what a client does with the notes' resource, prompt
// and completions.
func resourceScenario(t *testing.T, c *client.Client) {
	ctx := t.Context()

	// One template, and one fixed resource: the history of changes.
	tmpls, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	require.NoError(t, err)
	require.Len(t, tmpls.ResourceTemplates, 1)
	tmpl := tmpls.ResourceTemplates[0]
	require.Equal(t, "note://{noteId}", tmpl.URITemplate.Raw())
	require.Equal(t, []string{"note", "Note", "A note's content, with its MIME type."}, []string{tmpl.Name, tmpl.Title, tmpl.Description})
	fixed, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	require.NoError(t, err)
	require.Len(t, fixed.Resources, 1)
	require.Equal(t, "changes://recent", fixed.Resources[0].URI)

	// Reading notes: the content with the note's MIME type; the protected
	// note refused with the guard's sentence.
	read := func(uri string) (*mcp.ReadResourceResult, error) {
		return c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	}
	res, err := read("note://roadmap")
	require.NoError(t, err)
	require.Equal(t, []mcp.ResourceContents{mcp.TextResourceContents{URI: "note://roadmap", MIMEType: "text/html", Text: roadmapHTML}}, res.Contents)
	_, err = read("note://secret")
	require.ErrorContains(t, err, secretRefusal)
	_, err = read("note://nope")
	require.ErrorContains(t, err, `Note "nope" (noteId) does not exist. Call search_notes or get_child_notes to find the note's ID.`)

	// Completion of note IDs, for the template and for the prompt: the
	// protected note is never offered.
	complete := func(ref any, value string) []string {
		t.Helper()
		res, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteArgument{Name: "noteId", Value: value}}})
		require.NoError(t, err)
		return res.Completion.Values
	}
	tmplRef := mcp.ResourceReference{Type: "ref/resource", URI: "note://{noteId}"}
	require.Equal(t, []string{"recipes", "roadmap", "root"}, complete(tmplRef, "r"))
	require.Equal(t, []string{"_globalNoteMap", "_hidden", "_lbRoot", "_share", "meetings", "pancakes", "projects", "recipes", "roadmap", "root"},
		complete(tmplRef, ""), "every note but the protected one")
	require.Equal(t, []string{}, complete(tmplRef, "se"))
	require.Equal(t, []string{"pancakes", "projects"}, complete(mcp.PromptReference{Type: "ref/prompt", Name: "summarize_note"}, "p"))

	// The prompt: listed with its argument, rendered with the note quoted,
	// refused for the protected note.
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	require.NoError(t, err)
	require.Equal(t, []mcp.Prompt{{Name: "summarize_note", Title: "Summarize note", Description: "Ask for a short summary of a note.",
		Arguments: []mcp.PromptArgument{{Name: "noteId", Description: "ID of the note.", Required: true}}}}, prompts.Prompts)
	get := func(id string) (*mcp.GetPromptResult, error) {
		return c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "summarize_note", Arguments: map[string]string{"noteId": id}}})
	}
	got, err := get("pancakes")
	require.NoError(t, err)
	require.Equal(t, "Ask for a short summary of a note.", got.Description)
	require.Equal(t, []mcp.PromptMessage{{Role: mcp.RoleUser, Content: mcp.TextContent{Type: "text",
		Text: "Summarize the note \"Pancakes\" (ID pancakes) in at most three sentences.\nIts content (text/html) follows between the lines.\n---\n" + pancakesHTML + "\n---"}}},
		got.Messages)
	_, err = get("secret")
	require.ErrorContains(t, err, secretRefusal)
}
