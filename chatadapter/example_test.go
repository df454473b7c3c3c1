package chatadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/i18n"
	"github.com/llmtool/llmtool/sqlite"
)

type GreetIn struct {
	Name  string `json:"name" desc:"Who to greet."`
	Times int    `json:"times,omitempty" desc:"How often (default 1)." default:"1" minimum:"1"`
}

type GreetOut struct {
	Greeting string `json:"greeting"`
}

var greet = llmtool.Read("greet", "Greet someone.",
	func(c *llmtool.ReadCtx, in GreetIn) (GreetOut, error) {
		g := ""
		for range in.Times {
			g += "Hello, " + in.Name + "! "
		}
		return GreetOut{Greeting: g[:len(g)-1]}, nil
	}, llmtool.FriendlyName("Greet"))

type CardIn struct {
	Name string `json:"name" desc:"Who the card is for."`
}

// greetingCard is a prompt: a person picks it in the host's chat.
var greetingCard = llmtool.Prompt("greeting_card", "Ask for a greeting card.",
	func(_ *llmtool.ReadCtx, in CardIn) ([]llmtool.Message, error) {
		return []llmtool.Message{{Role: "user", Content: llmtool.TextContent("Write a short greeting card for " + in.Name + ".")}}, nil
	}, llmtool.FriendlyName("Greeting card"))

var greetings = llmtool.DefineTools("greetings", greet, greetingCard)

// exampleRegistry opens a registry over a fresh SQLite file.
func exampleRegistry() (*llmtool.Registry, func()) {
	dir, err := os.MkdirTemp("", "chatadapter-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, greetings)
	if err != nil {
		log.Fatal(err)
	}
	return reg, func() { db.Close(); os.RemoveAll(dir) }
}

// Options, nil for the defaults, bound the reads that run at once, set
// the locale of events when the context names none and the catalog of
// their friendly names.
func ExampleNew() {
	reg, done := exampleRegistry()
	defer done()
	msgs := new(i18n.Catalog)
	msgs.Add("de", map[string]string{i18n.ToolKey("greet"): "Grüßen"})
	a := chatadapter.New(reg, &chatadapter.Options{MaxParallel: 2, Locale: "de", Messages: msgs})

	ctx := chatadapter.WithEvents(context.Background(), func(e chatadapter.Event) { fmt.Println(e.Label) })
	turn := `[{"id":"1","type":"function","function":{"name":"greet","arguments":"{\"name\":\"Ada\"}"}}]`
	if _, err := a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(turn)); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Grüßen…
	// Grüßen… done
}

// Each provider format has a name, for an application that offers a
// choice.
func ExampleShape_String() {
	for _, s := range []chatadapter.Shape{chatadapter.OpenAIChat, chatadapter.OpenAIChatStrict, chatadapter.OpenAIResponses,
		chatadapter.OpenAIResponsesStrict, chatadapter.Anthropic, chatadapter.Gemini} {
		fmt.Println(s)
	}
	// Output:
	// OpenAI Chat Completions
	// OpenAI Chat Completions (strict)
	// OpenAI Responses
	// OpenAI Responses (strict)
	// Anthropic Messages
	// Gemini
}

// The tool set for a request goes in the request's tools field as it is.
func ExampleAdapter_Tools() {
	reg, done := exampleRegistry()
	defer done()
	a := chatadapter.New(reg, nil)

	set, err := a.Tools(context.Background(), chatadapter.Anthropic)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(set.Names)
	fmt.Println(string(set.Tools[0]))

	strict, _ := a.Tools(context.Background(), chatadapter.OpenAIChatStrict)
	fmt.Println(string(strict.Tools[0]))
	// Output:
	// [greet man]
	// {"name":"greet","description":"Greet someone.","input_schema":{"type":"object","properties":{"name":{"type":"string","description":"Who to greet."},"times":{"type":"integer","description":"How often (default 1).","default":1,"minimum":1}},"required":["name"],"additionalProperties":false}}
	// {"type":"function","function":{"name":"greet","description":"Greet someone.","parameters":{"type":"object","properties":{"name":{"type":"string","description":"Who to greet."},"times":{"type":["integer","null"],"description":"How often (default 1).","minimum":1}},"required":["name","times"],"additionalProperties":false},"strict":true}}
}

// Dispatch takes the model's turn as the provider returned it and gives
// back the messages to append to the conversation.
func ExampleAdapter_Dispatch() {
	reg, done := exampleRegistry()
	defer done()
	a := chatadapter.New(reg, nil)

	turn := `{"role":"assistant","content":[
		{"type":"text","text":"Let me greet them."},
		{"type":"tool_use","id":"toolu_1","name":"greet","input":{"name":"Ada","times":2}},
		{"type":"tool_use","id":"toolu_2","name":"great","input":{"name":"Bob"}}]}`
	reply, err := a.Dispatch(context.Background(), chatadapter.Anthropic, []byte(turn))
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range reply.Messages {
		fmt.Println(string(m))
	}
	// Output:
	// {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada! Hello, Ada!\"}"}],"is_error":false},{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"{\"error\":\"Unknown tool \\\"great\\\". Did you mean \\\"greet\\\"?\"}"}],"is_error":true}]}
}

// A host's chat offers the prompts Registry.List lists for the tenant
// (ListOptions.Prompts); the one a person picks starts the conversation,
// in the provider's shape.
func ExampleAdapter_Prompt() {
	reg, done := exampleRegistry()
	defer done()
	a := chatadapter.New(reg, nil)
	ctx := context.Background()

	prompts, err := reg.List(ctx, &llmtool.ListOptions{Prompts: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range prompts {
		fmt.Printf("%s (%s), argument %s\n", p.FriendlyName, p.Name, p.Params[0].Name)
	}

	for _, shape := range []chatadapter.Shape{chatadapter.OpenAIChat, chatadapter.Anthropic, chatadapter.Gemini} {
		msgs, err := a.Prompt(ctx, shape, "greeting_card", json.RawMessage(`{"name":"Ada"}`))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(msgs[0]))
	}
	_, err = a.Prompt(ctx, chatadapter.OpenAIChat, "greeting_card", nil)
	fmt.Println(err)
	// Output:
	// Greeting card (greeting_card), argument name
	// {"role":"user","content":"Write a short greeting card for Ada."}
	// {"role":"user","content":[{"type":"text","text":"Write a short greeting card for Ada."}]}
	// {"role":"user","parts":[{"text":"Write a short greeting card for Ada."}]}
	// Error: /name: missing required parameter "name". Send "name" as a string (Who the card is for).
}

// Package run's Run talks to any OpenAI-compatible server; here an
// httptest server stands in for the model.
func Example_run() {
	reg, done := exampleRegistry()
	defer done()
	a := chatadapter.New(reg, nil)

	step := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		step++
		msg := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"greet","arguments":"{\"name\":\"Ada\"}"}}]}`
		if step == 2 {
			msg = `{"role":"assistant","content":"I said hello to Ada."}`
		}
		fmt.Fprintf(w, `{"choices":[{"message":%s}]}`, msg)
	}))
	defer srv.Close()

	ctx := chatadapter.WithEvents(context.Background(), func(e chatadapter.Event) {
		if e.Kind == chatadapter.CallFinished {
			fmt.Println(e.Label)
		}
	})
	tr, err := run.Run(ctx, a, run.Endpoint{BaseURL: srv.URL + "/v1", Model: "any"},
		[]json.RawMessage{run.UserMessage("Greet Ada.")},
		&run.Options{MaxSteps: 5, RequestFields: map[string]any{"temperature": 0}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tr.Answer)
	fmt.Println(string(tr.Messages[2]))
	// Output:
	// Greet… done
	// I said hello to Ada.
	// {"role":"tool","tool_call_id":"call_1","content":"{\"greeting\":\"Hello, Ada!\"}"}
}

// Events carry the tool's friendly name in the context's locale.
func ExampleWithEvents() {
	reg, done := exampleRegistry()
	defer done()
	msgs := new(i18n.Catalog)
	msgs.Add("de", map[string]string{i18n.ToolKey("greet"): "Grüßen"})
	a := chatadapter.New(reg, &chatadapter.Options{Messages: msgs})

	ctx := chatadapter.WithLocale(context.Background(), "de")
	ctx = chatadapter.WithEvents(ctx, func(e chatadapter.Event) { fmt.Println(e.Label) })
	turn := `[{"id":"1","type":"function","function":{"name":"greet","arguments":"{\"name\":\"Ada\"}"}}]`
	if _, err := a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(turn)); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Grüßen…
	// Grüßen… done
}

type EraseIn struct {
	Name string `json:"name" desc:"Who to erase."`
}

type EraseOut struct {
	Erased int64 `json:"erased"`
}

// eraseGuest needs a person's approval before it commits.
var eraseGuest = llmtool.Write("erase_guest", "Erase a guest from the guestbook.",
	func(c *llmtool.WriteCtx, in EraseIn) (EraseOut, error) {
		res, err := c.Exec(`DELETE FROM guests WHERE name = ?`, in.Name)
		if err != nil {
			return EraseOut{}, err
		}
		n, err := res.RowsAffected()
		c.Describe("Erase %s from the guestbook.", in.Name)
		return EraseOut{Erased: n}, err
	}, llmtool.NeedsApproval(), llmtool.FriendlyName("Erase guest"))

// exampleGuestbook opens a registry over a guestbook of Ada and Bob, with
// write tools on, and returns an adapter and a context for it.
func exampleGuestbook() (*chatadapter.Adapter, context.Context, func()) {
	dir, err := os.MkdirTemp("", "chatadapter-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE guests (name TEXT PRIMARY KEY); INSERT INTO guests VALUES ('Ada'), ('Bob')`); err != nil {
		log.Fatal(err)
	}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		llmtool.DefineTools("guestbook", eraseGuest))
	if err != nil {
		log.Fatal(err)
	}
	ctx := llmtool.WithPrincipal(context.Background(), &llmtool.Principal{ID: "host"})
	if err := reg.Tenants().SetWrites(ctx, "", true); err != nil {
		log.Fatal(err)
	}
	return chatadapter.New(reg, nil), ctx, func() { db.Close(); os.RemoveAll(dir) }
}

// A turn pauses at a call that needs approval; Pending has what the host
// shows the person.
func ExamplePending() {
	a, ctx, done := exampleGuestbook()
	defer done()

	turn := `[{"id":"call_1","type":"function","function":{"name":"erase_guest","arguments":"{\"name\":\"Ada\"}"}}]`
	reply, err := a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(turn))
	if err != nil {
		log.Fatal(err)
	}
	p := reply.Pending
	fmt.Printf("%s %s: %s\n", p.FriendlyName, p.Call.Args, p.Summary)
	fmt.Println(string(p.Preview.Result), p.Preview.Tables)
	fmt.Println(len(reply.Messages), "messages until the person answers")
	// Output:
	// Erase guest {"name":"Ada"}: Erase Ada from the guestbook. (guests: 1 deleted)
	// {"erased":1} [{guests 0 0 1}]
	// 0 messages until the person answers
}

// Resume answers the pending call; the reply then has every call's result
// for the model. A pause is resumed once.
func ExamplePending_Resume() {
	a, ctx, done := exampleGuestbook()
	defer done()

	turn := `[{"type":"tool_use","id":"toolu_1","name":"erase_guest","input":{"name":"Ada"}},
		{"type":"tool_use","id":"toolu_2","name":"erase_guest","input":{"name":"Bob"}}]`
	reply, err := a.Dispatch(ctx, chatadapter.Anthropic, []byte(turn))
	for err == nil && reply.Pending != nil {
		approved := reply.Pending.Call.ID == "toolu_2" // the person's answer: keep Ada, erase Bob
		fmt.Printf("%s? %v\n", reply.Pending.Summary, approved)
		paused := reply.Pending
		reply, err = paused.Resume(ctx, yes(approved))
		if _, again := paused.Resume(ctx, yes(approved)); errors.Is(again, chatadapter.ErrNotPending) {
			fmt.Println("(answered once)")
		}
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(reply.Messages[0]))
	// Output:
	// Erase Ada from the guestbook. (guests: 1 deleted)? false
	// (answered once)
	// Erase Bob from the guestbook. (guests: 1 deleted)? true
	// (answered once)
	// {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"{\"error\":\"The user denied this change. Nothing was saved. Ask the user what to do instead.\"}"}],"is_error":true},{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"{\"erased\":1}"}],"is_error":false}]}
}

// Package run pauses at a call that needs approval; Runner.Resume answers
// it and goes on with the run. Here an httptest server stands in for the
// model.
func Example_runResume() {
	a, ctx, done := exampleGuestbook()
	defer done()

	step := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		step++
		msg := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"erase_guest","arguments":"{\"name\":\"Bob\"}"}}]}`
		if step == 2 {
			msg = `{"role":"assistant","content":"Bob is gone."}`
		}
		fmt.Fprintf(w, `{"choices":[{"message":%s}]}`, msg)
	}))
	defer srv.Close()

	runner, err := run.New(a, run.Endpoint{BaseURL: srv.URL + "/v1", Model: "any"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := runner.Run(ctx, []json.RawMessage{run.UserMessage("Erase Bob.")})
	for err == nil && tr.Pending != nil {
		fmt.Printf("%s: %s Approve? yes\n", tr.Pending.FriendlyName, tr.Pending.Summary)
		tr, err = runner.Resume(ctx, tr, ask.ElicitResult{Action: ask.Accept})
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tr.Answer)
	fmt.Println(string(tr.Messages[2]))
	// Output:
	// Erase guest: Erase Bob from the guestbook. (guests: 1 deleted) Approve? yes
	// Bob is gone.
	// {"role":"tool","tool_call_id":"call_1","content":"{\"erased\":1}"}
}
