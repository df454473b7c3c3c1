package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The app's own database: each user's conversations, with the messages
// the model reads, the turn paused for approval (chatadapter's JSON of a
// paused Transcript), and the log the page draws the conversation from;
// the app's keys; and the sessions of signed-in people (session.go).

const schema = `
CREATE TABLE IF NOT EXISTS conversations (
	id       INTEGER PRIMARY KEY,
	user     TEXT NOT NULL,
	title    TEXT NOT NULL,
	messages TEXT NOT NULL DEFAULT '[]', -- the model's conversation, OpenAI Chat Completions messages
	paused   TEXT,                       -- the paused turn (json.Marshal of a run.Transcript), or NULL
	log      TEXT NOT NULL DEFAULT '[]', -- the page's items: messages, cards, answers
	notices  TEXT NOT NULL DEFAULT '[]', -- what the person did meanwhile (an undo), for the model's next request
	updated  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_user ON conversations (user, id);
CREATE TABLE IF NOT EXISTS app_keys (
	name TEXT PRIMARY KEY,
	key  BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
	digest  BLOB PRIMARY KEY, -- SHA-256 of the cookie's token
	user    TEXT NOT NULL,
	expires INTEGER NOT NULL  -- Unix seconds
);`

// errNoConversation is a conversation that does not exist or is another
// user's.
var errNoConversation = errors.New("no such conversation")

// conversation is one row of conversations.
type conversation struct {
	ID       int64
	User     string
	Title    string
	Messages []json.RawMessage
	Paused   []byte // nil when no turn waits
	Log      []json.RawMessage
	Notices  []string
}

// conversationID is the conversation's name in the notes' change history
// (llmtool.Call.Conversation).
func (c *conversation) conversationID() string { return fmt.Sprintf("chat-%d", c.ID) }

type store struct{ db *sql.DB }

func openStore(ctx context.Context, db *sql.DB) (*store, error) {
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return nil, fmt.Errorf("app database: %w", err)
	}
	return &store{db: db}, nil
}

// key returns the app's key called name, made of 32 random bytes the
// first time and kept, so that what it signs outlives a restart.
func (s *store) key(ctx context.Context, name string) ([]byte, error) {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails
	if _, err := s.db.ExecContext(ctx, `INSERT INTO app_keys (name, key) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, k); err != nil {
		return nil, fmt.Errorf("app key %s: %w", name, err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT key FROM app_keys WHERE name = ?`, name).Scan(&k); err != nil {
		return nil, fmt.Errorf("app key %s: %w", name, err)
	}
	return k, nil
}

func (s *store) create(ctx context.Context, user, title string) (*conversation, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO conversations (user, title, updated) VALUES (?, ?, ?)`, user, title, now())
	if err != nil {
		return nil, fmt.Errorf("new conversation: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	return &conversation{ID: id, User: user, Title: title}, nil
}

// get returns user's conversation id.
func (s *store) get(ctx context.Context, user string, id int64) (*conversation, error) {
	c := &conversation{ID: id, User: user}
	var msgs, log, notices string
	var paused sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT title, messages, paused, log, notices FROM conversations WHERE id = ? AND user = ?`, id, user).
		Scan(&c.Title, &msgs, &paused, &log, &notices)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoConversation
	}
	if err != nil {
		return nil, fmt.Errorf("conversation %d: %w", id, err)
	}
	if paused.Valid {
		c.Paused = []byte(paused.String)
	}
	for _, f := range []struct {
		s string
		v any
	}{{msgs, &c.Messages}, {log, &c.Log}, {notices, &c.Notices}} {
		if err := json.Unmarshal([]byte(f.s), f.v); err != nil {
			return nil, fmt.Errorf("conversation %d: %w", id, err)
		}
	}
	return c, nil
}

// save writes c back.
func (s *store) save(ctx context.Context, c *conversation) error {
	msgs, _ := json.Marshal(orEmpty(c.Messages))
	log, _ := json.Marshal(orEmpty(c.Log))
	notices, _ := json.Marshal(append([]string{}, c.Notices...))
	var paused any
	if c.Paused != nil {
		paused = string(c.Paused)
	}
	_, err := s.db.ExecContext(ctx, `UPDATE conversations SET title = ?, messages = ?, paused = ?, log = ?, notices = ?, updated = ? WHERE id = ? AND user = ?`,
		c.Title, string(msgs), paused, string(log), string(notices), now(), c.ID, c.User)
	if err != nil {
		return fmt.Errorf("save conversation %d: %w", c.ID, err)
	}
	return nil
}

// summary is a conversation in the list.
type summary struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
}

// list returns user's conversations, newest first.
func (s *store) list(ctx context.Context, user string) ([]summary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, title FROM conversations WHERE user = ? ORDER BY id DESC`, user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []summary{}
	for rows.Next() {
		var c summary
		if err := rows.Scan(&c.ID, &c.Title); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func orEmpty(m []json.RawMessage) []json.RawMessage {
	if m == nil {
		return []json.RawMessage{}
	}
	return m
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }
