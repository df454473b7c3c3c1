// Command chat lets a model work on the notes example's store through its
// tools (package github.com/llmtool/llmtool/examples/notes), over any of
// the APIs chatadapter/run speaks: OpenAI Chat Completions (and every
// compatible server: llama.cpp, Ollama, vLLM), OpenAI Responses,
// Anthropic Messages or Gemini. It is run.Run with a few lines
// around it.
//
// -api picks the API (default chat); the endpoint comes from its
// environment variables:
//
//	-api chat, responses  OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY, OPENAI_MODEL
//	-api anthropic        ANTHROPIC_BASE_URL (default https://api.anthropic.com/v1), ANTHROPIC_API_KEY, ANTHROPIC_MODEL
//	-api gemini           GEMINI_BASE_URL (default https://generativelanguage.googleapis.com/v1beta), GEMINI_API_KEY, GEMINI_MODEL
//
// The model is required, and the key unless the base URL is changed (a
// local server needs none; so does the scripted model of
// examples/chat/scripted, which prints its environment, for trying chat
// offline with any API). Run it from the root of the repository with a
// question:
//
//	OPENAI_MODEL=gpt-4.1-mini OPENAI_API_KEY=sk-... go run ./examples/chat "What is on the roadmap?"
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b go run ./examples/chat -writes "Add a note on pancakes"
//	ANTHROPIC_MODEL=claude-sonnet-4-5 ANTHROPIC_API_KEY=sk-ant-... go run ./examples/chat -api anthropic -locale de "Was steht an?"
//
// Without a question it reads one per line from standard input and keeps
// the conversation going; a request that fails (after its retries) is
// reported and the conversation kept, so the next line goes on with it.
// While the model works it prints one line per tool call on standard
// error, such as "Create note… done" (-v adds each request to the model,
// its retries, and the tokens it used); the answers go to standard
// output.
//
// -locale picks the language of every line chat shows: the tools' names,
// their progress, previews and questions. It ships English (en) and
// German (de), in locales/, and refuses another locale with the list.
//
// With -prompt the conversation starts from one of the notes module's
// prompts, rendered by chatadapter.Adapter.Prompt, its arguments given as
// -arg name=value; a question, if any, follows it:
//
//	OPENAI_MODEL=gpt-4.1-mini OPENAI_API_KEY=sk-... go run ./examples/chat -prompt summarize_note -arg noteId=roadmap
//
// It opens notes.db in the current directory (creating and seeding it the
// first time). Write tools are off until enabled for the tenant: -writes
// enables them, persistently, as notes-mcp's "writes on" command does.
//
// With -approve, the tenant's destructive tools (delete_note,
// delete_attribute) need the person's approval before they commit
// (Registry.Tenants().SetApproval, persistent too). The run then pauses at such a
// call, and chat shows what it would change, row by row (the notes store's
// tables are tracked: notes.Changesets), and asks on standard error,
// reading the answer from standard input; anything but y or yes (j or ja
// in German), or the end of the input, denies, and the model reads that
// nothing was saved:
//
//	$ go run ./examples/chat -writes -approve "Delete the pancakes recipe"
//	Delete note {"noteId":"pancakes"}: Delete note "Pancakes". (notes: 1 updated; branches: 1 updated; attributes: 1 updated)
//	  update notes (noteId="pancakes"): isDeleted 0 → 1; unchanged: content="<p>Whisk 250 g flour, 2 eggs, …", …, title="Pancakes", type="text"
//	  update branches (branchId="recipes_pancakes"): isDeleted 0 → 1; unchanged: noteId="pancakes", parentNoteId="recipes", position=10, rowid=5
//	  update attributes (attributeId="attrCuisine"): isDeleted 0 → 1; unchanged: name="cuisine", noteId="pancakes", position=10, rowid=3, type="label", value="french"
//	Approve? [y/N] y
//	Delete note… done
//	I deleted the note "Pancakes".
//
// A tool that asks the person (find_note, when several titles match)
// pauses the run the same way: chat shows the question and its choices,
// and reads the answer; an empty line skips it.
//
// Usage:
//
//	chat [-api chat|responses|anthropic|gemini] [-db PATH] [-tenant NAME] [-writes] [-approve] [-steps N] [-strict] [-locale TAG] [-v] [-prompt NAME [-arg NAME=VALUE ...]] [QUESTION ...]
//
// Errors are one line on standard error, with exit status 1 (2 for a
// usage error or a missing environment variable).
package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/llmtool/llmtool/chatadapter"
	chatrun "github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/i18n"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// api is a value of -api: the format and where its endpoint comes from.
type api struct {
	name    string
	shape   chatadapter.Shape
	env     string // the environment variables' prefix
	baseURL string // the default BASE_URL
}

var apis = []api{
	{"chat", chatadapter.OpenAIChat, "OPENAI", "https://api.openai.com/v1"},
	{"responses", chatadapter.OpenAIResponses, "OPENAI", "https://api.openai.com/v1"},
	{"anthropic", chatadapter.Anthropic, "ANTHROPIC", "https://api.anthropic.com/v1"},
	{"gemini", chatadapter.Gemini, "GEMINI", "https://generativelanguage.googleapis.com/v1beta"},
}

//go:embed locales/*.json
var locales embed.FS

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command, with its environment passed in for tests.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiName := fs.String("api", "chat", "the model's `API`: chat (OpenAI Chat Completions and compatible servers), responses (OpenAI Responses), anthropic, gemini")
	dbPath := fs.String("db", "notes.db", "note store `file`, created and seeded if missing")
	tenantName := fs.String("tenant", "default", "tenant whose tool settings apply")
	writes := fs.Bool("writes", false, "enable write tools in the tenant (persistent)")
	approve := fs.Bool("approve", false, "ask before destructive tools commit in the tenant (persistent)")
	steps := fs.Int("steps", 15, "at most this many requests per question")
	strict := fs.Bool("strict", false, "send strict-mode tool schemas (OpenAI structured outputs; chat and responses)")
	locale := fs.String("locale", "en", "language of the lines chat shows: en or de")
	verbose := fs.Bool("v", false, "also show each request to the model, its retries and the tokens it used")
	prompt := fs.String("prompt", "", "start the conversation from the prompt `NAME`, such as summarize_note")
	promptArgs := promptArgs{}
	fs.Var(promptArgs, "arg", "an argument of -prompt, as `NAME=VALUE` (repeat for more)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if len(promptArgs) > 0 && *prompt == "" {
		fmt.Fprintln(stderr, "chat: -arg is for -prompt; name the prompt with -prompt")
		return exitUsage
	}
	msgs := new(i18n.Catalog)
	if err := msgs.AddFS(locales, "locales"); err != nil {
		fmt.Fprintf(stderr, "chat: %v\n", err) // a build defect
		return exitError
	}
	if !msgs.Has(*locale) {
		fmt.Fprintf(stderr, "chat: no messages for locale %q; -locale takes %s\n", *locale, strings.Join(msgs.Locales(), ", "))
		return exitUsage
	}
	var a *api
	var names []string
	for i := range apis {
		names = append(names, apis[i].name)
		if apis[i].name == *apiName {
			a = &apis[i]
		}
	}
	if a == nil {
		fmt.Fprintf(stderr, "chat: -api takes %s, not %q\n", strings.Join(names, ", "), *apiName)
		return exitUsage
	}

	shape := a.shape
	if *strict { // the strict variant of an OpenAI format; Anthropic and Gemini have none
		shape = map[chatadapter.Shape]chatadapter.Shape{chatadapter.OpenAIChat: chatadapter.OpenAIChatStrict, chatadapter.OpenAIResponses: chatadapter.OpenAIResponsesStrict}[shape]
		if shape == 0 {
			shape = a.shape
		}
	}
	ep := chatrun.Endpoint{
		Shape:   shape,
		BaseURL: strings.TrimSpace(getenv(a.env + "_BASE_URL")),
		APIKey:  strings.TrimSpace(getenv(a.env + "_API_KEY")),
		Model:   strings.TrimSpace(getenv(a.env + "_MODEL")),
	}
	var missing []string
	if ep.Model == "" {
		missing = append(missing, a.env+"_MODEL")
	}
	if ep.BaseURL == "" {
		ep.BaseURL = a.baseURL
		if ep.APIKey == "" {
			missing = append(missing, fmt.Sprintf("%s_API_KEY (or %[1]s_BASE_URL for a server that needs no key)", a.env))
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "chat: set %s\n", strings.Join(missing, " and "))
		return exitUsage
	}

	c := &config{
		ep: ep, dbPath: *dbPath, tenant: *tenantName, writes: *writes, approve: *approve, verbose: *verbose,
		run:   &chatrun.Options{MaxSteps: *steps, System: systemPrompt},
		msgs:  msgs,
		local: *locale,
		start: startPrompt{name: *prompt, args: promptArgs},
	}
	if err := chat(ctx, c, fs.Args(), stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "chat: %v\n", oneLine(err))
		return exitError
	}
	return exitOK
}

// promptArgs are the -arg flags: a prompt's arguments by name.
type promptArgs map[string]string

func (p promptArgs) String() string { return "" }

func (p promptArgs) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not NAME=VALUE", s)
	}
	p[name] = value
	return nil
}

// oneLine keeps an error message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
