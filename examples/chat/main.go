// Command chat lets a model work on the notes example's store through its
// tools (package github.com/llmtool/llmtool/examples/notes), over any
// OpenAI-compatible chat completions endpoint: OpenAI, or a local
// llama.cpp, Ollama or vLLM server. It is chatadapter.Run with a few lines
// around it.
//
// The endpoint comes from the usual environment variables:
//
//	OPENAI_BASE_URL  API root including /v1 (default https://api.openai.com/v1)
//	OPENAI_API_KEY   sent as a bearer token; needed for the default base URL
//	OPENAI_MODEL     the model, such as gpt-4.1-mini or qwen2.5:7b (required)
//
// Run it from the root of the repository with a question:
//
//	OPENAI_MODEL=gpt-4.1-mini OPENAI_API_KEY=sk-... go run ./examples/chat "What is on the roadmap?"
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b go run ./examples/chat -writes "Add a note on pancakes"
//
// Without a question it reads one per line from standard input and keeps
// the conversation going. While the model works it prints one line per tool
// call on standard error, such as "Create note… done"; the answers go to
// standard output.
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
// call, and chat shows what it would change and asks on standard error,
// reading the answer from standard input; anything but y or yes, or the
// end of the input, denies, and the model reads that nothing was saved:
//
//	$ go run ./examples/chat -writes -approve "Delete the pancakes recipe"
//	Delete note {"noteId":"pancakes"}: notes: 1 updated; branches: 1 updated; attributes: 1 updated
//	Approve? [y/N] y
//	Delete note… done
//	I deleted the note "Pancakes".
//
// Usage:
//
//	chat [-db PATH] [-tenant NAME] [-writes] [-approve] [-steps N] [-strict] [-locale TAG] [-prompt NAME [-arg NAME=VALUE ...]] [QUESTION ...]
//
// Errors are one line on standard error, with exit status 1 (2 for a
// usage error or a missing environment variable).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/examples/notes"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const defaultBaseURL = "https://api.openai.com/v1"

// systemPrompt tells the model what it works on.
const systemPrompt = `You help the user with their notes, kept in a tree. Use the tools to read and change them. ` +
	`The top of the tree is the note "root"; find note IDs with search_notes or get_child_notes. ` +
	`Call man for the list of tools and man with a tool's name for its options. Answer briefly.`

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
	dbPath := fs.String("db", "notes.db", "note store `file`, created and seeded if missing")
	tenantName := fs.String("tenant", "default", "tenant whose tool settings apply")
	writes := fs.Bool("writes", false, "enable write tools in the tenant (persistent)")
	approve := fs.Bool("approve", false, "ask before destructive tools commit in the tenant (persistent)")
	steps := fs.Int("steps", chatadapter.DefaultMaxSteps, "at most this many requests per question")
	strict := fs.Bool("strict", false, "send strict-mode tool schemas (OpenAI structured outputs)")
	locale := fs.String("locale", "en", "language of the tool progress lines")
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

	ep := chatadapter.Endpoint{
		BaseURL: strings.TrimSpace(getenv("OPENAI_BASE_URL")),
		APIKey:  strings.TrimSpace(getenv("OPENAI_API_KEY")),
		Model:   strings.TrimSpace(getenv("OPENAI_MODEL")),
	}
	var missing []string
	if ep.Model == "" {
		missing = append(missing, "OPENAI_MODEL")
	}
	if ep.BaseURL == "" {
		ep.BaseURL = defaultBaseURL
		if ep.APIKey == "" {
			missing = append(missing, "OPENAI_API_KEY (or OPENAI_BASE_URL for a server that needs no key)")
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "chat: set %s\n", strings.Join(missing, " and "))
		return exitUsage
	}

	start := startPrompt{name: *prompt, args: promptArgs}
	set := settings{writes: *writes, approve: *approve}
	if err := chat(ctx, ep, *dbPath, *tenantName, set, *steps, *strict, *locale, start, fs.Args(), stdin, stdout, stderr); err != nil {
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

// settings are the tenant's settings to turn on (-writes, -approve).
type settings struct {
	writes, approve bool
}

// startPrompt is the prompt the conversation starts from (-prompt, -arg);
// name is "" for none.
type startPrompt struct {
	name string
	args promptArgs
}

func chat(ctx context.Context, ep chatadapter.Endpoint, dbPath, tenant string, set settings, steps int, strict bool, locale string,
	start startPrompt, question []string, stdin io.Reader, stdout, stderr io.Writer) error {
	db, err := notes.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	// The log is discarded: audit lines would drown the chat.
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, notes.Tools)
	if err != nil {
		return err
	}
	ctx = llmtool.WithTenant(ctx, tenant)
	if set.writes {
		if err := reg.Tenants().SetWrites(ctx, tenant, true); err != nil {
			return err
		}
	}
	if set.approve { // tool "": every destructive tool of the tenant
		if err := reg.Tenants().SetApproval(ctx, tenant, "", true); err != nil {
			return err
		}
	}
	a := chatadapter.New(reg, nil)
	ctx = chatadapter.WithLocale(ctx, locale)
	ctx = chatadapter.WithEvents(ctx, func(e chatadapter.Event) {
		// A call that needs approval is asked about next (askApproval).
		if e.Kind == chatadapter.CallFinished && !errors.Is(e.Err, approval.ErrRequired) {
			fmt.Fprintln(stderr, e)
		}
	})
	opts := &chatadapter.RunOptions{MaxSteps: steps, Strict: strict}

	// Questions and approvals are lines of standard input.
	in := bufio.NewScanner(stdin)
	messages := []json.RawMessage{chatadapter.SystemMessage(systemPrompt)}
	send := func(add ...json.RawMessage) error {
		tr, err := chatadapter.Run(ctx, a, ep, append(messages, add...), opts)
		for err == nil && tr.Pending != nil {
			tr, err = tr.Resume(ctx, askApproval(tr.Pending, in, stderr))
		}
		if err != nil {
			return err
		}
		messages = tr.Messages
		fmt.Fprintln(stdout, tr.Answer)
		return nil
	}
	ask := func(q string) error { return send(chatadapter.UserMessage(q)) }
	if start.name != "" {
		msgs, err := startMessages(ctx, a, start)
		if err != nil {
			return err
		}
		if len(question) > 0 {
			return send(append(msgs, chatadapter.UserMessage(strings.Join(question, " ")))...)
		}
		if err := send(msgs...); err != nil {
			return err
		}
	} else if len(question) > 0 {
		return ask(strings.Join(question, " "))
	}
	for in.Scan() {
		q := strings.TrimSpace(in.Text())
		if q == "" {
			continue
		}
		if err := ask(q); err != nil {
			return err
		}
	}
	if err := in.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// askApproval shows what a pending call would change and asks the person
// whether to save it: y or yes approves; anything else, or the end of the
// input, denies.
func askApproval(p *chatadapter.Pending, in *bufio.Scanner, stderr io.Writer) bool {
	fmt.Fprintf(stderr, "%s %s: %s\nApprove? [y/N] ", p.FriendlyName, p.Call.Args, p.Summary)
	if !in.Scan() {
		fmt.Fprintln(stderr)
		return false
	}
	switch strings.ToLower(strings.TrimSpace(in.Text())) {
	case "y", "yes":
		return true
	}
	return false
}

// startMessages renders the prompt the conversation starts from, in the
// shape chatadapter.Run sends. An unknown name gets the list of prompts.
func startMessages(ctx context.Context, a *chatadapter.Adapter, start startPrompt) ([]json.RawMessage, error) {
	args, err := json.Marshal(start.args)
	if err != nil {
		return nil, err
	}
	msgs, err := a.Prompt(ctx, chatadapter.OpenAIChat, start.name, args)
	if errors.Is(err, llmtool.ErrUnknownTool) {
		prompts, _ := a.Registry().List(ctx, &llmtool.ListOptions{Prompts: true})
		names := make([]string, len(prompts))
		for i, p := range prompts {
			names[i] = p.Name
		}
		return nil, fmt.Errorf("no prompt is named %q; -prompt takes %s", start.name, strings.Join(names, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("prompt %s: %w", start.name, err)
	}
	return msgs, nil
}

// oneLine keeps an error message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
