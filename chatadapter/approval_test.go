package chatadapter_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/stretchr/testify/require"
)

type RemoveItemIn struct {
	ID int `json:"id" desc:"ID of the item." minimum:"1"`
}

type RemovedOut struct {
	Removed int    `json:"removed"`
	Name    string `json:"name"`
}

// removeItem needs a person's approval before it commits.
var removeItem = llmtool.Write("remove_item", "Remove an item.",
	func(c *llmtool.WriteCtx, in RemoveItemIn) (RemovedOut, error) {
		var name string
		err := c.QueryRow(`SELECT name FROM items WHERE id = ?`, in.ID).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			return RemovedOut{}, llmtool.NotFound("Item %d not found.", in.ID).Next("Call list_items to see the IDs.")
		} else if err != nil {
			return RemovedOut{}, err
		}
		if _, err := c.Exec(`DELETE FROM items WHERE id = ?`, in.ID); err != nil {
			return RemovedOut{}, err
		}
		c.Describe("Remove item %d (%s).", in.ID, name)
		return RemovedOut{Removed: in.ID, Name: name}, nil
	}, llmtool.NeedsApproval(), llmtool.FriendlyName("Remove item"))

var shop = llmtool.DefineTools("shop", getItem, listItems, addItem, removeItem)

// newApprovalFixture is newFixture with remove_item, which needs approval.
// Its events go to f.events, one line per finished call.
func newApprovalFixture(t testing.TB) (*fixture, *eventLog) {
	t.Helper()
	db := openDB(t)
	_, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0);
		INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(t, err)
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ValidateOutput: true}, shop)
	require.NoError(t, err)
	ctx := llmtool.WithPrincipal(llmtool.WithTenant(context.Background(), tenant), &llmtool.Principal{ID: "ada"})
	require.NoError(t, reg.Tenants().SetWrites(ctx, tenant, true))
	log := &eventLog{}
	ctx = chatadapter.WithEvents(ctx, log.add)
	return &fixture{db: db, reg: reg, a: chatadapter.New(reg, nil), ctx: ctx}, log
}

// eventLog keeps the lines of finished and paused calls, and counts the
// calls started by ID.
type eventLog struct {
	mu      sync.Mutex
	lines   []string
	started map[string]int
}

func (l *eventLog) add(e chatadapter.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.Kind {
	case chatadapter.CallStarted:
		if l.started == nil {
			l.started = map[string]int{}
		}
		l.started[e.CallID]++
	case chatadapter.CallFinished, chatadapter.CallPaused:
		l.lines = append(l.lines, e.Label)
	}
}

// starts returns how many times each call ID started.
func (l *eventLog) starts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.started)
}

// take returns the lines since the last take.
func (l *eventLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// texts are the outcomes as "ID text" lines.
func texts(out []chatadapter.Outcome) []string {
	var s []string
	for _, o := range out {
		s = append(s, o.Call.ID+" "+o.Result.Text())
	}
	return s
}

const denied = "The user denied this change. Nothing was saved. Ask the user what to do instead."

// A turn with a read, a write that needs approval, a later write and a
// later read: the turn pauses at the approval with nothing after it run,
// and the person's answer decides what the later calls see.
func TestResume(t *testing.T) {
	t.Parallel()
	turn := `{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}},` +
		`{"id":"c2","type":"function","function":{"name":"remove_item","arguments":"{\"id\":1}"}},` +
		`{"id":"c3","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"pear\"}"}},` +
		`{"id":"c4","type":"function","function":{"name":"list_items","arguments":""}}]}`
	tests := []struct {
		name       string
		change     string // SQL run between the preview and the answer
		answers    []bool
		wantEvents [][]string // per answer
		wantRows   [][3]any
		wantTexts  []string
	}{
		{name: "approved", answers: []bool{true},
			wantEvents: [][]string{{"Remove item… done", "Add item… done", "List items… done"}},
			wantRows:   [][3]any{{1, "pear", 1}},
			wantTexts: []string{`c1 {"id":1,"name":"apple","qty":3}`, `c2 {"removed":1,"name":"apple"}`,
				`c3 {"id":1,"name":"pear","qty":1}`, `c4 {"items":[{"id":1,"name":"pear","qty":1}]}`}},
		{name: "denied", answers: []bool{false},
			wantEvents: [][]string{{"Remove item… not approved", "Add item… done", "List items… done"}},
			wantRows:   [][3]any{{1, "apple", 3}, {2, "pear", 1}},
			wantTexts: []string{`c1 {"id":1,"name":"apple","qty":3}`, "c2 " + denied,
				`c3 {"id":2,"name":"pear","qty":1}`, `c4 {"items":[{"id":1,"name":"apple","qty":3},{"id":2,"name":"pear","qty":1}]}`}},
		{name: "data changed, then approved", change: `UPDATE items SET name = 'green apple' WHERE id = 1`, answers: []bool{true, true},
			wantEvents: [][]string{{"Remove item… needs approval"}, {"Remove item… done", "Add item… done", "List items… done"}},
			wantRows:   [][3]any{{1, "pear", 1}},
			wantTexts: []string{`c1 {"id":1,"name":"apple","qty":3}`, `c2 {"removed":1,"name":"green apple"}`,
				`c3 {"id":1,"name":"pear","qty":1}`, `c4 {"items":[{"id":1,"name":"pear","qty":1}]}`}},
		{name: "data changed, then denied", change: `UPDATE items SET name = 'green apple' WHERE id = 1`, answers: []bool{true, false},
			wantEvents: [][]string{{"Remove item… needs approval"}, {"Remove item… not approved", "Add item… done", "List items… done"}},
			wantRows:   [][3]any{{1, "green apple", 3}, {2, "pear", 1}},
			wantTexts: []string{`c1 {"id":1,"name":"apple","qty":3}`, "c2 " + denied,
				`c3 {"id":2,"name":"pear","qty":1}`, `c4 {"items":[{"id":1,"name":"green apple","qty":3},{"id":2,"name":"pear","qty":1}]}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, events := newApprovalFixture(t)
			r, err := f.a.Dispatch(f.ctx, chatadapter.OpenAIChat, []byte(turn))
			require.NoError(t, err)
			require.Equal(t, []string{"Read item… done", "Remove item… needs approval"}, events.take())
			require.Empty(t, r.Messages, "withheld until every call has its result")
			require.Equal(t, []string{`c1 {"id":1,"name":"apple","qty":3}`}, texts(r.Outcomes))
			p := r.Pending
			require.NotNil(t, p)
			require.Equal(t, 1, p.Index)
			require.Equal(t, chatadapter.ToolCall{ID: "c2", Name: "remove_item", Args: json.RawMessage(`{"id":1}`)}, p.Call)
			require.Equal(t, "Remove item", p.FriendlyName)
			require.Equal(t, approval.Preview{Result: json.RawMessage(`{"removed":1,"name":"apple"}`),
				Tables: []approval.TableCount{{Table: "items", Deleted: 1}}, Summary: "Remove item 1 (apple)."}, p.Preview)
			require.Equal(t, "Remove item 1 (apple). (items: 1 deleted)", p.Summary)
			require.NotEmpty(t, p.Token)
			require.WithinDuration(t, time.Now().Add(15*time.Minute), p.Expires, time.Minute)
			require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t), "nothing saved, and the later write has not run")

			if tt.change != "" {
				_, err := f.db.Exec(tt.change)
				require.NoError(t, err)
			}
			for i, ok := range tt.answers {
				prev := r
				r, err = r.Pending.Resume(f.ctx, yes(ok))
				require.NoError(t, err)
				require.Equal(t, tt.wantEvents[i], events.take(), "answer %d", i)
				_, err = prev.Pending.Resume(f.ctx, yes(ok))
				require.ErrorIs(t, err, chatadapter.ErrNotPending, "each pause is answered once")
				if i < len(tt.answers)-1 {
					require.NotNil(t, r.Pending, "the data changed: asked again")
					require.Equal(t, 1, r.Pending.Index)
					require.Equal(t, "Remove item 1 (green apple). (items: 1 deleted)", r.Pending.Summary)
					require.NotEqual(t, p.Token, r.Pending.Token)
					require.Empty(t, r.Messages)
					require.Len(t, r.Outcomes, 1)
					require.Equal(t, [][3]any{{1, "green apple", 3}}, f.rows(t), "nothing saved")
				}
			}
			require.Nil(t, r.Pending)
			require.Equal(t, tt.wantTexts, texts(r.Outcomes))
			require.Len(t, r.Messages, 4)
			require.Equal(t, tt.wantRows, f.rows(t))
			require.Equal(t, map[string]int{"c1": 1, "c2": 1, "c3": 1, "c4": 1}, events.starts(), "one card per call: the pause does not start it again")
			_, err = r.Pending.Resume(f.ctx, yes(true))
			require.ErrorIs(t, err, chatadapter.ErrNotPending)
		})
	}
}

// Every shape withholds the turn's results while a call waits, and gives
// them all, in its own format, once the person answered.
func TestResumeShapes(t *testing.T) {
	t.Parallel()
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	const (
		get     = `{"id":1,"name":"apple","qty":3}`
		removed = `{"removed":1,"name":"apple"}`
		pear1   = `{"id":1,"name":"pear","qty":1}`
		pear2   = `{"id":2,"name":"pear","qty":1}`
		denial  = `{"error":"` + denied + `"}`
	)
	tests := []struct {
		shape       chatadapter.Shape
		turn        string
		approved    bool
		want        []string
		wantPending string // the pending call's ID
	}{
		{chatadapter.OpenAIChat,
			`{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[` +
				`{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1}"}},` +
				`{"id":"c2","type":"function","function":{"name":"remove_item","arguments":"{\"id\":1}"}},` +
				`{"id":"c3","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"pear\"}"}}]}}]}`,
			true, []string{
				`{"role":"tool","tool_call_id":"c1","content":` + q(get) + `}`,
				`{"role":"tool","tool_call_id":"c2","content":` + q(removed) + `}`,
				`{"role":"tool","tool_call_id":"c3","content":` + q(pear1) + `}`,
			}, "c2"},
		{chatadapter.OpenAIChatStrict,
			`[{"id":"c1","type":"function","function":{"name":"get_item","arguments":"{\"id\":1,\"maxChars\":null}"}},` +
				`{"id":"c2","type":"function","function":{"name":"remove_item","arguments":"{\"id\":1}"}},` +
				`{"id":"c3","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"pear\",\"qty\":null,\"fail\":null}"}}]`,
			false, []string{
				`{"role":"tool","tool_call_id":"c1","content":` + q(get) + `}`,
				`{"role":"tool","tool_call_id":"c2","content":` + q(denial) + `}`,
				`{"role":"tool","tool_call_id":"c3","content":` + q(pear2) + `}`,
			}, "c2"},
		{chatadapter.OpenAIResponses,
			`{"output":[{"type":"function_call","call_id":"c1","name":"get_item","arguments":"{\"id\":1}"},` +
				`{"type":"function_call","call_id":"c2","name":"remove_item","arguments":"{\"id\":1}"},` +
				`{"type":"function_call","call_id":"c3","name":"add_item","arguments":"{\"name\":\"pear\"}"}]}`,
			true, []string{
				`{"type":"function_call_output","call_id":"c1","output":` + q(get) + `}`,
				`{"type":"function_call_output","call_id":"c2","output":` + q(removed) + `}`,
				`{"type":"function_call_output","call_id":"c3","output":` + q(pear1) + `}`,
			}, "c2"},
		{chatadapter.OpenAIResponses,
			`{"output":[{"type":"function_call","call_id":"c1","name":"get_item","arguments":"{\"id\":1}"},` +
				`{"type":"function_call","call_id":"c2","name":"remove_item","arguments":"{\"id\":1}"},` +
				`{"type":"function_call","call_id":"c3","name":"add_item","arguments":"{\"name\":\"pear\"}"}]}`,
			false, []string{
				`{"type":"function_call_output","call_id":"c1","output":` + q(get) + `}`,
				`{"type":"function_call_output","call_id":"c2","output":` + q(denial) + `}`,
				`{"type":"function_call_output","call_id":"c3","output":` + q(pear2) + `}`,
			}, "c2"},
		{chatadapter.Anthropic,
			`{"role":"assistant","content":[{"type":"text","text":"Removing."},` +
				`{"type":"tool_use","id":"c1","name":"get_item","input":{"id":1}},` +
				`{"type":"tool_use","id":"c2","name":"remove_item","input":{"id":1}},` +
				`{"type":"tool_use","id":"c3","name":"add_item","input":{"name":"pear"}}]}`,
			true, []string{`{"role":"user","content":[` +
				`{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":` + q(get) + `}],"is_error":false},` +
				`{"type":"tool_result","tool_use_id":"c2","content":[{"type":"text","text":` + q(removed) + `}],"is_error":false},` +
				`{"type":"tool_result","tool_use_id":"c3","content":[{"type":"text","text":` + q(pear1) + `}],"is_error":false}]}`,
			}, "c2"},
		{chatadapter.Anthropic,
			`[{"type":"tool_use","id":"c1","name":"get_item","input":{"id":1}},` +
				`{"type":"tool_use","id":"c2","name":"remove_item","input":{"id":1}},` +
				`{"type":"tool_use","id":"c3","name":"add_item","input":{"name":"pear"}}]`,
			false, []string{`{"role":"user","content":[` +
				`{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":` + q(get) + `}],"is_error":false},` +
				`{"type":"tool_result","tool_use_id":"c2","content":[{"type":"text","text":` + q(denial) + `}],"is_error":true},` +
				`{"type":"tool_result","tool_use_id":"c3","content":[{"type":"text","text":` + q(pear2) + `}],"is_error":false}]}`,
			}, "c2"},
		{chatadapter.Gemini,
			`{"candidates":[{"content":{"role":"model","parts":[` +
				`{"functionCall":{"id":"c1","name":"get_item","args":{"id":1}}},` +
				`{"functionCall":{"id":"c2","name":"remove_item","args":{"id":1}}},` +
				`{"functionCall":{"id":"c3","name":"add_item","args":{"name":"pear"}}}]}}]}`,
			true, []string{`{"role":"user","parts":[` +
				`{"functionResponse":{"id":"c1","name":"get_item","response":` + get + `}},` +
				`{"functionResponse":{"id":"c2","name":"remove_item","response":` + removed + `}},` +
				`{"functionResponse":{"id":"c3","name":"add_item","response":` + pear1 + `}}]}`,
			}, "c2"},
		{chatadapter.Gemini, // without IDs: results pair with calls by name and order
			`{"parts":[{"functionCall":{"name":"get_item","args":{"id":1}}},` +
				`{"functionCall":{"name":"remove_item","args":{"id":1}}},` +
				`{"functionCall":{"name":"add_item","args":{"name":"pear"}}}]}`,
			false, []string{`{"role":"user","parts":[` +
				`{"functionResponse":{"name":"get_item","response":` + get + `}},` +
				`{"functionResponse":{"name":"remove_item","response":` + denial + `}},` +
				`{"functionResponse":{"name":"add_item","response":` + pear2 + `}}]}`,
			}, ""},
	}
	for _, tt := range tests {
		name := tt.shape.String() + map[bool]string{true: ", approved", false: ", denied"}[tt.approved]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, _ := newApprovalFixture(t)
			r, err := f.a.Dispatch(f.ctx, tt.shape, []byte(tt.turn))
			require.NoError(t, err)
			require.Nil(t, r.Messages)
			require.NotNil(t, r.Pending)
			require.Equal(t, tt.wantPending, r.Pending.Call.ID)
			require.Equal(t, "remove_item", r.Pending.Call.Name)
			require.Len(t, r.Outcomes, 1)
			require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))

			r, err = r.Pending.Resume(f.ctx, yes(tt.approved))
			require.NoError(t, err)
			require.Nil(t, r.Pending)
			var got []string
			for _, m := range r.Messages {
				got = append(got, string(m))
			}
			require.Equal(t, tt.want, got)
			if tt.approved {
				require.Equal(t, [][3]any{{1, "pear", 1}}, f.rows(t))
			} else {
				require.Equal(t, [][3]any{{1, "apple", 3}, {2, "pear", 1}}, f.rows(t))
			}
		})
	}
}

// Two calls that need approval in one turn are asked one after the other:
// the second is previewed only once the first is decided, on the data the
// first left.
func TestResumeTwoApprovals(t *testing.T) {
	t.Parallel()
	f, events := newApprovalFixture(t)
	_, err := f.db.Exec(`INSERT INTO items (id, name, qty) VALUES (2, 'pear', 1)`)
	require.NoError(t, err)
	r, err := f.a.Dispatch(f.ctx, chatadapter.Anthropic, []byte(`[`+
		`{"type":"tool_use","id":"t1","name":"remove_item","input":{"id":1}},`+
		`{"type":"tool_use","id":"t2","name":"remove_item","input":{"id":1}},`+
		`{"type":"tool_use","id":"t3","name":"remove_item","input":{"id":2}}]`))
	require.NoError(t, err)
	require.Equal(t, "t1", r.Pending.Call.ID)
	require.Equal(t, []string{"Remove item… needs approval"}, events.take())

	r, err = r.Pending.Resume(f.ctx, yes(true))
	require.NoError(t, err)
	require.Equal(t, []string{`t1 {"removed":1,"name":"apple"}`, "t2 Item 1 not found. Call list_items to see the IDs."}, texts(r.Outcomes),
		"the second call saw the first one's commit, and failed without asking")
	require.Equal(t, "t3", r.Pending.Call.ID)
	require.Equal(t, 2, r.Pending.Index)
	require.Equal(t, "Remove item 2 (pear). (items: 1 deleted)", r.Pending.Summary)
	require.Equal(t, []string{"Remove item… done", "Remove item… failed", "Remove item… needs approval"}, events.take())
	require.Empty(t, r.Messages)
	require.Equal(t, [][3]any{{2, "pear", 1}}, f.rows(t))

	r, err = r.Pending.Resume(f.ctx, yes(false))
	require.NoError(t, err)
	require.Nil(t, r.Pending)
	require.Len(t, r.Messages, 1)
	require.Len(t, r.Outcomes, 3)
	require.Equal(t, "t3 "+denied, texts(r.Outcomes)[2])
	require.Equal(t, [][3]any{{2, "pear", 1}}, f.rows(t))
}

// Execute cannot wait: the call that needs approval fails with its
// request, saving nothing, and the calls after it run.
func TestExecuteDoesNotWait(t *testing.T) {
	t.Parallel()
	f, events := newApprovalFixture(t)
	out := f.a.Execute(f.ctx, []chatadapter.ToolCall{
		{ID: "1", Name: "remove_item", Args: json.RawMessage(`{"id":1}`)},
		{ID: "2", Name: "add_item", Args: json.RawMessage(`{"name":"pear"}`)},
	})
	require.True(t, out[0].Result.IsError)
	require.ErrorIs(t, out[0].Result.Err, approval.ErrRequired)
	require.NotNil(t, out[0].Result.Approval)
	require.Equal(t, `This change needs the user's approval: Remove item 1 (apple). (items: 1 deleted). Nothing was saved yet; ask the user to approve it.`, out[0].Result.Text())
	require.False(t, out[1].Result.IsError)
	require.Equal(t, []string{"Remove item… needs approval", "Add item… done"}, events.take())
	require.Equal(t, [][3]any{{1, "apple", 3}, {2, "pear", 1}}, f.rows(t))
}

// The token is bound to the principal: another user's context cannot
// approve the change, and nothing is saved.
func TestResumeOtherPrincipal(t *testing.T) {
	t.Parallel()
	f, _ := newApprovalFixture(t)
	r, err := f.a.Dispatch(f.ctx, chatadapter.OpenAIChat, []byte(`[{"id":"c1","type":"function","function":{"name":"remove_item","arguments":"{\"id\":1}"}}]`))
	require.NoError(t, err)
	bob := llmtool.WithPrincipal(f.ctx, &llmtool.Principal{ID: "bob"})
	r, err = r.Pending.Resume(bob, yes(true))
	require.NoError(t, err)
	require.Nil(t, r.Pending)
	require.ErrorIs(t, r.Outcomes[0].Result.Err, approval.ErrRefused)
	require.Equal(t, `The approval was given to another user. Nothing was saved. Call the tool again to get a new preview for the user to approve.`, r.Outcomes[0].Result.Text())
	require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))
}

// Run pauses at a call that needs approval, sending nothing more, and
// Transcript.Resume answers it and goes on with the run.
func TestRunApproval(t *testing.T) {
	t.Parallel()
	calls := toolCalls([2]string{"remove_item", `{"id":1}`}, [2]string{"add_item", `{"name":"pear"}`})
	assistant := `{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_1","type":"function","function":{"name":"remove_item","arguments":"{\"id\":1}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"add_item","arguments":"{\"name\":\"pear\"}"}}]}`
	tests := []struct {
		name     string
		approved bool
		want     []string // the tool messages of the second request
		wantRows [][3]any
	}{
		{"approved", true, []string{
			`{"role":"tool","tool_call_id":"call_1","content":"{\"removed\":1,\"name\":\"apple\"}"}`,
			`{"role":"tool","tool_call_id":"call_2","content":"{\"id\":1,\"name\":\"pear\",\"qty\":1}"}`,
		}, [][3]any{{1, "pear", 1}}},
		{"denied", false, []string{
			`{"role":"tool","tool_call_id":"call_1","content":"{\"error\":\"` + denied + `\"}"}`,
			`{"role":"tool","tool_call_id":"call_2","content":"{\"id\":2,\"name\":\"pear\",\"qty\":1}"}`,
		}, [][3]any{{1, "apple", 3}, {2, "pear", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, events := newApprovalFixture(t)
			m := newModel(t, reply(calls), reply(answer("Done.")))
			rn := newRunner(t, f.a, m.endpoint(), &run.Options{MaxSteps: 2})
			tr, err := rn.Run(f.ctx, []json.RawMessage{run.UserMessage("Go.")})
			require.NoError(t, err)
			require.NotNil(t, tr.Pending)
			require.Equal(t, "call_1", tr.Pending.Call.ID)
			require.Equal(t, "Remove item 1 (apple). (items: 1 deleted)", tr.Pending.Summary)
			require.Equal(t, "", tr.Answer)
			require.Equal(t, 1, tr.Steps)
			require.Len(t, m.requests(), 1, "nothing sent while the call waits")
			require.Equal(t, []string{userAsk, assistant}, rawStrings(tr.Messages))
			require.Empty(t, tr.Outcomes)
			require.Equal(t, [][3]any{{1, "apple", 3}}, f.rows(t))
			require.Equal(t, []string{"Remove item… needs approval"}, events.take())

			paused := tr
			tr, err = rn.Resume(f.ctx, tr, yes(tt.approved))
			require.NoError(t, err)
			require.Nil(t, tr.Pending)
			require.Equal(t, "Done.", tr.Answer)
			require.Equal(t, 2, tr.Steps)
			reqs := m.requests()
			require.Len(t, reqs, 2)
			require.Equal(t, append([]string{userAsk, assistant}, tt.want...), messagesOf(t, reqs[1]))
			require.Equal(t, append([]string{userAsk, assistant}, append(tt.want, `{"role":"assistant","content":"Done."}`)...), rawStrings(tr.Messages))
			require.Len(t, tr.Outcomes, 2)
			require.Equal(t, tt.wantRows, f.rows(t))

			_, err = rn.Resume(f.ctx, paused, yes(true))
			require.ErrorIs(t, err, chatadapter.ErrNotPending)
			_, err = rn.Resume(f.ctx, tr, yes(true))
			require.ErrorIs(t, err, chatadapter.ErrNotPending)
			require.Len(t, m.requests(), 2)
			require.Equal(t, tt.wantRows, f.rows(t))
		})
	}
}

// A resumed run counts its steps on: at the limit it stops with the
// turn's results, as Run does.
func TestRunApprovalStepLimit(t *testing.T) {
	t.Parallel()
	f, _ := newApprovalFixture(t)
	m := newModel(t, reply(toolCalls([2]string{"remove_item", `{"id":1}`})))
	rn := newRunner(t, f.a, m.endpoint(), &run.Options{MaxSteps: 1})
	tr, err := rn.Run(f.ctx, []json.RawMessage{run.UserMessage("Go.")})
	require.NoError(t, err)
	require.NotNil(t, tr.Pending)
	tr, err = rn.Resume(f.ctx, tr, yes(true))
	require.NoError(t, err, "the step limit ends the turn with its history, not an error")
	require.ErrorIs(t, tr.Stopped, run.ErrStepLimit)
	require.Nil(t, tr.Pending)
	require.Equal(t, 1, tr.Steps)
	require.Len(t, m.requests(), 1)
	require.Equal(t, `{"role":"tool","tool_call_id":"call_1","content":"{\"removed\":1,\"name\":\"apple\"}"}`, string(tr.Messages[2]))
	require.Empty(t, f.rows(t))
}

func rawStrings(ms []json.RawMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}
