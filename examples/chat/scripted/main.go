// Command scripted serves a scripted model (package chattest) in the
// wire format of one of the APIs chat speaks, so that chat runs from the
// command line without a provider. It prints the environment that points
// chat at it, and serves until interrupted:
//
//	$ go run ./examples/chat/scripted -api anthropic &
//	export ANTHROPIC_BASE_URL=http://127.0.0.1:40423/v1 ANTHROPIC_API_KEY=test-key ANTHROPIC_MODEL=scripted-model
//	$ export ANTHROPIC_BASE_URL=... ANTHROPIC_API_KEY=test-key ANTHROPIC_MODEL=scripted-model
//	$ go run ./examples/chat -api anthropic -locale de "Was steht auf der Roadmap?"
//	Notiz lesen… erledigt
//	The roadmap's first item is the offline sync engine.
//
// The model reads the roadmap note, then answers; it has nothing more
// scripted after that (each further request is refused with a 400).
//
// Usage:
//
//	scripted [-api chat|responses|anthropic|gemini]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
)

func main() {
	apiName := flag.String("api", "chat", "the `API` to speak: chat, responses, anthropic, gemini")
	flag.Parse()
	apis := map[string]struct {
		shape chatadapter.Shape
		env   string
	}{
		"chat": {chatadapter.OpenAIChat, "OPENAI"}, "responses": {chatadapter.OpenAIResponses, "OPENAI"},
		"anthropic": {chatadapter.Anthropic, "ANTHROPIC"}, "gemini": {chatadapter.Gemini, "GEMINI"},
	}
	a, ok := apis[*apiName]
	if !ok {
		fmt.Fprintf(os.Stderr, "scripted: -api takes chat, responses, anthropic, gemini, not %q\n", *apiName)
		os.Exit(2)
	}
	srv := chattest.NewServer(a.shape,
		chattest.Reply{Calls: []chattest.Call{{Name: "get_note", Args: `{"noteId":"roadmap","previewChars":80}`}},
			Usage: chatadapter.Usage{PromptTokens: 900, CompletionTokens: 20}},
		chattest.Reply{Text: "The roadmap's first item is the offline sync engine.",
			Usage: chatadapter.Usage{PromptTokens: 1100, CompletionTokens: 14, CachedTokens: 900}})
	defer srv.Close()
	ep := srv.Endpoint()
	fmt.Printf("export %[1]s_BASE_URL=%[2]s %[1]s_API_KEY=%[3]s %[1]s_MODEL=%[4]s\n", a.env, ep.BaseURL, chattest.Key, chattest.Model)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
}
