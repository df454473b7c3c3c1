package chatadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/stretchr/testify/require"
)

// The prompt fixture: items with a locked one (a protected entity), and a
// prompt whose messages hold every kind of part in both roles.

var lockedItem = &llmtool.Entity{
	Kind: "item",
	Exists: func(c *llmtool.ReadCtx, id string) (bool, error) {
		var n int
		err := c.QueryRow(`SELECT count(*) FROM items WHERE id = ?`, id).Scan(&n)
		return n > 0, err
	},
	Protected: func(c *llmtool.ReadCtx, id string) (bool, error) {
		var locked bool
		err := c.QueryRow(`SELECT locked FROM items WHERE id = ?`, id).Scan(&locked)
		return locked, err
	},
	NotFoundNext: "List the items to find an ID.",
}

type BriefIn struct {
	ItemID string `json:"itemId" ref:"item" desc:"ID of the item."`
}

var briefPrompt = llmtool.Prompt("brief", "Ask for a briefing on an item.",
	func(c *llmtool.ReadCtx, in BriefIn) ([]llmtool.Message, error) {
		var name string
		if err := c.QueryRow(`SELECT name FROM items WHERE id = ?`, in.ItemID).Scan(&name); err != nil {
			return nil, err
		}
		return []llmtool.Message{
			{Role: "user", Content: llmtool.TextContent("Brief me on " + name + ".")},
			{Role: "user", Content: llmtool.ImageContent([]byte("PNG"), "image/png")},
			{Role: "user", Content: llmtool.ResourceContent("item://1/spec", "text/markdown", "# Spec", nil)},
			{Role: "user", Content: llmtool.AudioContent([]byte("WAV"), "audio/wav")},
			{Role: "user", Content: llmtool.ResourceContent("item://1/manual.pdf", "application/pdf", "", []byte("PDF"))},
			{Role: "assistant", Content: llmtool.TextContent("What should it cover?")},
			{Role: "assistant", Content: llmtool.ImageContent([]byte("PNG"), "image/png")},
			{Role: "user", Content: llmtool.TextContent("Price and stock.")},
		}, nil
	}, llmtool.FriendlyName("Brief on item"))

// newPromptAdapter is an adapter over a fresh SQLite file with item 1
// (apple) and the locked item 2, serving briefPrompt.
func newPromptAdapter(t *testing.T) (*chatadapter.Adapter, context.Context) {
	t.Helper()
	db := openDB(t)
	_, err := db.Exec(`CREATE TABLE items (id TEXT PRIMARY KEY, name TEXT NOT NULL, locked INTEGER NOT NULL DEFAULT 0);
		INSERT INTO items VALUES ('1', 'apple', 0), ('2', 'vault', 1)`)
	require.NoError(t, err)
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ValidateOutput: true},
		llmtool.DefineTools("briefs", briefPrompt).WithEntities(lockedItem))
	require.NoError(t, err)
	return chatadapter.New(reg, nil), llmtool.WithTenant(context.Background(), tenant)
}

// TestPromptShapes renders one prompt in every shape: adjacent messages of
// a role merged, each part in the provider's form or named in a
// placeholder, text-only messages as plain strings where the provider
// takes them.
func TestPromptShapes(t *testing.T) {
	t.Parallel()
	a, ctx := newPromptAdapter(t)
	// "PNG", "WAV" and "PDF" in base64: UE5H, V0FW, UERG.
	openAIChat := []string{
		`{"role":"user","content":[{"type":"text","text":"Brief me on apple."},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,UE5H"}},` +
			`{"type":"text","text":"[resource item://1/spec (text/markdown)]\n# Spec"},` +
			`{"type":"input_audio","input_audio":{"data":"V0FW","format":"wav"}},` +
			`{"type":"file","file":{"filename":"manual.pdf","file_data":"data:application/pdf;base64,UERG"}}]}`,
		`{"role":"assistant","content":"What should it cover?\n\n[image (image/png, 3 bytes) not shown: OpenAI Chat Completions takes no such content in assistant messages]"}`,
		`{"role":"user","content":"Price and stock."}`,
	}
	responses := []string{
		`{"role":"user","content":[{"type":"input_text","text":"Brief me on apple."},` +
			`{"type":"input_image","image_url":"data:image/png;base64,UE5H"},` +
			`{"type":"input_text","text":"[resource item://1/spec (text/markdown)]\n# Spec"},` +
			`{"type":"input_text","text":"[audio (audio/wav, 3 bytes) not shown: OpenAI Responses takes no such content in user messages]"},` +
			`{"type":"input_file","filename":"manual.pdf","file_data":"data:application/pdf;base64,UERG"}]}`,
		`{"role":"assistant","content":"What should it cover?\n\n[image (image/png, 3 bytes) not shown: OpenAI Responses takes no such content in assistant messages]"}`,
		`{"role":"user","content":"Price and stock."}`,
	}
	tests := []struct {
		shape chatadapter.Shape
		want  []string
	}{
		{chatadapter.OpenAIChat, openAIChat},
		{chatadapter.OpenAIChatStrict, openAIChat},
		{chatadapter.OpenAIResponses, responses},
		{chatadapter.OpenAIResponsesStrict, responses},
		{chatadapter.Anthropic, []string{
			`{"role":"user","content":[{"type":"text","text":"Brief me on apple."},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"UE5H"}},` +
				`{"type":"text","text":"[resource item://1/spec (text/markdown)]\n# Spec"},` +
				`{"type":"text","text":"[audio (audio/wav, 3 bytes) not shown: Anthropic Messages takes no such content in user messages]"},` +
				`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"UERG"}}]}`,
			`{"role":"assistant","content":[{"type":"text","text":"What should it cover?"},` +
				`{"type":"text","text":"[image (image/png, 3 bytes) not shown: Anthropic Messages takes no such content in assistant messages]"}]}`,
			`{"role":"user","content":[{"type":"text","text":"Price and stock."}]}`,
		}},
		{chatadapter.Gemini, []string{
			`{"role":"user","parts":[{"text":"Brief me on apple."},` +
				`{"inlineData":{"mimeType":"image/png","data":"UE5H"}},` +
				`{"text":"[resource item://1/spec (text/markdown)]\n# Spec"},` +
				`{"inlineData":{"mimeType":"audio/wav","data":"V0FW"}},` +
				`{"inlineData":{"mimeType":"application/pdf","data":"UERG"}}]}`,
			`{"role":"model","parts":[{"text":"What should it cover?"},{"inlineData":{"mimeType":"image/png","data":"UE5H"}}]}`,
			`{"role":"user","parts":[{"text":"Price and stock."}]}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.shape.String(), func(t *testing.T) {
			t.Parallel()
			msgs, err := a.Prompt(ctx, tt.shape, "brief", json.RawMessage(`{"itemId":"1"}`))
			require.NoError(t, err)
			var got []string
			for _, m := range msgs {
				got = append(got, string(m))
				var obj map[string]any
				require.NoError(t, json.Unmarshal(m, &obj), string(m))
				require.NotContains(t, obj, "error")
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// TestPromptErrors: what the registry refuses comes back as an error with
// its sentence, for the person who picked the prompt; nothing is rendered.
func TestPromptErrors(t *testing.T) {
	t.Parallel()
	a, ctx := newPromptAdapter(t)
	tests := []struct {
		name, prompt, args string
		shape              chatadapter.Shape
		want               string
		kind               llmtool.Kind
		unknown            bool
	}{
		{name: "protected entity", prompt: "brief", args: `{"itemId":"2"}`,
			want: `Item "2" (itemId) is protected; tools may neither read nor change it. Work with another item, or ask the user to remove the protection.`, kind: llmtool.KindDenied},
		{name: "missing entity", prompt: "brief", args: `{"itemId":"9"}`,
			want: `Item "9" (itemId) does not exist. List the items to find an ID.`, kind: llmtool.KindNotFound},
		{name: "missing argument", prompt: "brief", args: `{}`,
			want: `Error: /itemId: missing required parameter "itemId". Send "itemId" as a string (ID of the item).`, kind: llmtool.KindInvalidArgs},
		{name: "unknown prompt", prompt: "nope",
			want: `Unknown prompt "nope". Use one of the prompts the server lists.`, kind: llmtool.KindNotFound, unknown: true},
		{name: "a tool is no prompt", prompt: "man",
			want: `Unknown prompt "man". Use one of the prompts the server lists.`, kind: llmtool.KindNotFound, unknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msgs, err := a.Prompt(ctx, chatadapter.Anthropic, tt.prompt, json.RawMessage(tt.args))
			require.Nil(t, msgs)
			require.EqualError(t, err, tt.want)
			require.Equal(t, tt.kind, llmtool.KindOf(err))
			require.Equal(t, tt.unknown, errors.Is(err, llmtool.ErrUnknownTool))
		})
	}
	t.Run("bad shape", func(t *testing.T) {
		t.Parallel()
		_, err := a.Prompt(ctx, chatadapter.Shape(99), "brief", json.RawMessage(`{"itemId":"1"}`))
		require.ErrorIs(t, err, chatadapter.ErrShape)
		require.EqualError(t, err, "chatadapter: unknown shape 99")
	})
}

// TestPromptsListed: the prompts a chat offers are Registry.List's with
// ListOptions.Prompts, apart from its tool set.
func TestPromptsListed(t *testing.T) {
	t.Parallel()
	a, ctx := newPromptAdapter(t)
	prompts, err := a.Registry().List(ctx, &llmtool.ListOptions{Prompts: true})
	require.NoError(t, err)
	require.Len(t, prompts, 1)
	require.Equal(t, []string{"brief", "Brief on item", "Ask for a briefing on an item.", "itemId"},
		[]string{prompts[0].Name, prompts[0].FriendlyName, prompts[0].Description, prompts[0].Params[0].Name})
	set, err := a.Tools(ctx, chatadapter.OpenAIChat)
	require.NoError(t, err)
	require.Equal(t, []string{"man"}, set.Names, "a prompt is no tool")
}
