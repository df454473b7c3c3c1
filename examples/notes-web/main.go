// Command notes-web is a small notes app with an in-app chat: the note
// tree, the open note, and a chat panel whose model works on the notes
// through the notes example's tools (package
// github.com/llmtool/llmtool/examples/notes), served by llmtool's
// registry. Run it from the root of the repository:
//
//	go run -C examples/notes-web .
//
// and open the URL it prints. Two demo users, ana and ben, sign in by
// picking their name; each has notes of their own (notes-ana.db,
// notes-ben.db) and conversations of their own (app.db), all in the
// current directory (-data changes it).
//
// The sign-in is a demo's: whoever reaches the server picks a name, with
// no password, and is that person. On 127.0.0.1, the default -addr, that
// is whoever uses the machine; on any other address, whoever reaches it
// on the network (the command warns then). A real host signs people in
// its own way (its login page, single sign-on), keeps its own sessions,
// and hands the chat the principal it already knows
// (llmtool.WithPrincipal, as workspace.go does with the demo's user).
//
// Still, the demo's session is a sound one: a random token in an HttpOnly,
// SameSite=Lax cookie, Secure when the request came over TLS (behind a
// proxy that ends TLS it comes over HTTP: a real host knows its scheme
// from its configuration), whose SHA-256 the app's database keeps with the
// user. It ends 12 hours after the sign-in, or on "Sign out", which
// deletes it on the server: a copied cookie stops working then too.
//
// Every request, /mcp's too, must name this server in its Host header: a
// loopback name (localhost, 127.0.0.1, [::1]), the address the request
// came to, or a name given with -host (repeat it, or separate names with
// commas), such as the one a reverse proxy passes on. Others get 403, so
// a page of another site whose name was rebound to 127.0.0.1 (DNS
// rebinding) reaches nothing. A request that changes something (any
// method but GET, HEAD and OPTIONS), signing in and out included, must
// come from the app's own page: one whose Origin header (or, without one,
// Sec-Fetch-Site or Referer) names another origin gets 403, so another
// site's form cannot sign the browser in (login CSRF) or out, nor post to
// the API. Another port of 127.0.0.1 is another origin.
//
// Every request body is bounded at 1 MiB (/mcp's too), and a chat message
// at 8000 characters; over either, the answer is 413 with the limit, and
// nothing of the request is stored.
//
// The chat streams: the model's words as it writes them, and a card per
// tool call with its friendly name and outcome. A write that needs
// approval (deleting a note) shows the exact rows it would change, with
// Approve and Deny; a committed write has Undo. Stop ends the turn, and a
// write in progress rolls back. The tree and the open note follow every
// change, the chat's and those of MCP clients: the same registry is
// served over MCP at /mcp, each user with the bearer token the command
// prints.
//
// The model is configured as examples/chat's is: OPENAI_MODEL, with
// OPENAI_API_KEY, and OPENAI_BASE_URL for another OpenAI-compatible server
// (llama.cpp, Ollama, vLLM: the key may then be left out):
//
//	OPENAI_MODEL=gpt-4.1-mini OPENAI_API_KEY=sk-... go run -C examples/notes-web .
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b go run -C examples/notes-web .
//
// Without OPENAI_MODEL it runs a scripted model, labelled so on the page,
// which understands a few phrasings ("create a note called Ideas under
// Projects", "rename Ideas to Plans", "delete Plans", "undo"; see
// scripted.go). It speaks the same OpenAI-compatible protocol over HTTP on
// a loopback port, so the chat goes the same way as with a real model.
//
// It is built with the standard library only (net/http, html/template,
// embed, server-sent events, one plain JavaScript file, no build step).
// app.db keeps a row per conversation: the model's messages, the paused
// turn and the page's log, as JSON, so a turn waiting for approval
// survives a reload and a restart (the app keeps its approval key). Undo
// calls undo_changes with the changeset's ID through the same registry, as
// the person; the model hears of it with the next message. A write a guard
// refuses shows the sentence the model reads. Stop, or closing the tab,
// cancels the request's context: a call whose arguments were still
// streaming never runs, a write in progress rolls back, and the
// conversation keeps what finished. The tree and the open note follow
// every committed write through a registry middleware that tells the page
// over server-sent events, whichever adapter made it.
//
// What the page needs from chatadapter is small: run.Options.Stream, the
// events of WithEvents (TextDelta: the answer's words, the model's
// reasoning in a folded "thinking" line, each call's card as the model
// writes it; each call started, paused with its preview, finished with
// its Result and changeset; TurnEnded), Transcript.Cut (an answer the
// person stopped keeps its words, marked cut in the page's language,
// English or German) and WithConversation. The tests drive the page in headless Chromium at
// /usr/bin/chromium through chromedp (browser_test.go; skipped with a
// message without it, failed under CI) and take the screenshots in
// testdata/ on the way; UPDATE_SCREENSHOTS=1 rewrites them.
//
// Usage:
//
//	notes-web [-addr HOST:PORT] [-data DIR] [-host NAME]...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	chatrun "github.com/llmtool/llmtool/chatadapter/run"
)

// logOutput is where the registries' warnings go.
var logOutput io.Writer = os.Stderr

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "notes-web: %v\n", err)
		os.Exit(1)
	}
}

// run is the command, its environment passed in for tests.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("notes-web", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "the address to serve the page and /mcp on")
	dir := fs.String("data", ".", "the `folder` of the databases (app.db, notes-ana.db, notes-ben.db), created if missing")
	var hosts []string
	fs.Func("host", "a `name` (or name:port) to serve besides localhost, 127.0.0.1, [::1] and -addr's address, as a reverse proxy sends it in the Host header; repeat it, or separate names with commas", func(s string) error {
		for h := range strings.SplitSeq(s, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hosts = append(hosts, h)
			}
		}
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	cfg := &config{dir: *dir, hosts: hosts, logger: quietLogger()}
	if ep, ok, err := endpointFromEnv(getenv); err != nil {
		return err
	} else if ok {
		cfg.endpoint, cfg.label = ep, fmt.Sprintf("%s at %s", ep.Model, ep.BaseURL)
	} else {
		ep, stopModel, err := startScripted(&scripted{delay: 25 * time.Millisecond, hold: holdFor(5 * time.Second)})
		if err != nil {
			return err
		}
		defer stopModel()
		cfg.endpoint, cfg.label, cfg.scripted = ep, "the scripted model (no OPENAI_MODEL set)", true
	}
	a, err := newApp(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.close()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "notes-web: http://%s/ (model: %s)\n", ln.Addr(), cfg.label)
	fmt.Fprintf(stdout, "MCP: http://%s/mcp with Authorization: Bearer %s (ana) or %s (ben)\n", ln.Addr(), a.mcpToken("ana"), a.mcpToken("ben"))
	if ip, err := netip.ParseAddrPort(ln.Addr().String()); err != nil || !ip.Addr().IsLoopback() {
		fmt.Fprintf(stdout, "notes-web: warning: %s is not a loopback address, and the demo's sign-in has no password: whoever reaches it can sign in as %s\n", ln.Addr(), strings.Join(users, " or "))
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// endpointFromEnv reads the model's endpoint from OPENAI_BASE_URL,
// OPENAI_API_KEY and OPENAI_MODEL; ok is false when OPENAI_MODEL is unset.
func endpointFromEnv(getenv func(string) string) (ep chatrun.Endpoint, ok bool, err error) {
	ep = chatrun.Endpoint{
		BaseURL: strings.TrimSpace(getenv("OPENAI_BASE_URL")),
		APIKey:  strings.TrimSpace(getenv("OPENAI_API_KEY")),
		Model:   strings.TrimSpace(getenv("OPENAI_MODEL")),
	}
	if ep.Model == "" {
		if ep.BaseURL != "" || ep.APIKey != "" {
			return ep, false, errors.New("set OPENAI_MODEL too, or unset OPENAI_BASE_URL and OPENAI_API_KEY for the scripted model")
		}
		return ep, false, nil
	}
	if ep.BaseURL == "" {
		ep.BaseURL = "https://api.openai.com/v1"
		if ep.APIKey == "" {
			return ep, false, errors.New("set OPENAI_API_KEY (or OPENAI_BASE_URL for a server that needs no key)")
		}
	}
	return ep, true, nil
}

// startScripted serves the scripted model on a loopback port and returns
// its endpoint and the function that stops it.
func startScripted(s *scripted) (chatrun.Endpoint, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return chatrun.Endpoint{}, nil, err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	ep := chatrun.Endpoint{BaseURL: "http://" + ln.Addr().String() + "/v1", Model: "scripted"}
	return ep, func() { _ = srv.Close() }, nil
}
