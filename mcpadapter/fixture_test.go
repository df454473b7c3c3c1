package mcpadapter_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/audit"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/sqlite"
)

// The test module: a few tools over a notes table in a real SQLite file.

type noteIn struct {
	ID int64 `json:"id" desc:"ID of the note."`
}

type noteOut struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

type createIn struct {
	Title string `json:"title" desc:"Title of the new note." minLength:"1"`
	Body  string `json:"body,omitempty" desc:"Text of the note."`
}

type statusOut struct {
	Status string `json:"status"`
}

type answerOut struct {
	Action  string          `json:"action"`
	Answer  json.RawMessage `json:"answer,omitempty"`
	Refusal string          `json:"refusal,omitempty"`
}

type sampleOut struct {
	Reply   string `json:"reply,omitempty"`
	Model   string `json:"model,omitempty"`
	Refusal string `json:"refusal,omitempty"`
}

type twiceOut struct {
	Name   string `json:"name"`
	Colour string `json:"colour"`
}

// answerName returns the name of an accepted elicitation's answer.
func answerName(res ask.ElicitResult) (string, error) {
	var v struct{ Name string }
	if res.Action != ask.Accept {
		return "", llmtool.Conflict("The user answered %s.", res.Action)
	}
	err := json.Unmarshal(res.Content, &v)
	return v.Name, err
}

type whoOut struct {
	Principal string `json:"principal"`
	Tenant    string `json:"tenant"`
}

const nameSchema = `{"type":"object","properties":{"name":{"type":"string","description":"Your name"}},"required":["name"]}`

var (
	getNote = llmtool.Read("get_note", "Read a note's title and body.",
		func(c *llmtool.ReadCtx, in noteIn) (noteOut, error) {
			out := noteOut{ID: in.ID}
			err := c.QueryRow("SELECT title, body FROM notes WHERE id = ?", in.ID).Scan(&out.Title, &out.Body)
			if errors.Is(err, sql.ErrNoRows) {
				return out, llmtool.NotFound("Note %d not found.", in.ID).Next("Call list_notes to find the ID.")
			}
			return out, err
		}, llmtool.FriendlyName("Read note"), llmtool.Idempotent())

	createNote = llmtool.Write("create_note", "Create a note.",
		func(c *llmtool.WriteCtx, in createIn) (noteOut, error) {
			out := noteOut{Title: in.Title, Body: in.Body}
			err := c.QueryRow("INSERT INTO notes (title, body) VALUES (?, ?) RETURNING id", in.Title, in.Body).Scan(&out.ID)
			return out, err
		}, llmtool.FriendlyName("Create note"))

	deleteNote = llmtool.Write("delete_note", "Delete a note.",
		func(c *llmtool.WriteCtx, in noteIn) (statusOut, error) {
			var title string
			_ = c.QueryRow("SELECT title FROM notes WHERE id = ?", in.ID).Scan(&title)
			_, err := c.Exec("DELETE FROM notes WHERE id = ?", in.ID)
			c.Describe("Delete note %d %q.", in.ID, title)
			return statusOut{Status: "deleted"}, err
		}, llmtool.FriendlyName("Delete note"), llmtool.Destructive(), llmtool.Idempotent())

	webLookup = llmtool.Read("web_lookup", "Look a word up on the web.",
		func(c *llmtool.ReadCtx, in struct{}) (statusOut, error) { return statusOut{Status: "ok"}, nil },
		llmtool.OpenWorld())

	crash = llmtool.Read("crash", "Panic, to test recovery.",
		func(c *llmtool.ReadCtx, in struct{}) (statusOut, error) { panic("kaboom") })

	crashWrite = llmtool.Write("crash_write", "Insert a note, then panic.",
		func(c *llmtool.WriteCtx, in createIn) (statusOut, error) {
			if _, err := c.Exec("INSERT INTO notes (title, body) VALUES (?, ?)", in.Title, in.Body); err != nil {
				return statusOut{}, err
			}
			panic("kaboom after insert")
		})

	slowCount = llmtool.Read("slow_count", "Count to three, reporting progress and logging.",
		func(c *llmtool.ReadCtx, in struct{}) (statusOut, error) {
			c.Log(slog.LevelDebug, "starting")
			for i := 1; i <= 3; i++ {
				c.Progress(float64(i), 3, "counted")
			}
			c.Log(slog.LevelInfo, "counted to three")
			c.Log(slog.LevelWarn, "that was all")
			return statusOut{Status: "done"}, nil
		})

	askName = llmtool.Read("ask_name", "Ask the user for their name.",
		func(c *llmtool.ReadCtx, in struct{}) (answerOut, error) {
			res, err := ask.Elicit(c, ask.ElicitRequest{Message: "Who are you?", Schema: json.RawMessage(nameSchema)})
			if err != nil {
				return answerOut{Refusal: err.Error()}, nil
			}
			return answerOut{Action: res.Action, Answer: res.Content}, nil
		})

	askModel = llmtool.Read("ask_model", "Ask the client's model for a haiku.",
		func(c *llmtool.ReadCtx, in struct{}) (sampleOut, error) {
			res, err := ask.Sample(c, ask.SampleRequest{
				Messages:  []ask.SampleMessage{{Role: "user", Content: llmtool.TextContent("Write a haiku about SQLite.")}},
				MaxTokens: 50,
			})
			if err != nil {
				return sampleOut{Refusal: err.Error()}, nil
			}
			return sampleOut{Reply: res.Content.Text, Model: res.Model}, nil
		})

	// askInWrite inserts a note, then asks for its title: the insert of
	// the run that asks rolls back, and the run with the answer commits.
	askInWrite = llmtool.Write("ask_in_write", "Ask the user for a title, and create a note with it.",
		func(c *llmtool.WriteCtx, in struct{}) (noteOut, error) {
			out := noteOut{Body: "asked"}
			if err := c.QueryRow("INSERT INTO notes (title, body) VALUES ('', ?) RETURNING id", out.Body).Scan(&out.ID); err != nil {
				return out, err
			}
			res, err := ask.Elicit(&c.ReadCtx, ask.ElicitRequest{Key: "title", Message: "Title of the new note?", Schema: json.RawMessage(nameSchema)})
			if err != nil {
				return out, err
			}
			if out.Title, err = answerName(res); err != nil {
				return out, err
			}
			_, err = c.Exec("UPDATE notes SET title = ? WHERE id = ?", out.Title, out.ID)
			return out, err
		})

	// swallowAsk inserts a note and ignores the error of its question: the
	// run that asks still commits nothing.
	swallowAsk = llmtool.Write("swallow_ask", "Insert a note, then ask and ignore the error.",
		func(c *llmtool.WriteCtx, in struct{}) (statusOut, error) {
			if _, err := c.Exec("INSERT INTO notes (title, body) VALUES ('swallowed', '')"); err != nil {
				return statusOut{}, err
			}
			res, _ := ask.Elicit(&c.ReadCtx, ask.ElicitRequest{Message: "Anything?", Schema: json.RawMessage(nameSchema)})
			return statusOut{Status: "done " + res.Action}, nil
		})

	// askTwice asks for a name, then for a colour in a question that
	// uses the name: two rounds.
	askTwice = llmtool.Read("ask_twice", "Ask the user for a name, then for a colour.",
		func(c *llmtool.ReadCtx, in struct{}) (twiceOut, error) {
			var out twiceOut
			name, err := ask.Elicit(c, ask.ElicitRequest{Key: "name", Message: "Who are you?", Schema: json.RawMessage(nameSchema)})
			if err != nil {
				return out, err
			}
			if out.Name, err = answerName(name); err != nil {
				return out, err
			}
			colour, err := ask.Elicit(c, ask.ElicitRequest{Message: "Favourite colour, " + out.Name + "?", Schema: json.RawMessage(nameSchema)})
			if err != nil {
				return out, err
			}
			out.Colour, err = answerName(colour)
			return out, err
		})

	picture = llmtool.Read("picture", "Return a picture, a sound and a resource.",
		func(c *llmtool.ReadCtx, in struct{}) (llmtool.Rich, error) {
			return llmtool.Rich{Content: []llmtool.Content{
				llmtool.TextContent("A red pixel:"),
				llmtool.ImageContent([]byte("PNG"), "image/png"),
				llmtool.AudioContent([]byte("WAV"), "audio/wav"),
				llmtool.ResourceContent("notes://1", "text/plain", "Hello", nil),
				llmtool.ResourceContent("notes://1.bin", "application/octet-stream", "", []byte{1, 2}),
			}}, nil
		})

	whoami = llmtool.Read("whoami", "Say who calls, in which tenant.",
		func(c *llmtool.ReadCtx, in struct{}) (whoOut, error) {
			out := whoOut{Tenant: llmtool.TenantFrom(c)}
			if p := llmtool.PrincipalFrom(c); p != nil {
				out.Principal = p.ID
			}
			return out, nil
		})

	testTools = llmtool.DefineTools("notes", getNote, createNote, deleteNote, webLookup, crash, crashWrite,
		slowCount, askName, askModel, askInWrite, swallowAsk, askTwice, picture, whoami)
)

// fixture is a registry over a fresh SQLite file and an adapter serving it.
type fixture struct {
	db  *sql.DB
	reg *llmtool.Registry
	srv *mcpadapter.Server

	mu   sync.Mutex
	taps []func(audit.Record) // the audits recorders, fed by the registry's audit sink
}

// newFixture builds the fixture's registry and serves it with opts (nil
// for the defaults); the adapter's log is discarded unless opts set one.
func newFixture(t *testing.T, opts *mcpadapter.Options) *fixture {
	t.Helper()
	return newFixtureReg(t, nil, opts)
}

// newFixtureReg is newFixture with the registry's options too (nil for
// the defaults); its Logger and Audit are the fixture's.
func newFixtureReg(t *testing.T, regOpts *llmtool.Options, opts *mcpadapter.Options) *fixture {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "notes.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL DEFAULT '');
		INSERT INTO notes (id, title, body) VALUES (1, 'Hello', 'World')`)
	require.NoError(t, err)
	f := &fixture{db: db}
	logger := slog.New(slog.DiscardHandler)
	ro := llmtool.Options{}
	if regOpts != nil {
		ro = *regOpts
	}
	ro.Logger = logger
	ro.Audit = []audit.Sink{audit.Slog(logger), audit.Func(func(_ context.Context, rec audit.Record) {
		f.mu.Lock()
		taps := f.taps
		f.mu.Unlock()
		for _, tap := range taps {
			tap(rec)
		}
	})}
	reg, err := llmtool.NewRegistry(db, &ro, testTools)
	require.NoError(t, err)
	o := mcpadapter.Options{}
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	srv := mcpadapter.New(reg, &o)
	t.Cleanup(func() { srv.Close() })
	f.reg, f.srv = reg, srv
	return f
}

// audits starts recording the tool and outcome of each audit record; the
// function it returns stops and returns them.
func (f *fixture) audits() func() []string {
	var mu sync.Mutex
	var recs []string
	on := true
	f.mu.Lock()
	f.taps = append(f.taps[:len(f.taps):len(f.taps)], func(rec audit.Record) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			recs = append(recs, rec.Tool+" "+rec.Outcome)
		}
	})
	f.mu.Unlock()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		on = false
		return recs
	}
}

// noteCount counts the rows of the notes table.
func (f *fixture) noteCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.QueryRow("SELECT count(*) FROM notes").Scan(&n))
	return n
}

// notifications collects a client's notifications by method.
type notifications struct {
	ch chan mcp.JSONRPCNotification
}

func collect(c *client.Client) *notifications {
	n := &notifications{ch: make(chan mcp.JSONRPCNotification, 64)}
	c.OnNotification(func(m mcp.JSONRPCNotification) { n.ch <- m })
	return n
}

// next waits for the next notification of one of methods, skipping
// others.
func (n *notifications) next(t *testing.T, methods ...string) mcp.JSONRPCNotification {
	t.Helper()
	for {
		select {
		case m := <-n.ch:
			if slices.Contains(methods, m.Method) {
				return m
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s notification", strings.Join(methods, " or "))
		}
	}
}

// drain returns the notifications received so far.
func (n *notifications) drain() []mcp.JSONRPCNotification {
	var out []mcp.JSONRPCNotification
	for {
		select {
		case m := <-n.ch:
			out = append(out, m)
		default:
			return out
		}
	}
}

// handlers answer the server's sampling and elicitation requests.
type handlers struct{}

func (handlers) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	text := "no prompt"
	if len(req.Messages) > 0 {
		if tc, ok := req.Messages[0].Content.(mcp.TextContent); ok {
			text = tc.Text
		} else if m, ok := req.Messages[0].Content.(map[string]any); ok {
			text, _ = m["text"].(string)
		}
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.TextContent{Type: "text", Text: "haiku for: " + text}},
		Model:           "test-model",
		StopReason:      "endTurn",
	}, nil
}

func (handlers) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action:  mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"name": "Ada (asked: " + req.Params.Message + ")"},
	}}, nil
}

// start starts and initializes a client on the session-oriented protocol.
func start(t *testing.T, c *client.Client) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { c.Close() })
	_, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "test", Version: "1"},
	}})
	require.NoError(t, err)
}

func clientOptions() []client.ClientOption {
	return []client.ClientOption{
		client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION),
		client.WithSamplingHandler(handlers{}),
		client.WithElicitationHandler(handlers{}),
	}
}

// stdioClient serves f over in-process pipes with ServeStdio and returns a
// client of it. mcp-go has one stdio session per process, so tests using it
// must not run in parallel.
func stdioClient(t *testing.T, f *fixture) *client.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeStdio(ctx, serverIn, serverOut) }()
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		serverOut.Close()
		<-done
	})
	c := client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(nilReader{})), clientOptions()...)
	start(t, c)
	return c
}

type nilReader struct{}

func (nilReader) Read([]byte) (int, error) { return 0, io.EOF }

// call calls a tool and returns its result.
func call(t *testing.T, c *client.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	require.NoError(t, err)
	return res
}

// text returns the text of a result's only content block.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	return tc.Text
}

// structured returns a result's structuredContent as JSON.
func structured(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.RawStructuredContent) > 0 {
		return string(res.RawStructuredContent)
	}
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	return string(b)
}

// stdioWire is a raw client of ServeStdio over in-process pipes: it sends
// lines and reads every line the server writes. mcp-go has one stdio
// session per process, so tests using it must not run in parallel.
type stdioWire struct {
	in    io.Writer
	lines chan string // every line the server wrote, in order
}

// newStdioWire serves f with ServeStdio and initializes a session at
// revision 2025-11-25.
func newStdioWire(t *testing.T, f *fixture) *stdioWire {
	t.Helper()
	w := startStdioWire(t, f)
	var init struct{ Result json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(w.roundTrip(t, strings.Replace(initialize, `"id":1`, `"id":"init"`, 1))), &init))
	require.NotEmpty(t, init.Result)
	w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return w
}

// startStdioWire serves f with ServeStdio, without a handshake.
func startStdioWire(t *testing.T, f *fixture) *stdioWire {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeStdio(ctx, serverIn, serverOut) }()
	w := &stdioWire{in: clientOut, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(clientIn)
		sc.Buffer(nil, 1<<20)
		answered := false
		for sc.Scan() {
			if !answered && !bytes.Contains(sc.Bytes(), []byte(`"id"`)) {
				// Before the first response: what an earlier test's
				// ServeStdio left queued in mcp-go's one stdio session
				// (ServeStdio's documentation).
				continue
			}
			answered = true
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		serverOut.Close()
		<-done
	})
	return w
}

func (w *stdioWire) send(t *testing.T, msg string) {
	t.Helper()
	_, err := io.WriteString(w.in, msg+"\n")
	require.NoError(t, err)
}

// next returns the next line the server writes.
func (w *stdioWire) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-w.lines:
		require.True(t, ok, "the server closed its output")
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("no message from the server")
	}
	return ""
}

// roundTrip sends a request and returns the server's next line, which
// must be its response: nothing else may come first.
func (w *stdioWire) roundTrip(t *testing.T, msg string) string {
	t.Helper()
	w.send(t, msg)
	line := w.next(t)
	var m struct {
		ID     json.RawMessage
		Method string
	}
	require.NoError(t, json.Unmarshal([]byte(line), &m), line)
	require.Empty(t, m.Method, "a message before the response: %s", line)
	return line
}
