package main

import (
	"context"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	chatrun "github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/sqlite"
)

//go:embed web
var webFS embed.FS

var pages = template.Must(template.ParseFS(webFS, "web/*.html"))

// config is what main decided: where the data lives and which model the
// chat talks to.
type config struct {
	dir      string           // the databases' folder
	endpoint chatrun.Endpoint // the model's API
	label    string           // the model, as the page names it
	scripted bool             // the model is the built-in scripted one
	hosts    []string         // the names served besides the loopback ones and the listening address (-host)
	logger   *slog.Logger     // the registries' and MCP servers' log
}

// app is the web app: the app's database, a workspace per user, and the
// turns running now.
type app struct {
	cfg    *config
	store  *store
	ws     map[string]*workspace
	tokens map[string]string // MCP bearer token → user
	static http.Handler

	mu      sync.Mutex
	running map[int64]bool // conversations with a turn running

	// turnSaved, if set, is called when a turn's conversation is saved
	// (tests wait on it).
	turnSaved func(conversation int64)
}

func newApp(ctx context.Context, cfg *config) (*app, error) {
	db, err := sqlite.Open(filepath.Join(cfg.dir, "app.db"))
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	a := &app{cfg: cfg, store: st, ws: map[string]*workspace{}, tokens: map[string]string{}, running: map[int64]bool{}}
	sub, _ := fs.Sub(webFS, "web")
	a.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	fail := func(err error) (*app, error) {
		a.close()
		return nil, err
	}
	approvalKey, err := st.key(ctx, "approval")
	if err != nil {
		return fail(err)
	}
	for _, u := range users {
		k, err := st.key(ctx, "mcp-"+u)
		if err != nil {
			return fail(err)
		}
		token := hex.EncodeToString(k[:16])
		a.tokens[token] = u
		if a.ws[u], err = openWorkspace(ctx, cfg, u, token, approvalKey); err != nil {
			return fail(err)
		}
	}
	return a, nil
}

func (a *app) close() {
	for _, w := range a.ws {
		w.close()
	}
	_ = a.store.db.Close()
}

// mcpToken returns user's bearer token for /mcp.
func (a *app) mcpToken(user string) string {
	for t, u := range a.tokens {
		if u == user {
			return t
		}
	}
	return ""
}

// handler serves the page, its API and /mcp, behind guard.
func (a *app) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.index)
	mux.HandleFunc("POST /login", a.login)   // session.go
	mux.HandleFunc("POST /logout", a.logout) // session.go
	mux.Handle("GET /static/", a.static)
	mux.Handle("/mcp", http.HandlerFunc(a.serveMCP))

	api := func(pattern string, h func(http.ResponseWriter, *http.Request, *workspace)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			ws := a.workspaceOf(r)
			if ws == nil {
				httpError(w, http.StatusUnauthorized, "Sign in first.")
				return
			}
			if r.Method == http.MethodPost && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				// Forms of other sites cannot send JSON without asking first.
				httpError(w, http.StatusUnsupportedMediaType, "Send JSON (Content-Type: application/json).")
				return
			}
			h(w, r, ws)
		})
	}
	api("GET /api/tree", a.getTree)
	api("GET /api/notes/{id}", a.getNote)
	api("GET /api/events", a.events)
	api("GET /api/conversations", a.listConversations)
	api("POST /api/conversations", a.newConversation)
	api("GET /api/conversations/{id}", a.getConversation)
	api("POST /api/conversations/{id}/send", a.send)     // chat.go
	api("POST /api/conversations/{id}/answer", a.answer) // chat.go
	api("POST /api/conversations/{id}/undo", a.undo)     // chat.go
	return a.guard(mux)
}

func (a *app) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	ws := a.workspaceOf(r)
	if ws == nil {
		_ = pages.ExecuteTemplate(w, "login.html", map[string]any{"Users": users})
		return
	}
	_ = pages.ExecuteTemplate(w, "index.html", map[string]any{
		"User": ws.user, "Name": ws.principal.Name, "Model": a.cfg.label, "Scripted": a.cfg.scripted, "Phrasings": phrasings, "MaxMessage": maxMessage,
	})
}

// serveMCP serves MCP for the workspace whose bearer token the request
// carries; the workspace's server checks the token again, and answers 401
// to a request without a known one.
func (a *app) serveMCP(w http.ResponseWriter, r *http.Request) {
	_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	ws := a.ws[a.tokens[strings.TrimSpace(token)]]
	if ws == nil {
		ws = a.ws[users[0]]
	}
	ws.mcpHTTP.ServeHTTP(w, r)
}

func (a *app) getTree(w http.ResponseWriter, r *http.Request, ws *workspace) {
	t, err := ws.tree(r.Context())
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, t)
}

func (a *app) getNote(w http.ResponseWriter, r *http.Request, ws *workspace) {
	n, err := ws.note(r.Context(), r.PathValue("id"))
	if errors.Is(err, notes.ErrNotFound) {
		httpError(w, http.StatusNotFound, "No such note.")
		return
	}
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, n)
}

// events streams the workspace's changes to the page as server-sent
// events, so the tree and the open note follow what the chat, another tab
// or an MCP client changed.
func (a *app) events(w http.ResponseWriter, r *http.Request, ws *workspace) {
	sse, ok := startSSE(w)
	if !ok {
		return
	}
	changes, stop := ws.hub.subscribe()
	defer stop()
	sse.send("ready", map[string]string{"user": ws.user})
	for {
		select {
		case c := <-changes:
			if !sse.send("changed", c) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

func (a *app) listConversations(w http.ResponseWriter, r *http.Request, ws *workspace) {
	list, err := a.store.list(r.Context(), ws.user)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, list)
}

func (a *app) newConversation(w http.ResponseWriter, r *http.Request, ws *workspace) {
	c, err := a.store.create(r.Context(), ws.user, newTitle)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, summary{ID: c.ID, Title: c.Title})
}

// conversationOf loads the conversation the path names, the user's own.
func (a *app) conversationOf(w http.ResponseWriter, r *http.Request, ws *workspace) *conversation {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		httpError(w, http.StatusNotFound, "No such conversation.")
		return nil
	}
	c, err := a.store.get(r.Context(), ws.user, id)
	if errors.Is(err, errNoConversation) {
		httpError(w, http.StatusNotFound, "No such conversation.")
		return nil
	}
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return nil
	}
	return c
}

func (a *app) getConversation(w http.ResponseWriter, r *http.Request, ws *workspace) {
	c := a.conversationOf(w, r, ws)
	if c == nil {
		return
	}
	v := map[string]any{"id": c.ID, "title": c.Title, "log": orEmpty(c.Log), "pending": nil}
	if c.Paused != nil {
		var p struct {
			Turn struct {
				Calls []struct {
					Call struct {
						ID string `json:"id"`
					} `json:"call"`
				} `json:"calls"`
				At int `json:"at"`
			} `json:"turn"`
		}
		if json.Unmarshal(c.Paused, &p) == nil && p.Turn.At < len(p.Turn.Calls) {
			v["pending"] = p.Turn.Calls[p.Turn.At].Call.ID
		}
	}
	writeJSON(w, v)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// sse writes server-sent events.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) (*sse, bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	return s, s.rc.Flush() == nil
}

// send writes one event; false when the page is gone.
func (s *sse) send(event string, data any) bool {
	b, err := json.Marshal(data)
	if err != nil {
		return false
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return false
	}
	return s.rc.Flush() == nil
}

var (
	reBlock = regexp.MustCompile(`(?i)</?(p|div|h[1-6]|li|ul|ol|br|tr|blockquote|pre)\b[^>]*>`)
	reTag   = regexp.MustCompile(`<[^>]*>`)
	reLines = regexp.MustCompile(`\n\s*\n+`)
)

// plainText is a note's HTML as text: blocks on lines of their own, no
// tags, entities decoded. The page shows it as text, so a note's content
// never runs as markup in the page.
func plainText(s string) string {
	s = reBlock.ReplaceAllString(s, "\n")
	s = html.UnescapeString(reTag.ReplaceAllString(s, ""))
	return strings.TrimSpace(reLines.ReplaceAllString(s, "\n"))
}
