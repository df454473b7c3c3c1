package chatadapter_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
	"github.com/llmtool/llmtool/sqlite"
	"github.com/stretchr/testify/require"
)

// The four APIs Run speaks, each against a scripted model that speaks
// its wire format (package chattest).
var runShapes = []chatadapter.Shape{chatadapter.OpenAIChat, chatadapter.OpenAIResponses, chatadapter.Anthropic, chatadapter.Gemini}

type PickIn struct {
	Name string `json:"name" desc:"Words of the item's name."`
}

type PickOut struct {
	ID     int    `json:"id,omitempty"`
	Name   string `json:"name,omitempty"`
	Answer string `json:"answer"` // the person's action
}

// pickItem asks the person which of the items matching name they mean.
var pickItem = llmtool.Read("pick_item", "Find an item by name; when several match, the user is asked to choose.",
	func(c *llmtool.ReadCtx, in PickIn) (PickOut, error) {
		rows, err := c.Query(`SELECT id, name FROM items WHERE name LIKE '%' || ? || '%' ORDER BY id`, in.Name)
		if err != nil {
			return PickOut{}, err
		}
		defer rows.Close()
		var options []map[string]any
		for rows.Next() {
			var id int
			var name string
			if err := rows.Scan(&id, &name); err != nil {
				return PickOut{}, err
			}
			options = append(options, map[string]any{"const": id, "title": name})
		}
		if err := rows.Err(); err != nil {
			return PickOut{}, err
		}
		schema, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"id"},
			"properties": map[string]any{"id": map[string]any{"type": "integer", "title": "Item", "oneOf": options}}})
		res, err := ask.Elicit(c, ask.ElicitRequest{Key: "pick", Message: fmt.Sprintf("%d items match %q. Which one?", len(options), in.Name), Schema: schema})
		if err != nil || res.Action != ask.Accept {
			return PickOut{Answer: res.Action}, err
		}
		var out PickOut
		if err := json.Unmarshal(res.Content, &out); err != nil {
			return PickOut{}, err
		}
		err = c.QueryRow(`SELECT name FROM items WHERE id = ?`, out.ID).Scan(&out.Name)
		out.Answer = res.Action
		return out, err
	}, llmtool.FriendlyName("Pick item"))

type RenameIn struct {
	ID   int    `json:"id" desc:"ID of the item." minimum:"1"`
	Name string `json:"name" desc:"The new name." minLength:"1"`
}

// renameItem, a write tool, asks for a confirmation before it renames.
var renameItem = llmtool.Write("rename_item", "Rename an item, once the user confirms.",
	func(c *llmtool.WriteCtx, in RenameIn) (ItemOut, error) {
		if _, err := c.Exec(`UPDATE items SET name = ? WHERE id = ?`, in.Name, in.ID); err != nil {
			return ItemOut{}, err
		}
		res, err := ask.Elicit(&c.ReadCtx, ask.ElicitRequest{Message: fmt.Sprintf("Rename item %d to %q?", in.ID, in.Name)})
		if err != nil {
			return ItemOut{}, err
		}
		if res.Action != ask.Accept {
			return ItemOut{}, llmtool.Denied("The user did not confirm the rename.").Next("Ask the user what to do instead.")
		}
		out := ItemOut{ID: in.ID}
		err = c.QueryRow(`SELECT name, qty FROM items WHERE id = ?`, in.ID).Scan(&out.Name, &out.Qty)
		return out, err
	}, llmtool.FriendlyName("Rename item"))

var askingShop = llmtool.DefineTools("shop", getItem, listItems, addItem, removeItem, pickItem, renameItem)

// approvalKey is the registries' approval key: a paused approval resumes
// in another process only with the same key.
var approvalKey = []byte("chatadapter-test-approval-key-0123456789")

// process is one process of a host: its own connection to the shop's
// database file, registry, adapter and context.
type process struct {
	db  *sql.DB
	a   *chatadapter.Adapter
	ctx context.Context
}

// newShop creates the shop's database file, with apple (1) and green
// apple (2), and returns its path.
func newShop(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sqlite.Open(path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0);
		INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3), (2, 'green apple', 5)`)
	require.NoError(t, err)
	return path
}

// start starts a process over the shop at path, its events to log.
func start(t *testing.T, path string, log *eventLog) *process {
	t.Helper()
	db, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ApprovalKey: approvalKey}, askingShop)
	require.NoError(t, err)
	ctx := llmtool.WithPrincipal(llmtool.WithTenant(context.Background(), tenant), &llmtool.Principal{ID: "ada"})
	require.NoError(t, reg.Tenants().SetWrites(ctx, tenant, true))
	if log != nil {
		ctx = chatadapter.WithEvents(ctx, log.add)
	}
	return &process{db: db, a: chatadapter.New(reg, nil), ctx: ctx}
}

func (p *process) rows(t *testing.T) [][3]any { return (&fixture{db: p.db}).rows(t) }

// runner returns a Runner over srv with opts.
func (p *process) runner(t *testing.T, srv *chattest.Server, opts *run.Options) *run.Runner {
	t.Helper()
	r, err := run.New(p.a, srv.Endpoint(), opts)
	require.NoError(t, err)
	return r
}

func user(shape chatadapter.Shape, text string) []json.RawMessage {
	return []json.RawMessage{run.TextMessage(shape, "user", text)}
}

// A turn of three requests: two reads and the model's words with them,
// a write, the answer; usage summed; the results in each API's format.
func TestRunShapesMultiStep(t *testing.T) {
	t.Parallel()
	for _, shape := range runShapes {
		t.Run(shape.String(), func(t *testing.T) {
			t.Parallel()
			p := start(t, newShop(t), nil)
			srv := chattest.NewServer(shape,
				chattest.Reply{Text: "Looking.", Calls: []chattest.Call{{Name: "get_item", Args: `{"id":1}`}, {Name: "list_items"}},
					Usage: chatadapter.Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 60}},
				chattest.Reply{Calls: []chattest.Call{{Name: "add_item", Args: `{"name":"pear","qty":2}`}},
					Usage: chatadapter.Usage{PromptTokens: 150, CompletionTokens: 10, CachedTokens: 100, CacheWriteTokens: 30}},
				chattest.Reply{Text: "Added a pear.", Usage: chatadapter.Usage{PromptTokens: 170, CompletionTokens: 5}})
			defer srv.Close()
			var model []string
			ctx := chatadapter.WithEvents(p.ctx, func(e chatadapter.Event) {
				if e.Kind == chatadapter.ModelReply {
					model = append(model, fmt.Sprintf("%d %q %d", e.Step, e.Text, total(e.Usage)))
				}
			})

			tr, err := p.runner(t, srv, &run.Options{System: "You keep a shop."}).Run(ctx, user(shape, "Add a pear."))
			require.NoError(t, err)
			require.Equal(t, "Added a pear.", tr.Answer)
			require.Equal(t, 3, tr.Steps)
			require.Nil(t, tr.Stopped)
			written := 0 // only Anthropic reports the tokens written to its cache
			if shape == chatadapter.Anthropic {
				written = 30
			}
			require.Equal(t, chatadapter.Usage{PromptTokens: 420, CompletionTokens: 35, CachedTokens: 160, CacheWriteTokens: written}, tr.Usage)
			require.Equal(t, []chatadapter.Usage{{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 60},
				{PromptTokens: 150, CompletionTokens: 10, CachedTokens: 100, CacheWriteTokens: written}, {PromptTokens: 170, CompletionTokens: 5}}, tr.StepUsage)
			require.Equal(t, []string{`1 "Looking." 120`, `2 "" 160`, `3 "Added a pear." 175`}, model)
			require.Len(t, tr.Outcomes, 3)
			require.Equal(t, [][3]any{{1, "apple", 3}, {2, "green apple", 5}, {3, "pear", 2}}, p.rows(t))

			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			last := reqs[2].Messages
			if shape == chatadapter.OpenAIChat {
				require.Equal(t, `{"role":"system","content":"You keep a shop."}`, string(last[0]))
				last = last[1:]
			}
			require.Equal(t, rawStrings(tr.Messages[:len(tr.Messages)-1]), rawStrings(last), "the transcript is what was sent, and the answer")
			require.Len(t, last, map[chatadapter.Shape]int{chatadapter.OpenAIChat: 6, chatadapter.OpenAIResponses: 8, // one item per call and result, and the words
				chatadapter.Anthropic: 5, chatadapter.Gemini: 5}[shape]) // the results of a turn in one message
			joined := string(appendAll(last))
			require.Contains(t, joined, "green apple", "list_items' result")
			require.Contains(t, joined, "pear", "add_item's result")
			system := map[chatadapter.Shape]string{chatadapter.OpenAIChat: "messages", chatadapter.OpenAIResponses: "instructions",
				chatadapter.Anthropic: "system", chatadapter.Gemini: "systemInstruction"}[shape]
			require.Contains(t, string(reqs[0].Body[system]), "You keep a shop.")
			require.NotContains(t, string(appendAll(tr.Messages)), "You keep a shop.", "the system prompt is not in the transcript")
			set, err := p.a.Tools(p.ctx, shape)
			require.NoError(t, err)
			require.JSONEq(t, string(set.JSON), string(reqs[0].Body["tools"]))
		})
	}
}

func appendAll(ms []json.RawMessage) []byte {
	var b []byte
	for _, m := range ms {
		b = append(append(b, m...), '\n')
	}
	return b
}

// 429 and 5xx are tried again, as soon as Retry-After says; a 400 is not;
// the events say so; once the retries are spent, the error keeps the
// conversation whole, and sending it again goes on.
func TestRunShapesRetries(t *testing.T) {
	t.Parallel()
	for _, shape := range runShapes {
		t.Run(shape.String(), func(t *testing.T) {
			t.Parallel()
			p := start(t, newShop(t), nil)
			busy := chattest.Reply{Status: 429, Text: "Rate limit reached.", RetryAfter: "0"}
			down := chattest.Reply{Status: 503, Text: "The service is unavailable.", RetryAfter: "0"}
			if shape == chatadapter.Anthropic {
				down = chattest.Reply{Status: 529, Text: "Overloaded", RetryAfter: "0"}
			}
			srv := chattest.NewServer(shape, busy, down, chattest.Reply{Calls: []chattest.Call{{Name: "add_item", Args: `{"name":"pear"}`}}},
				down, down, busy, // the second request's retries are spent
				chattest.Reply{Text: "Added a pear."})
			defer srv.Close()
			var events []string
			ctx := chatadapter.WithEvents(p.ctx, func(e chatadapter.Event) {
				switch e.Kind {
				case chatadapter.ModelRequest, chatadapter.ModelRetry:
					events = append(events, fmt.Sprintf("%d %d %d %s", e.Kind, e.Step, e.Attempt, e.Wait))
				}
			})
			r := p.runner(t, srv, &run.Options{MaxRetries: 2})

			tr, err := r.Run(ctx, user(shape, "Add a pear."))
			var he *run.HTTPError
			require.ErrorAs(t, err, &he)
			require.Equal(t, 429, he.StatusCode)
			require.Equal(t, "chatadapter: POST "+he.URL+": 429 Too Many Requests: "+he.Body, err.Error())
			require.Contains(t, he.Body, "Rate limit reached.")
			require.Equal(t, 1, tr.Steps)
			require.Len(t, tr.Messages, 3, "the question, the call, its result: whole, ready to send again")
			require.Equal(t, [][3]any{{1, "apple", 3}, {2, "green apple", 5}, {3, "pear", 1}}, p.rows(t))
			req, retry := int(chatadapter.ModelRequest), int(chatadapter.ModelRetry)
			require.Equal(t, []string{
				fmt.Sprintf("%d 1 1 0s", req), fmt.Sprintf("%d 1 1 0s", retry), fmt.Sprintf("%d 1 2 0s", req), fmt.Sprintf("%d 1 2 0s", retry),
				fmt.Sprintf("%d 1 3 0s", req),
				fmt.Sprintf("%d 2 1 0s", req), fmt.Sprintf("%d 2 1 0s", retry), fmt.Sprintf("%d 2 2 0s", req), fmt.Sprintf("%d 2 2 0s", retry),
				fmt.Sprintf("%d 2 3 0s", req),
			}, events)

			tr, err = r.Run(p.ctx, tr.Messages)
			require.NoError(t, err)
			require.Equal(t, "Added a pear.", tr.Answer)
			require.Len(t, srv.Requests(), 7)
		})
	}
}

// A client error is not tried again, and says what was wrong.
func TestRunShapesClientError(t *testing.T) {
	t.Parallel()
	for _, shape := range runShapes {
		t.Run(shape.String(), func(t *testing.T) {
			t.Parallel()
			p := start(t, newShop(t), nil)
			srv := chattest.NewServer(shape, chattest.Reply{Text: "never sent"})
			defer srv.Close()
			ep := srv.Endpoint()
			ep.APIKey = "wrong"
			tr, err := run.Run(p.ctx, p.a, ep, user(shape, "Hi."), nil)
			var he *run.HTTPError
			require.ErrorAs(t, err, &he)
			require.Equal(t, 401, he.StatusCode)
			require.Contains(t, err.Error(), "invalid API key")
			require.Len(t, srv.Requests(), 1)
			require.Len(t, tr.Messages, 1)
		})
	}
}

// A response cut at the output limit is an error that says what to do;
// nothing of it is kept or run, and its tokens are counted.
func TestRunShapesTruncated(t *testing.T) {
	t.Parallel()
	signs := map[chatadapter.Shape]string{
		chatadapter.OpenAIChat:      `(finish_reason "length"): raise max_completion_tokens`,
		chatadapter.OpenAIResponses: `(status "incomplete", reason "max_output_tokens"): raise max_output_tokens`,
		chatadapter.Anthropic:       `(stop_reason "max_tokens"): raise max_tokens`,
		chatadapter.Gemini:          `(finishReason "MAX_TOKENS"): raise generationConfig's "maxOutputTokens"`,
	}
	for _, shape := range runShapes {
		t.Run(shape.String(), func(t *testing.T) {
			t.Parallel()
			p := start(t, newShop(t), nil)
			srv := chattest.NewServer(shape, chattest.Reply{Text: "Adding a pe", Calls: []chattest.Call{{Name: "add_item", Args: `{"name":"pear"}`}},
				Truncated: true, Usage: chatadapter.Usage{PromptTokens: 50, CompletionTokens: 4096}})
			defer srv.Close()
			tr, err := run.Run(p.ctx, p.a, srv.Endpoint(), user(shape, "Add a pear."), nil)
			require.ErrorIs(t, err, run.ErrTruncated)
			url := srv.Endpoint().BaseURL + map[chatadapter.Shape]string{chatadapter.OpenAIChat: "/chat/completions", chatadapter.OpenAIResponses: "/responses",
				chatadapter.Anthropic: "/messages", chatadapter.Gemini: "/models/" + chattest.Model + ":generateContent"}[shape]
			require.EqualError(t, err, "chatadapter: POST "+url+": chatadapter: the model's response was cut at its output limit "+signs[shape]+
				" in run.Options.RequestFields, or ask for less; the transcript ends before this response, so Run can send it again")
			require.Equal(t, user(shape, "Add a pear."), tr.Messages)
			require.Equal(t, 4146, total(tr.Usage))
			require.Empty(t, tr.Outcomes)
			require.Equal(t, [][3]any{{1, "apple", 3}, {2, "green apple", 5}}, p.rows(t))
		})
	}
}

// The step limit and the token budget stop a turn with its history and a
// line for the person; a new user message goes on.
func TestRunShapesStops(t *testing.T) {
	t.Parallel()
	for _, shape := range runShapes {
		t.Run(shape.String(), func(t *testing.T) {
			t.Parallel()
			p := start(t, newShop(t), nil)
			call := chattest.Reply{Calls: []chattest.Call{{Name: "get_item", Args: `{"id":1}`}}, Usage: chatadapter.Usage{PromptTokens: 600, CompletionTokens: 10}}
			srv := chattest.NewServer(shape, call, call, call, call, chattest.Reply{Text: "Apple."})
			defer srv.Close()
			var stops []string
			ctx := chatadapter.WithEvents(p.ctx, func(e chatadapter.Event) {
				if e.Kind == chatadapter.TurnEnded && (errors.Is(e.Err, run.ErrStepLimit) || errors.Is(e.Err, run.ErrBudget)) {
					stops = append(stops, e.Label)
				}
			})

			tr, err := p.runner(t, srv, &run.Options{MaxSteps: 2}).Run(ctx, user(shape, "Go."))
			require.NoError(t, err)
			require.ErrorIs(t, tr.Stopped, run.ErrStepLimit)
			require.Equal(t, 2, tr.Steps)
			require.Len(t, tr.Messages, 5)

			tr, err = p.runner(t, srv, &run.Options{TokenBudget: 1000}).Run(ctx, append(tr.Messages, user(shape, "Go on.")...))
			require.NoError(t, err)
			require.ErrorIs(t, tr.Stopped, run.ErrBudget)
			require.EqualError(t, tr.Stopped, "chatadapter: token budget reached: the turn used 1220 tokens of its budget of 1000; raise TokenBudget or go on in a new turn")
			require.Equal(t, 2, tr.Steps)
			require.Equal(t, []string{
				"Stopped after 2 requests while the model was still calling tools. Say how to go on, or ask for less at once.",
				"Stopped: this turn used 1220 tokens of its budget of 1000. Say how to go on.",
			}, stops)

			tr, err = run.Run(p.ctx, p.a, srv.Endpoint(), append(tr.Messages, user(shape, "Well?")...), nil)
			require.NoError(t, err)
			require.Equal(t, "Apple.", tr.Answer)
		})
	}
}

// resumeElsewhere saves tr, as a host keeps it with the conversation,
// and restores it in another process over the same database, with a
// Runner built as the first.
func resumeElsewhere(t *testing.T, tr *run.Transcript, path string, srv *chattest.Server, log *eventLog) (*process, *run.Transcript) {
	t.Helper()
	saved, err := json.Marshal(tr)
	require.NoError(t, err)
	require.NotContains(t, string(saved), chattest.Key, "no credentials in a saved turn")
	p := start(t, path, log)
	restored, err := p.runner(t, srv, nil).Restore(saved)
	require.NoError(t, err)
	require.Equal(t, "tool_calls", restored.Finish, "the paused step asked for calls")
	require.Equal(t, []any{tr.Finish, tr.FinishRaw, tr.StepFinish}, []any{restored.Finish, restored.FinishRaw, restored.StepFinish})
	return p, restored
}

// An approval pauses the turn; the paused turn, saved as JSON, resumes in
// another process.
func TestRunShapesApprovalElsewhere(t *testing.T) {
	t.Parallel()
	for _, shape := range runShapes {
		for _, approved := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s approved %v", shape, approved), func(t *testing.T) {
				t.Parallel()
				path := newShop(t)
				log := &eventLog{}
				first := start(t, path, log)
				srv := chattest.NewServer(shape,
					chattest.Reply{Calls: []chattest.Call{{Name: "get_item", Args: `{"id":1}`}, {Name: "remove_item", Args: `{"id":1}`},
						{Name: "add_item", Args: `{"name":"pear"}`}}, Usage: chatadapter.Usage{PromptTokens: 10, CompletionTokens: 1}},
					chattest.Reply{Text: "Done.", Usage: chatadapter.Usage{PromptTokens: 20, CompletionTokens: 2}})
				defer srv.Close()
				tr, err := first.runner(t, srv, nil).Run(first.ctx, user(shape, "Swap the apple for a pear."))
				require.NoError(t, err)
				require.NotNil(t, tr.Pending)
				require.Equal(t, "Remove item asks to make this change: Remove item 1 (apple). (items: 1 deleted). Approve it?", tr.Pending.Prompt)
				require.Equal(t, []string{"Read item… done", "Remove item… needs approval"}, log.take())
				require.Len(t, srv.Requests(), 1)

				second, tr := resumeElsewhere(t, tr, path, srv, log)
				require.Equal(t, "Remove item", tr.Pending.FriendlyName)
				require.Equal(t, 1, tr.Pending.Index)
				require.Len(t, tr.Outcomes, 1)
				tr, err = second.runner(t, srv, nil).Resume(second.ctx, tr, yes(approved))
				require.NoError(t, err)
				require.Nil(t, tr.Pending)
				require.Equal(t, "Done.", tr.Answer)
				require.Equal(t, 2, tr.Steps)
				require.Equal(t, 33, total(tr.Usage))
				require.Len(t, tr.Outcomes, 3)
				want := [][3]any{{2, "green apple", 5}, {3, "pear", 1}}
				line := "Remove item… done"
				if !approved {
					want, line = [][3]any{{1, "apple", 3}, {2, "green apple", 5}, {3, "pear", 1}}, "Remove item… not approved"
				}
				require.Equal(t, want, second.rows(t))
				require.Equal(t, []string{line, "Add item… done"}, log.take())
				once := map[string]int{}
				for i := 1; i <= 3; i++ {
					once[callIDs(shape, 1, i)]++
				}
				require.Equal(t, once, log.starts(), "one card per call, across the processes")
				sent := string(appendAll(srv.Requests()[1].Messages))
				require.Equal(t, !approved, strings.Contains(sent, "The user denied this change."))
			})
		}
	}
}

// callIDs is the ID chattest gives call i of reply n (Gemini's calls have
// none: their events carry "").
func callIDs(shape chatadapter.Shape, n, i int) string {
	switch shape {
	case chatadapter.Anthropic:
		return fmt.Sprintf("toolu_%d_%d", n, i)
	case chatadapter.Gemini:
		return ""
	}
	return fmt.Sprintf("call_%d_%d", n, i)
}

// A tool's question pauses the turn as an approval does; the answer,
// given in another process, reaches the tool's ask.Elicit.
func TestRunShapesQuestionElsewhere(t *testing.T) {
	t.Parallel()
	answers := []struct {
		name   string
		answer ask.ElicitResult
		want   string // the tool's result
	}{
		{"chosen", ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"id":2}`)}, `{"id":2,"name":"green apple","answer":"accept"}`},
		{"declined", ask.ElicitResult{Action: ask.Decline}, `{"answer":"decline"}`},
	}
	for _, shape := range runShapes {
		for _, a := range answers {
			t.Run(shape.String()+" "+a.name, func(t *testing.T) {
				t.Parallel()
				path := newShop(t)
				log := &eventLog{}
				first := start(t, path, log)
				srv := chattest.NewServer(shape,
					chattest.Reply{Calls: []chattest.Call{{Name: "pick_item", Args: `{"name":"apple"}`}, {Name: "get_item", Args: `{"id":1}`}}},
					chattest.Reply{Text: "There you are."})
				defer srv.Close()
				tr, err := first.runner(t, srv, nil).Run(first.ctx, user(shape, "The apple, please."))
				require.NoError(t, err)
				p := tr.Pending
				require.NotNil(t, p)
				require.Equal(t, 0, p.Index)
				require.Equal(t, "pick", p.Question.Key)
				require.Equal(t, `2 items match "apple". Which one?`, p.Question.Message)
				require.JSONEq(t, `{"type":"object","required":["id"],"properties":{"id":{"type":"integer","title":"Item","oneOf":[{"const":1,"title":"apple"},{"const":2,"title":"green apple"}]}}}`, string(p.Question.Schema))
				require.Equal(t, `Pick item asks: 2 items match "apple". Which one?`, p.Prompt)
				require.Empty(t, p.Token)
				require.ElementsMatch(t, []string{"Pick item… waits for your answer", "Read item… done"}, log.take(), "the read beside it ran")

				second, tr := resumeElsewhere(t, tr, path, srv, log)
				tr, err = second.runner(t, srv, nil).Resume(second.ctx, tr, a.answer)
				require.NoError(t, err)
				require.Equal(t, "There you are.", tr.Answer)
				require.Equal(t, []string{"Pick item… done"}, log.take())
				require.Equal(t, a.want, string(tr.Outcomes[0].Result.JSON))
				sent := string(appendAll(srv.Requests()[1].Messages))
				require.Contains(t, sent, a.answer.Action, "the model reads the tool's result")
			})
		}
	}
}

// A write tool may ask too: its first run rolls back, the confirmed run
// commits; an answer that cannot be the form's is refused and the pause
// kept.
func TestRunQuestionInWrite(t *testing.T) {
	t.Parallel()
	p := start(t, newShop(t), nil)
	srv := chattest.NewServer(chatadapter.Anthropic,
		chattest.Reply{Calls: []chattest.Call{{Name: "rename_item", Args: `{"id":1,"name":"red apple"}`}}},
		chattest.Reply{Text: "Renamed."})
	defer srv.Close()
	rn := newRunner(t, p.a, srv.Endpoint(), nil)
	tr, err := rn.Run(p.ctx, user(chatadapter.Anthropic, "Rename the apple."))
	require.NoError(t, err)
	require.Equal(t, `Rename item 1 to "red apple"?`, tr.Pending.Question.Message)
	require.Equal(t, "elicit-1", tr.Pending.Question.Key)
	require.Equal(t, [][3]any{{1, "apple", 3}, {2, "green apple", 5}}, p.rows(t), "the asking run rolled back")

	for _, bad := range []struct {
		answer ask.ElicitResult
		want   string
	}{
		{ask.ElicitResult{Action: "yes"}, `chatadapter: an answer's Action is "yes"; use ask.Accept, ask.Decline or ask.Cancel`},
		{ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`[1]`)}, `chatadapter: an accepted answer's Content must be a JSON object, the filled form; got [1]`},
	} {
		_, err := rn.Resume(p.ctx, tr, bad.answer)
		require.EqualError(t, err, bad.want)
	}
	tr, err = rn.Resume(p.ctx, tr, yes(true))
	require.NoError(t, err)
	require.Equal(t, "Renamed.", tr.Answer)
	require.Equal(t, [][3]any{{1, "red apple", 3}, {2, "green apple", 5}}, p.rows(t))
	_, err = rn.Resume(p.ctx, tr, yes(true))
	require.ErrorIs(t, err, chatadapter.ErrNotPending)
}

// Endpoint.Header and Query reach every request; a header there replaces
// Run's own.
func TestRunEndpointHeaderAndQuery(t *testing.T) {
	t.Parallel()
	p := start(t, newShop(t), nil)
	srv := chattest.NewServer(chatadapter.OpenAIChat, chattest.Reply{Text: "Hi."})
	defer srv.Close()
	ep := srv.Endpoint()
	ep.Header = map[string][]string{"api-key": {"azure-key"}, "Accept": {"application/json; charset=utf-8"}}
	ep.Query = map[string][]string{"api-version": {"2024-10-21"}}
	_, err := run.Run(p.ctx, p.a, ep, user(chatadapter.OpenAIChat, "Hi."), nil)
	require.NoError(t, err)
	req := srv.Requests()[0]
	require.Equal(t, "2024-10-21", req.Query.Get("api-version"))
	require.Equal(t, "azure-key", req.Header.Get("Api-Key"))
	require.Equal(t, []string{"application/json; charset=utf-8"}, req.Header.Values("Accept"))
	require.True(t, slices.Contains(req.Header.Values("Authorization"), "Bearer "+chattest.Key))
}
