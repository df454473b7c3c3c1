package chatadapter_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/sqlite"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// The fixture: a shop's items in SQLite, two read tools, one write tool
// with failure hooks, a read tool that waits for company (to prove reads
// run concurrently) and a rich read tool.

type GetItemIn struct {
	ID       int `json:"id" desc:"ID of the item." minimum:"1"`
	MaxChars int `json:"maxChars,omitempty" desc:"Truncate the name to this many characters (default 40)." default:"40" minimum:"1"`
}

type ItemOut struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Qty  int    `json:"qty"`
}

type ListOut struct {
	Items []ItemOut `json:"items"`
}

type AddItemIn struct {
	Name string `json:"name" desc:"Name of the item." minLength:"1" maxLength:"40"`
	Qty  int    `json:"qty,omitempty" desc:"How many (default 1)." default:"1"`
	Fail string `json:"fail,omitempty" desc:"Test hook." enum:"error|conflict"`
}

type MeetIn struct {
	Name string `json:"name" desc:"Who arrives."`
}

type MeetOut struct {
	Met int `json:"met"`
}

type PhotoIn struct {
	ID int `json:"id" desc:"ID of the item."`
}

var getItem = llmtool.Read("get_item", "Read an item.",
	func(c *llmtool.ReadCtx, in GetItemIn) (ItemOut, error) {
		var out ItemOut
		err := c.QueryRow(`SELECT id, name, qty FROM items WHERE id = ?`, in.ID).Scan(&out.ID, &out.Name, &out.Qty)
		if errors.Is(err, sql.ErrNoRows) {
			return out, llmtool.NotFound("Item %d not found.", in.ID).Next("Call list_items to see the IDs.")
		}
		if len(out.Name) > in.MaxChars {
			out.Name = out.Name[:in.MaxChars]
		}
		return out, err
	}, llmtool.FriendlyName("Read item"))

var listItems = llmtool.Read("list_items", "List every item.",
	func(c *llmtool.ReadCtx, _ struct{}) (ListOut, error) {
		rows, err := c.Query(`SELECT id, name, qty FROM items ORDER BY id`)
		if err != nil {
			return ListOut{}, err
		}
		defer rows.Close()
		out := ListOut{Items: []ItemOut{}}
		for rows.Next() {
			var it ItemOut
			if err := rows.Scan(&it.ID, &it.Name, &it.Qty); err != nil {
				return ListOut{}, err
			}
			out.Items = append(out.Items, it)
		}
		return out, rows.Err()
	}, llmtool.FriendlyName("List items"))

var addItem = llmtool.Write("add_item", "Add an item.",
	func(c *llmtool.WriteCtx, in AddItemIn) (ItemOut, error) {
		res, err := c.Exec(`INSERT INTO items (name, qty) VALUES (?, ?)`, in.Name, in.Qty)
		if err != nil {
			return ItemOut{}, err
		}
		id, _ := res.LastInsertId()
		switch in.Fail {
		case "error":
			return ItemOut{}, errors.New("disk on fire")
		case "conflict":
			return ItemOut{}, llmtool.Conflict("An item named %q exists.", in.Name).Next("Pick another name.")
		}
		c.Progress(1, 1, "saved")
		return ItemOut{ID: int(id), Name: in.Name, Qty: in.Qty}, nil
	}, llmtool.FriendlyName("Add item"))

// meet waits until every guest of the test's party has arrived: it only
// returns if the calls of one turn run at the same time.
var meet = llmtool.Read("meet", "Wait for the other guests.",
	func(c *llmtool.ReadCtx, in MeetIn) (MeetOut, error) {
		p := c.Value(partyKey{}).(*party)
		p.arrive()
		select {
		case <-p.all:
			return MeetOut{Met: p.size}, nil
		case <-c.Done():
			return MeetOut{}, c.Err()
		}
	})

var photo = llmtool.Read("photo", "Show an item's photo.",
	func(c *llmtool.ReadCtx, in PhotoIn) (llmtool.Rich, error) {
		return llmtool.Rich{Content: []llmtool.Content{
			llmtool.TextContent("Item 1, front."),
			llmtool.ImageContent([]byte("PNG"), "image/png"),
			llmtool.AudioContent([]byte("WAV"), "audio/wav"),
		}}, nil
	})

var items = llmtool.DefineTools("items", getItem, listItems, addItem, meet, photo)

type partyKey struct{}

type party struct {
	size int
	mu   sync.Mutex
	n    int
	all  chan struct{}
}

func newParty(size int) *party { return &party{size: size, all: make(chan struct{})} }

func (p *party) arrive() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.n == p.size {
		close(p.all)
	}
}

const tenant = "shop"

// fixture is a registry over a fresh SQLite file with item 1 (apple, 3),
// write tools enabled in tenant, and an adapter over it.
type fixture struct {
	db  *sql.DB
	reg *llmtool.Registry
	a   *chatadapter.Adapter
	ctx context.Context // carries tenant
}

// openDB opens a fresh SQLite file.
func openDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "shop.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	db := openDB(t)
	_, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO items (id, name, qty) VALUES (1, 'apple', 3)`)
	require.NoError(t, err)
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ValidateOutput: true}, items)
	require.NoError(t, err)
	ctx := llmtool.WithTenant(context.Background(), tenant)
	require.NoError(t, reg.Tenants().SetWrites(ctx, tenant, true))
	return &fixture{db: db, reg: reg, a: chatadapter.New(reg, nil), ctx: ctx}
}

// rows returns the items table as [id, name, qty] triples.
func (f *fixture) rows(t testing.TB) [][3]any {
	t.Helper()
	rs, err := f.db.Query(`SELECT id, name, qty FROM items ORDER BY id`)
	require.NoError(t, err)
	defer rs.Close()
	var out [][3]any
	for rs.Next() {
		var id, qty int
		var name string
		require.NoError(t, rs.Scan(&id, &name, &qty))
		out = append(out, [3]any{id, name, qty})
	}
	require.NoError(t, rs.Err())
	return out
}

// model is an httptest server playing an OpenAI-compatible model: it
// answers the n-th request with replies[n] (a chat completion body) and
// records every request body.
type model struct {
	srv     *httptest.Server
	mu      sync.Mutex
	bodies  []map[string]json.RawMessage
	auth    []string
	replies []func(w http.ResponseWriter, r *http.Request)
}

func newModel(t testing.TB, replies ...func(w http.ResponseWriter, r *http.Request)) *model {
	t.Helper()
	return newModelAt(t, "/v1/chat/completions", replies...)
}

// newModelAt is newModel answering at path.
func newModelAt(t testing.TB, path string, replies ...func(w http.ResponseWriter, r *http.Request)) *model {
	t.Helper()
	m := &model{replies: replies}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var body map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		n := len(m.bodies)
		m.bodies = append(m.bodies, body)
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		m.mu.Unlock()
		if n >= len(m.replies) {
			http.Error(w, "no more replies scripted", http.StatusTeapot)
			return
		}
		m.replies[n](w, r)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *model) endpoint() run.Endpoint {
	return run.Endpoint{BaseURL: m.srv.URL + "/v1", APIKey: "sk-test", Model: "test-model"}
}

// requests returns the recorded request bodies.
func (m *model) requests() []map[string]json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]map[string]json.RawMessage(nil), m.bodies...)
}

// reply answers with an assistant message (its JSON).
func reply(message string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"test-model","choices":[{"index":0,"finish_reason":"stop","message":`+message+`}]}`)
	}
}

// toolCalls is an assistant message asking for calls, each a name and an
// arguments string; IDs are call_1, call_2, ...
func toolCalls(calls ...[2]string) string {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	m := struct {
		Role      string `json:"role"`
		Content   any    `json:"content"`
		ToolCalls []tc   `json:"tool_calls"`
	}{Role: "assistant"}
	for i, c := range calls {
		m.ToolCalls = append(m.ToolCalls, tc{ID: "call_" + string(rune('1'+i)), Type: "function", Function: fn{c[0], c[1]}})
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// answer is an assistant message without tool calls.
func answer(text string) string {
	b, _ := json.Marshal(map[string]string{"role": "assistant", "content": text})
	return string(b)
}

// messagesJSON returns a request's messages array, re-encoded compactly.
func messagesOf(t testing.TB, body map[string]json.RawMessage) []string {
	t.Helper()
	var ms []json.RawMessage
	require.NoError(t, json.Unmarshal(body["messages"], &ms))
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

func llmtoolTenant(ctx context.Context, s string) context.Context { return llmtool.WithTenant(ctx, s) }

// total is a usage's prompt and completion tokens, what run's
// TokenBudget counts.
func total(u chatadapter.Usage) int { return u.PromptTokens + u.CompletionTokens }

// yes is the person's yes or no as Pending.Resume takes it.
func yes(ok bool) ask.ElicitResult {
	if ok {
		return ask.ElicitResult{Action: ask.Accept}
	}
	return ask.ElicitResult{Action: ask.Decline}
}

// newRunner is run.New for a test.
func newRunner(t testing.TB, a *chatadapter.Adapter, ep run.Endpoint, opts *run.Options) *run.Runner {
	t.Helper()
	r, err := run.New(a, ep, opts)
	require.NoError(t, err)
	return r
}
