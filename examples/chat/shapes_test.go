package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
)

// envFor is the environment that points -api name at srv.
func envFor(name string, srv *chattest.Server) func(string) string {
	prefix := map[string]string{"chat": "OPENAI", "responses": "OPENAI", "anthropic": "ANTHROPIC", "gemini": "GEMINI"}[name]
	ep := srv.Endpoint()
	return env(map[string]string{prefix + "_BASE_URL": ep.BaseURL, prefix + "_API_KEY": chattest.Key, prefix + "_MODEL": chattest.Model})
}

// chat against each API's scripted model, in German, from standard
// input: a write, a question the tool asks (find_note), an approval, a
// request that fails for good, and the conversation going on after it.
func TestChatShapes(t *testing.T) {
	t.Parallel()
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			dbPath := filepath.Join(t.TempDir(), "notes.db")
			down := chattest.Reply{Status: 503, Text: "The service is unavailable.", RetryAfter: "0"}
			srv := chattest.NewServer(a.shape,
				chattest.Reply{Calls: []chattest.Call{{Name: "create_note", Args: `{"parentNoteId":"recipes","title":"Pancakes for dinner"}`}}},
				chattest.Reply{Text: "Angelegt."},
				chattest.Reply{Calls: []chattest.Call{{Name: "find_note", Args: `{"title":"pancakes","previewChars":0}`}}},
				chattest.Reply{Text: "Gefunden."},
				chattest.Reply{Calls: []chattest.Call{{Name: "delete_note", Args: `{"noteId":"pancakes"}`}}},
				down, down, down, down, // the first try and 3 retries
				chattest.Reply{Text: "Gelöscht."})
			defer srv.Close()
			var stdout, stderr bytes.Buffer
			stdin := "Lege Pfannkuchen zum Abendessen an.\nZeig mir Pfannkuchen.\n2\nLösche das Rezept.\nj\nUnd?\n"
			code := run(context.Background(), []string{"-api", a.name, "-db", dbPath, "-writes", "-approve", "-locale", "de"},
				envFor(a.name, srv), strings.NewReader(stdin), &stdout, &stderr)

			require.Equal(t, exitOK, code, stderr.String())
			require.Equal(t, "Angelegt.\nGefunden.\nGelöscht.\n", stdout.String())
			reqs := srv.Requests()
			require.Len(t, reqs, 10)
			url := reqs[5].Path
			require.Equal(t, "Notiz anlegen… erledigt\n"+
				"Notiz suchen fragt: Mehrere Notizen passen zu deiner Suche. Welche meinst du?\n"+
				"  1) Pancakes (in Recipes)\n"+
				"  2) Pancakes for dinner (in Recipes)\n"+
				"Wähle 1-2, oder Enter zum Überspringen: "+
				"Notiz suchen… erledigt\n"+
				`Notiz löschen {"noteId":"pancakes"}: Delete note "Pancakes".`+"\n"+
				deleteRowsDE+
				"Freigeben? [j/N] "+
				"Notiz löschen… erledigt\n"+
				"chat: chatadapter: POST "+srv.URL+url+": 503 Service Unavailable: "+unavailable[a.shape]+"\n"+
				"Das Gespräch bleibt erhalten: frag noch einmal, oder mach weiter.\n", timeless(stderr.String()))

			// The find_note result the model read is the note the person chose.
			found := string(appendMsgs(reqs[3].Messages))
			require.Contains(t, found, "Pancakes for dinner")
			require.Contains(t, found, "chosenByUser")
			// After the failure, the conversation went on from all it had.
			last := reqs[9].Messages
			require.Len(t, last, len(reqs[5].Messages)+1)
			require.Equal(t, appendMsgs(reqs[5].Messages), appendMsgs(last[:len(last)-1]))
			require.Contains(t, string(last[len(last)-1]), "Und?")
			require.Equal(t, []string{"Pancakes for dinner"}, titlesUnder(t, dbPath, "recipes"))
		})
	}
}

// unavailable is the error body of each API's scripted 503, as
// HTTPError shows it.
var unavailable = map[chatadapter.Shape]string{
	chatadapter.OpenAIChat:      `{"error":{"code":null,"message":"The service is unavailable.","param":null,"type":"server_error"}}`,
	chatadapter.OpenAIResponses: `{"error":{"code":null,"message":"The service is unavailable.","param":null,"type":"server_error"}}`,
	chatadapter.Anthropic:       `{"error":{"message":"The service is unavailable.","type":"api_error"},"request_id":"req_chattest","type":"error"}`,
	chatadapter.Gemini: `{"error":{"code":503,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0s"}],` +
		`"message":"The service is unavailable.","status":"UNAVAILABLE"}}`,
}

func appendMsgs[T ~[]byte](ms []T) string {
	var b strings.Builder
	for _, m := range ms {
		b.Write(m)
		b.WriteByte('\n')
	}
	return b.String()
}

// -locale and -api refuse what chat does not have, saying what it has.
func TestChatLocaleAndAPIErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"-locale", "fr", "Hi"}, `chat: no messages for locale "fr"; -locale takes de, en` + "\n"},
		{[]string{"-api", "cohere", "Hi"}, `chat: -api takes chat, responses, anthropic, gemini, not "cohere"` + "\n"},
		{[]string{"-api", "anthropic", "Hi"}, "chat: set ANTHROPIC_MODEL and ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a server that needs no key)\n"},
		{[]string{"-api", "gemini", "Hi"}, "chat: set GEMINI_MODEL and GEMINI_API_KEY (or GEMINI_BASE_URL for a server that needs no key)\n"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"-db", filepath.Join(t.TempDir(), "notes.db")}, tt.args...), env(nil), strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, exitUsage, code)
		require.Equal(t, tt.stderr, stderr.String())
		require.Empty(t, stdout.String())
	}
	// de-AT speaks German, through its language.
	srv := chattest.NewServer(chatadapter.Anthropic, chattest.Reply{Calls: []chattest.Call{{Name: "get_note", Args: `{"noteId":"roadmap"}`}}}, chattest.Reply{Text: "Q3."})
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-api", "anthropic", "-db", filepath.Join(t.TempDir(), "notes.db"), "-locale", "de-AT", "-v", "Was steht an?"},
		envFor("anthropic", srv), strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.Equal(t, "Q3.\n", stdout.String())
	require.Equal(t, "Frage das Modell…\n[1: 0+0 tokens, 0 cached]\nNotiz lesen… erledigt\nFrage das Modell…\n[2: 0+0 tokens, 0 cached]\n", stderr.String())
}

// When the last question of standard input fails, chat says so and
// exits with status 1, after going on with the questions before.
func TestChatLastQuestionFails(t *testing.T) {
	t.Parallel()
	srv := chattest.NewServer(chatadapter.OpenAIChat, chattest.Reply{Text: "Hello."},
		chattest.Reply{Status: 400, Text: "Too long."})
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-db", filepath.Join(t.TempDir(), "notes.db")}, envFor("chat", srv),
		strings.NewReader("Hi.\nTell me everything.\n"), &stdout, &stderr)
	require.Equal(t, exitError, code)
	require.Equal(t, "Hello.\n", stdout.String())
	require.Equal(t, "chat: chatadapter: POST "+srv.URL+`/v1/chat/completions: 400 Bad Request: {"error":{"code":null,"message":"Too long.","param":null,"type":"invalid_request_error"}}`+"\n"+
		"The conversation is kept: ask again, or go on.\n"+
		"chat: the last question failed\n", stderr.String())
}
