package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	chatrun "github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/i18n"
)

// systemPrompt tells the model what it works on.
const systemPrompt = `You help the user with their notes, kept in a tree. Use the tools to read and change them. ` +
	`The top of the tree is the note "root"; find note IDs with search_notes or get_child_notes. ` +
	`Call man for the list of tools and man with a tool's name for its options. Answer briefly.`

// config is what the flags and the environment decided.
type config struct {
	ep             chatrun.Endpoint
	dbPath, tenant string
	writes         bool // -writes: enable write tools in the tenant
	approve        bool // -approve: destructive tools need approval in the tenant
	verbose        bool
	run            *chatrun.Options
	msgs           *i18n.Catalog
	local          string // the locale
	start          startPrompt
}

// startPrompt is the prompt the conversation starts from (-prompt, -arg);
// name is "" for none.
type startPrompt struct {
	name string
	args promptArgs
}

// session is one conversation on the terminal.
type session struct {
	c        *config
	runner   *chatrun.Runner
	messages []json.RawMessage // the conversation so far, in the API's format
	in       *bufio.Scanner    // questions and answers, one a line
	stdout   io.Writer
	stderr   io.Writer
}

func chat(ctx context.Context, c *config, question []string, stdin io.Reader, stdout, stderr io.Writer) error {
	db, err := notes.Open(ctx, c.dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	// The log is discarded: audit lines would drown the chat.
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Changesets: notes.Changesets, Messages: c.msgs}, notes.Tools)
	if err != nil {
		return err
	}
	ctx = llmtool.WithTenant(ctx, c.tenant)
	if c.writes {
		if err := reg.Tenants().SetWrites(ctx, c.tenant, true); err != nil {
			return err
		}
	}
	if c.approve { // tool "": every destructive tool of the tenant
		if err := reg.Tenants().SetApproval(ctx, c.tenant, "", true); err != nil {
			return err
		}
	}
	a := chatadapter.New(reg, &chatadapter.Options{Messages: c.msgs, Locale: c.local})
	runner, err := chatrun.New(a, c.ep, c.run)
	if err != nil {
		return err
	}
	ctx = chatadapter.WithEvents(ctx, func(e chatadapter.Event) {
		switch e.Kind {
		case chatadapter.CallFinished:
			fmt.Fprintln(stderr, e.Label)
		case chatadapter.TurnEnded:
			if errors.Is(e.Err, chatrun.ErrStepLimit) || errors.Is(e.Err, chatrun.ErrBudget) {
				fmt.Fprintln(stderr, e.Label) // the run stopped: the person can go on
			}
		case chatadapter.ModelRequest, chatadapter.ModelRetry:
			if c.verbose {
				fmt.Fprintln(stderr, e.Label)
			}
		case chatadapter.ModelReply:
			if c.verbose {
				fmt.Fprintf(stderr, "[%d: %d+%d tokens, %d cached]\n", e.Step, e.Usage.PromptTokens, e.Usage.CompletionTokens, e.Usage.CachedTokens)
			}
		}
	})
	s := &session{c: c, runner: runner, in: bufio.NewScanner(stdin), stdout: stdout, stderr: stderr}
	user := func(q string) json.RawMessage { return chatrun.TextMessage(c.ep.Shape, "user", q) }

	if c.start.name != "" {
		msgs, err := startMessages(ctx, reg, a, c.ep.Shape, c.start)
		if err != nil {
			return err
		}
		if len(question) > 0 {
			return s.send(ctx, append(msgs, user(strings.Join(question, " ")))...)
		}
		if err := s.send(ctx, msgs...); err != nil {
			return err
		}
	} else if len(question) > 0 {
		return s.send(ctx, user(strings.Join(question, " ")))
	}
	// Lines of standard input: one question each. A failed request is
	// reported, and the conversation goes on from what it kept.
	var failed error
	for s.in.Scan() {
		q := strings.TrimSpace(s.in.Text())
		if q == "" {
			continue
		}
		if failed = s.send(ctx, user(q)); failed != nil {
			if ctx.Err() != nil {
				return failed
			}
			fmt.Fprintf(stderr, "chat: %v\n%s\n", oneLine(failed), c.msgs.Message("chat.kept", c.local))
		}
	}
	if err := s.in.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if failed != nil {
		return errors.New("the last question failed")
	}
	return nil
}

// send adds msgs to the conversation and runs the turn, asking the
// person whatever the tools ask; the conversation keeps whatever the turn
// did, even when it fails.
func (s *session) send(ctx context.Context, msgs ...json.RawMessage) error {
	tr, err := s.runner.Run(ctx, append(s.messages, msgs...))
	for err == nil && tr.Pending != nil {
		tr, err = s.runner.Resume(ctx, tr, s.answer(tr.Pending))
	}
	s.messages = tr.Messages
	if err != nil {
		return err
	}
	if tr.Answer != "" {
		fmt.Fprintln(s.stdout, tr.Answer)
	}
	return nil
}

// startMessages renders the prompt the conversation starts from, in the
// API's shape. An unknown name gets the list of prompts.
func startMessages(ctx context.Context, reg *llmtool.Registry, a *chatadapter.Adapter, shape chatadapter.Shape, start startPrompt) ([]json.RawMessage, error) {
	args, err := json.Marshal(start.args)
	if err != nil {
		return nil, err
	}
	msgs, err := a.Prompt(ctx, shape, start.name, args)
	if errors.Is(err, llmtool.ErrUnknownTool) {
		prompts, _ := reg.List(ctx, &llmtool.ListOptions{Prompts: true})
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
