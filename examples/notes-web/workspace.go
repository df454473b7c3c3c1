package main

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	chatrun "github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/mcpadapter"
)

// A workspace is one user's notes: a note store of their own (a SQLite
// file each), the registry over it with changesets on, the chat's
// adapter and runner, and the MCP server for the same registry. So what
// one user sees, the other cannot: their notes are not in the same
// database. Every call runs as the user (llmtool.WithPrincipal) in the
// tenant named after them, where write tools are on and destructive ones
// (delete_note, delete_attribute) need the person's approval.

// systemPrompt tells the model what it works on.
const systemPrompt = `You help the user with their notes, kept in a tree. Use the tools to read and change them. ` +
	`The top of the tree is the note "root"; find notes by title with find_note, or list them with get_child_notes. ` +
	`Every change you make can be undone with undo_changes. Answer briefly.`

type workspace struct {
	user      string
	principal *llmtool.Principal
	db        *sql.DB
	reg       *llmtool.Registry
	runner    *chatrun.Runner
	mcp       *mcpadapter.Server
	mcpHTTP   http.Handler
	hub       *hub
}

func openWorkspace(ctx context.Context, cfg *config, user, mcpToken string, approvalKey []byte) (*workspace, error) {
	db, err := notes.Open(ctx, filepath.Join(cfg.dir, "notes-"+user+".db"))
	if err != nil {
		return nil, err
	}
	w := &workspace{user: user, db: db, hub: newHub(), principal: &llmtool.Principal{ID: user, Name: displayName(user)}}
	w.reg, err = llmtool.NewRegistry(db, &llmtool.Options{
		Logger:      cfg.logger,
		Changesets:  notes.Changesets,
		ApprovalKey: approvalKey, // kept in the app's database: a paused turn resumes after a restart
		Middleware:  []llmtool.Middleware{w.hub.middleware},
	}, notes.Tools)
	if err != nil {
		db.Close()
		return nil, err
	}
	ctx = llmtool.WithTenant(ctx, user)
	if err := w.reg.Tenants().SetWrites(ctx, user, true); err != nil {
		w.close()
		return nil, err
	}
	if err := w.reg.Tenants().SetApproval(ctx, user, "", true); err != nil { // "": every destructive tool
		w.close()
		return nil, err
	}
	w.runner, err = chatrun.New(chatadapter.New(w.reg, nil), cfg.endpoint, &chatrun.Options{Stream: true, System: systemPrompt})
	if err != nil {
		w.close()
		return nil, err
	}
	w.mcp = mcpadapter.New(w.reg, &mcpadapter.Options{
		Name:         "notes-web",
		Tenant:       user,
		Logger:       cfg.logger,
		AllowedHosts: cfg.hosts,
		MaxBodyBytes: maxBody,
		Authenticator: mcpadapter.BearerAuth(func(_ context.Context, token string) (*llmtool.Principal, error) {
			if subtle.ConstantTimeCompare([]byte(token), []byte(mcpToken)) != 1 {
				return nil, errors.New("unknown token")
			}
			return w.principal, nil
		}),
	})
	w.mcpHTTP = w.mcp.Handler()
	return w, nil
}

// as returns ctx with the user as the principal, in their tenant.
func (w *workspace) as(ctx context.Context) context.Context {
	return llmtool.WithPrincipal(llmtool.WithTenant(ctx, w.user), w.principal)
}

func (w *workspace) close() {
	if w.mcp != nil {
		_ = w.mcp.Close()
	}
	if w.reg != nil {
		_ = w.reg.Close()
	}
	_ = w.db.Close()
}

func displayName(user string) string { return strings.ToUpper(user[:1]) + user[1:] }

// A hub tells the workspace's open pages that the notes changed: a
// registry middleware sees every call, whoever makes it (the chat, the
// page's Undo, an MCP client), and reports each write that committed a
// change.

// change is what a page learns of a committed write.
type change struct {
	Tool      string `json:"tool"`
	Changeset int64  `json:"changeset"`
	// Via is "chat" for the chat's calls and the page's Undo, "mcp" for an
	// MCP client's.
	Via string `json:"via"`
}

type hub struct {
	mu   sync.Mutex
	subs map[chan change]struct{}
}

func newHub() *hub { return &hub{subs: map[chan change]struct{}{}} }

func (h *hub) middleware(next llmtool.InvokeFunc) llmtool.InvokeFunc {
	return func(ctx context.Context, req *llmtool.Request) llmtool.Result {
		res := next(ctx, req)
		if !res.IsError && res.Changeset != nil && res.Changeset.ID != 0 {
			via := "mcp"
			if strings.HasPrefix(req.Call.Conversation, conversationPrefix) {
				via = "chat"
			}
			h.publish(change{Tool: req.Spec.Name, Changeset: res.Changeset.ID, Via: via})
		}
		return res
	}
}

// subscribe returns a channel of changes and the function that ends it.
func (h *hub) subscribe() (<-chan change, func()) {
	c := make(chan change, 16)
	h.mu.Lock()
	h.subs[c] = struct{}{}
	h.mu.Unlock()
	return c, func() {
		h.mu.Lock()
		delete(h.subs, c)
		h.mu.Unlock()
	}
}

// publish tells every page; one that is behind misses the change, which
// is fine: it reloads the tree on the next one, or on any it already has.
func (h *hub) publish(c change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s <- c:
		default:
		}
	}
}

// tree is the workspace's note tree, for the page.
func (w *workspace) tree(ctx context.Context) (*notes.TreeNode, error) {
	return notes.Subtree(ctx, w.db, notes.RootID, 4, 100)
}

// noteView is a note as the page shows it.
type noteView struct {
	ID          string   `json:"noteId"`
	Title       string   `json:"title"`
	Type        string   `json:"type"`
	IsProtected bool     `json:"isProtected"`
	Text        string   `json:"text"` // the content as plain text; "" for a protected note
	Parents     []string `json:"parents"`
	Modified    string   `json:"modified"`
}

func (w *workspace) note(ctx context.Context, id string) (*noteView, error) {
	n, err := notes.GetNote(ctx, w.db, id)
	if err != nil {
		return nil, err
	}
	v := &noteView{ID: n.ID, Title: n.Title, Type: n.Type, IsProtected: n.IsProtected, Modified: n.DateModified, Parents: []string{}}
	for _, p := range n.Parents {
		v.Parents = append(v.Parents, p.Title)
	}
	if n.IsProtected {
		return v, nil // the page shows it is there, never what it says
	}
	html, err := notes.GetContent(ctx, w.db, id)
	if err != nil {
		return nil, fmt.Errorf("note %s: %w", id, err)
	}
	v.Text = plainText(html)
	return v, nil
}

// logger is the registry's: warnings only, since an audit line per call
// would drown the one line the command prints.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(logOutput, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
