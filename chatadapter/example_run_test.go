package chatadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
	"github.com/llmtool/llmtool/sqlite"
)

// A run.Runner holds turns with a model over one API; here a scripted
// Anthropic model (package chattest) stands in for Claude.
func Example_runner() {
	reg, done := exampleRegistry()
	defer done()
	model := chattest.NewServer(chatadapter.Anthropic,
		chattest.Reply{Text: "Let me greet her.", Calls: []chattest.Call{{Name: "greet", Args: `{"name":"Ada"}`}},
			Usage: chatadapter.Usage{PromptTokens: 420, CompletionTokens: 30, CachedTokens: 400}},
		chattest.Reply{Text: "I said hello to Ada.", Usage: chatadapter.Usage{PromptTokens: 480, CompletionTokens: 12, CachedTokens: 400}})
	defer model.Close()

	ep := model.Endpoint() // in a host: {Shape: chatadapter.Anthropic, BaseURL: "https://api.anthropic.com/v1", APIKey: ..., Model: ...}
	r, err := run.New(chatadapter.New(reg, nil), ep, &run.Options{System: "You are polite."})
	if err != nil {
		log.Fatal(err)
	}
	ctx := chatadapter.WithEvents(context.Background(), func(e chatadapter.Event) {
		if e.Kind == chatadapter.ModelReply || e.Kind == chatadapter.CallFinished {
			fmt.Println(e.Label)
		}
	})
	tr, err := r.Run(ctx, []json.RawMessage{run.UserMessage("Greet Ada.")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tr.Answer)
	fmt.Printf("%d requests, %d tokens, %d of them cached\n", tr.Steps, total(tr.Usage), tr.Usage.CachedTokens)
	fmt.Println(string(tr.Messages[2]))
	// Output:
	// Let me greet her.
	// Greet… done
	// I said hello to Ada.
	// I said hello to Ada.
	// 2 requests, 942 tokens, 800 of them cached
	// {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1_1","content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada!\"}"}],"is_error":false}]}
}

type PaintIn struct {
	Wall string `json:"wall" desc:"The wall to paint."`
}

type PaintOut struct {
	Painted string `json:"painted,omitempty"`
	Color   string `json:"color,omitempty"`
}

// paint asks the person for the color, as it would ask an MCP client.
var paint = llmtool.Read("paint", "Paint a wall; the user picks the color.",
	func(c *llmtool.ReadCtx, in PaintIn) (PaintOut, error) {
		res, err := ask.Elicit(c, ask.ElicitRequest{Key: "color", Message: "Which color for the " + in.Wall + " wall?",
			Schema: json.RawMessage(`{"type":"object","properties":{"color":{"type":"string","enum":["white","green"]}},"required":["color"]}`)})
		if err != nil || res.Action != ask.Accept {
			return PaintOut{}, err // a declined question leaves the wall as it is
		}
		var out PaintOut
		err = json.Unmarshal(res.Content, &out)
		out.Painted = in.Wall
		return out, err
	}, llmtool.FriendlyName("Paint"))

// A tool's question pauses the turn; the pending call, saved as JSON,
// resumes later (here in the same process) with the person's answer.
func ExamplePending_Resume_question() {
	dir, err := os.MkdirTemp("", "chatadapter-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, llmtool.DefineTools("house", paint))
	if err != nil {
		log.Fatal(err)
	}
	a := chatadapter.New(reg, nil)
	ctx := context.Background()

	reply, err := a.Dispatch(ctx, chatadapter.OpenAIChat, []byte(`[{"id":"call_1","type":"function","function":{"name":"paint","arguments":"{\"wall\":\"north\"}"}}]`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Pending.Prompt)
	fmt.Println(string(reply.Pending.Question.Schema))
	saved, err := json.Marshal(reply.Pending) // kept with the conversation until the person answers
	if err != nil {
		log.Fatal(err)
	}

	pending, err := a.Restore(saved)
	if err != nil {
		log.Fatal(err)
	}
	reply, err = pending.Resume(ctx, ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"color":"green"}`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(reply.Messages[0]))
	// Output:
	// Paint asks: Which color for the north wall?
	// {"type":"object","properties":{"color":{"type":"string","enum":["white","green"]}},"required":["color"]}
	// {"role":"tool","tool_call_id":"call_1","content":"{\"painted\":\"north\",\"color\":\"green\"}"}
}
