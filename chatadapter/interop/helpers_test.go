package interop_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/examples/notes"
)

type PhotoIn struct {
	ID string `json:"id" desc:"ID of the photo."`
}

// photo answers with text, a PNG and a PDF, to see each SDK take a rich
// result's parts.
var photo = llmtool.Read("photo", "Show a photo.",
	func(c *llmtool.ReadCtx, in PhotoIn) (llmtool.Rich, error) {
		return llmtool.Rich{Content: []llmtool.Content{
			llmtool.TextContent("Photo " + in.ID + "."),
			llmtool.ImageContent([]byte("\x89PNG"), "image/png"),
			llmtool.ResourceContent("file:///photos/"+in.ID+".pdf", "application/pdf", "", []byte("%PDF-1.7")),
		}}, nil
	})

const tenant = "interop"

type fixture struct {
	db  *sql.DB
	reg *llmtool.Registry
	a   *chatadapter.Adapter
	ctx context.Context
}

// newFixture serves the notes example's tools (and photo) over a fresh,
// seeded note store, with write tools enabled.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := llmtool.WithTenant(context.Background(), tenant)
	db, err := notes.Open(ctx, filepath.Join(t.TempDir(), "notes.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ValidateOutput: true}, notes.Tools, llmtool.DefineTools("photos", photo))
	require.NoError(t, err)
	require.NoError(t, reg.Tenants().SetWrites(ctx, tenant, true))
	return &fixture{db: db, reg: reg, a: chatadapter.New(reg, nil), ctx: ctx}
}

// set returns the tool set of shape, which must hold every tool.
func (f *fixture) set(t *testing.T, shape chatadapter.Shape) *chatadapter.ToolSet {
	t.Helper()
	set, err := f.a.Tools(f.ctx, shape)
	require.NoError(t, err, shape.String())
	require.Len(t, set.Names, 20, "18 notes tools, man and photo")
	return set
}

// childTitles lists the titles under a note, in order.
func (f *fixture) childTitles(t *testing.T, id string) []string {
	t.Helper()
	kids, err := notes.Children(context.Background(), f.db, id)
	require.NoError(t, err)
	var out []string
	for _, k := range kids {
		out = append(out, k.Title)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// roundTrip decodes data into a fresh T, encodes it again and requires
// the same JSON: the SDK type kept every field we sent.
func roundTrip[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(data, &v))
	require.JSONEq(t, string(data), string(mustJSON(t, v)))
	return v
}

// The calls every dispatch test makes: a read, a write, a call whose
// arguments are wrong, an unknown tool, a rich read.
const (
	getRoadmap = `{"noteId":"roadmap","previewChars":40}`
	createIdea = `{"parentNoteId":"projects","title":"Idea"}`
	badArgs    = `{"parentNoteId":"projects"}`
)
