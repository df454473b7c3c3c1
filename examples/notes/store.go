// Package notes is the data layer of a hierarchical note store
// (Trilium-like model) kept in a SQLite or a PostgreSQL database.
//
// The model:
//
//   - a note (table notes) has a title, a type, a MIME type and content;
//   - a branch (table branches) places a note under a parent note; a note can
//     have several parents (clones), the tree is rooted at the note "root",
//     which has no branch;
//   - an attribute (table attributes) is a label (#name=value) or a relation
//     (~name=targetNoteId) attached to a note;
//   - a revision (table revisions) is a copy of a note's title and content
//     saved before the content is overwritten;
//   - a full-text index covers titles and contents: on SQLite the FTS5 table
//     notes_fts, kept in sync by triggers; on PostgreSQL the generated
//     tsvector column notes.fts with a GIN index (see [Migrate]).
//
// Deletion is soft (isDeleted=1). Deleted notes, branches and attributes are
// invisible to every read function of this package.
//
// Every function takes a [context.Context] and a [Queryer] (read functions)
// or an [Execer] (write functions), so it works with a *sql.DB, a *sql.Tx or
// any other type with the same methods. Write functions that issue several
// statements run them in a transaction when given a value that can begin one
// (a value with a BeginTx method, such as *sql.DB or *sql.Conn); given
// anything else (a *sql.Tx, or the *llmtool.WriteCtx of a write tool, whose
// statements run in the call's transaction) they simply use it and leave
// commit and rollback to the caller.
//
// # Engines
//
// The store runs on SQLite (modernc.org/sqlite, driver "sqlite") and on
// PostgreSQL (pgx, driver "pgx"); [Open] opens either. Its SQL is one text
// for both wherever possible: $N placeholders, which both drivers bind by
// position; integer 0/1 flags, so that isDeleted = 0 reads the same on both;
// a column named rowid on PostgreSQL where SQLite's implicit rowid orders
// rows by age. Only the schema ([Migrate]) and full-text search ([Search])
// differ by engine, and so does one detail of write transactions: on
// PostgreSQL a write function that runs several statements first takes a
// transaction-level advisory lock, so that store writes are serialized as
// SQLite serializes them (positions of new children, cycle checks and
// attribute upserts read then write).
//
// A function that needs the engine asks the value it was given, without
// ever running a query to find out (on PostgreSQL a failing query would
// abort the caller's transaction):
//
//   - a value with an Engine() string method (llmtool's *llmtool.ReadCtx and
//     *llmtool.WriteCtx, or the result of [OnEngine]) reports it:
//     [EngineSQLite] or [EnginePostgres];
//   - a *sql.DB is told by its driver (db.Driver() is *stdlib.Driver for
//     pgx, *sqlite.Driver for modernc.org/sqlite), a *sql.Conn by its
//     driver connection (through Raw); any other driver is an error;
//   - anything else, a *sql.Tx in particular, cannot tell: it is taken to be
//     on SQLite, the store's original engine, so existing SQLite callers
//     keep working. On PostgreSQL wrap such a value with [OnEngine]; unwrapped,
//     [Migrate] and [Search] fail there with an error that says so (the
//     other functions need no engine), and the advisory lock is not taken.
//
// That last case is an assumption rather than an error on purpose. llmtool's
// contexts, the values tools pass, report their engine, so inside a tool
// nothing is assumed; what is left is chiefly a caller's own *sql.Tx, whose
// driver database/sql does not reveal, and the write functions are made to
// run in such a transaction on either engine (they need the engine only for
// the advisory lock). An error there would break those callers on SQLite and
// PostgreSQL alike, for the sake of Migrate and Search, which already fail
// on PostgreSQL with the hint above.
//
// The functions of this package do no policy checks (system notes, protected
// notes, ...): callers are expected to enforce them. They only guard the
// structural integrity of the store (existence of the notes involved, no
// cycles in the tree, attribute ownership).
package notes

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"modernc.org/sqlite"             // registers the "sqlite" database/sql driver
)

// Queryer is what read functions need; *sql.DB, *sql.Tx and llmtool's read
// context satisfy it.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Execer is what write functions need.
type Execer interface {
	Queryer
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// The engines the store runs on, as an Engine method reports them (see
// "Engines" in the package documentation).
const (
	// EngineSQLite is SQLite, through modernc.org/sqlite.
	EngineSQLite = "sqlite"
	// EnginePostgres is PostgreSQL, through pgx's database/sql driver.
	EnginePostgres = "postgres"
)

// OnEngine returns db with an Engine method reporting engine
// ([EngineSQLite] or [EnginePostgres]), for a value that cannot tell its
// engine itself, chiefly a *sql.Tx on PostgreSQL:
//
//	tx, err := db.BeginTx(ctx, nil)
//	...
//	hits, err := notes.Search(ctx, notes.OnEngine(tx, notes.EnginePostgres), "flour", "", 0)
//
// The result has no BeginTx method, so write functions use it as the
// caller's transaction, as they use a *sql.Tx.
func OnEngine(db Execer, engine string) Execer { return onEngine{db, engine} }

// onEngine is the result of OnEngine.
type onEngine struct {
	Execer
	engine string
}

// Engine reports the engine given to OnEngine.
func (e onEngine) Engine() string { return e.engine }

// engineOf tells the engine q runs on, without running a query (see
// "Engines" in the package documentation). known is false when q cannot
// tell and SQLite is assumed (not an error: see there why). A value that
// reports an engine other than the two, or a *sql.DB or *sql.Conn on
// another driver, is an error.
func engineOf(q Queryer) (engine string, known bool, err error) {
	switch v := q.(type) {
	case interface{ Engine() string }:
		switch e := v.Engine(); e {
		case EngineSQLite, EnginePostgres:
			return e, true, nil
		default:
			return "", false, fmt.Errorf("%T reports engine %q, not %q or %q: %w", q, e, EngineSQLite, EnginePostgres, ErrInvalidArgument)
		}
	case *sql.DB:
		return driverEngine(v.Driver())
	case *sql.Conn:
		err := v.Raw(func(dc any) error {
			engine, known, err = driverEngine(dc)
			return err
		})
		if err != nil {
			return "", false, fmt.Errorf("tell the engine of a *sql.Conn: %w", err)
		}
		return engine, known, nil
	}
	return EngineSQLite, false, nil
}

// driverEngine tells the engine of a database/sql driver (from
// sql.DB.Driver) or driver connection (from sql.Conn.Raw).
func driverEngine(d any) (string, bool, error) {
	switch d.(type) {
	case *stdlib.Driver, *stdlib.Conn:
		return EnginePostgres, true, nil
	case *sqlite.Driver, sqlite.FileControl: // FileControl: modernc's connection type is unexported
		return EngineSQLite, true, nil
	}
	return "", false, fmt.Errorf("unsupported database driver %T: the note store runs on modernc.org/sqlite or pgx: %w", d, ErrInvalidArgument)
}

// assumedHint is appended to the errors of Migrate and Search when the
// engine of q was assumed, in case q is on PostgreSQL.
func assumedHint(q Queryer, known bool) string {
	if known {
		return ""
	}
	return fmt.Sprintf(" (the engine of %T cannot be told, SQLite was assumed: on PostgreSQL wrap it with notes.OnEngine)", q)
}

// Sentinel errors. Errors returned by this package wrap them with %w, so test
// them with [errors.Is].
var (
	// ErrNotFound reports a note, parent link or attribute that does not
	// exist or is deleted.
	ErrNotFound = errors.New("not found")
	// ErrInvalidArgument reports an argument that is empty or malformed
	// (empty title, unknown note type, bad attribute name, ...).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrCycle reports a move or clone that would place a note under itself
	// or under one of its own descendants.
	ErrCycle = errors.New("would create a cycle in the note tree")
	// ErrConflict reports a write that clashes with the current state, such
	// as cloning a note under a parent it is already a child of.
	ErrConflict = errors.New("conflict")
	// ErrNotOwned reports an attribute that exists but belongs to another
	// note than the one given.
	ErrNotOwned = errors.New("attribute belongs to another note")
)

// Identifiers of the system notes created by [Seed].
const (
	// RootID is the ID of the root of the note tree. It has no parent.
	RootID = "root"
	// HiddenID is the ID of the hidden subtree (a child of root).
	HiddenID = "_hidden"
	// ShareID is the ID of the shared subtree (a child of root).
	ShareID = "_share"
	// LaunchBarRootID is the ID of the launch bar's root (a child of
	// _hidden).
	LaunchBarRootID = "_lbRoot"
	// GlobalNoteMapID is the ID of the global note map (a child of
	// _hidden).
	GlobalNoteMapID = "_globalNoteMap"
)

// Note types. Any type accepted by [ValidNoteType] can be stored; these are
// the common ones.
const (
	TypeText = "text" // rich text, HTML content (the default)
	TypeCode = "code" // source code or plain text
	TypeBook = "book" // a container note whose children are shown as a book
)

// Attribute types.
const (
	// AttributeLabel is a label: #name or #name=value.
	AttributeLabel = "label"
	// AttributeRelation is a relation: ~name=targetNoteId. Its value is the
	// ID of an existing note.
	AttributeRelation = "relation"
)

// Revision sources, recorded with each revision by [SetContent]. Any
// non-empty string is accepted.
const (
	// SourceModel marks a revision saved before an overwrite made by an LLM.
	SourceModel = "model"
	// SourceUser marks a revision saved before an overwrite made by a human.
	SourceUser = "user"
)

// Search limits, see [Search].
const (
	// DefaultSearchLimit is used when Search is given a limit <= 0.
	DefaultSearchLimit = 20
	// MaxSearchLimit caps the number of results of Search.
	MaxSearchLimit = 200
)

// IDLength is the length of generated note, branch, attribute and revision
// IDs.
const IDLength = 12

// positionStep is the gap between the positions of consecutive siblings.
const positionStep = 10

// timeLayout formats dates as ISO-8601 UTC with millisecond precision.
const timeLayout = "2006-01-02T15:04:05.000Z"

// NoteRef identifies a note by ID and title, e.g. in parent and child lists.
type NoteRef struct {
	ID    string `json:"noteId"`
	Title string `json:"title"`
}

// NoteAttribute is a label or relation attached to a note.
type NoteAttribute struct {
	ID       string `json:"attributeId"`
	NoteID   string `json:"noteId"`
	Type     string `json:"type"` // AttributeLabel or AttributeRelation
	Name     string `json:"name"`
	Value    string `json:"value"`
	Position int    `json:"position"`
}

// Note is the metadata of a note (everything but its content), with its
// parents, children and attributes.
type Note struct {
	ID           string          `json:"noteId"`
	Title        string          `json:"title"`
	Type         string          `json:"type"`
	Mime         string          `json:"mime"`
	IsProtected  bool            `json:"isProtected"`
	DateCreated  string          `json:"dateCreated"`  // ISO-8601 UTC
	DateModified string          `json:"dateModified"` // ISO-8601 UTC
	Parents      []NoteRef       `json:"parents"`      // oldest placement first
	Children     []NoteRef       `json:"children"`     // in position order
	Attributes   []NoteAttribute `json:"attributes"`   // in position order
}

// TreeNode is a node of the nested structure returned by [Subtree].
type TreeNode struct {
	ID    string `json:"noteId"`
	Title string `json:"title"`
	Type  string `json:"type"`
	// IsProtected marks a protected note: its title is listed, its
	// content must not be shown.
	IsProtected bool `json:"isProtected,omitempty"`
	// ChildCount is the total number of (non-deleted) children of the note,
	// whether or not they are listed in Children.
	ChildCount int `json:"childCount"`
	// Truncated is true when some children are not listed in Children,
	// because of the depth or the per-level limit.
	Truncated bool       `json:"truncated,omitempty"`
	Children  []TreeNode `json:"children,omitempty"`
}

// SearchResult is one hit of [Search].
type SearchResult struct {
	ID          string `json:"noteId"`
	Title       string `json:"title"`
	Snippet     string `json:"snippet"` // matched terms are wrapped in **
	IsProtected bool   `json:"isProtected"`
}

// Revision is a saved copy of a note's title and content.
type Revision struct {
	ID          string `json:"revisionId"`
	NoteID      string `json:"noteId"`
	Title       string `json:"title"`
	Content     string `json:"content"`
	Source      string `json:"source"`
	DateCreated string `json:"dateCreated"` // ISO-8601 UTC
}

// IsSystem reports whether id is one of the system notes: root, _hidden,
// _share, _lbRoot and _globalNoteMap, Trilium's PROTECTED_SYSTEM_NOTES
// (packages/trilium-core/src/services/llm/tools/helpers.ts), the notes its
// LLM tools must not delete, move or clone. The tools of this package are
// stricter: a write tool changes a system note in no way.
func IsSystem(id string) bool {
	switch id {
	case RootID, HiddenID, ShareID, LaunchBarRootID, GlobalNoteMapID:
		return true
	}
	return false
}

// ValidNoteType reports whether t is a note type the store accepts.
func ValidNoteType(t string) bool {
	switch t {
	case TypeText, TypeCode, TypeBook, "mermaid", "canvas", "mindMap", "file",
		"image", "search", "relationMap", "render", "webView", "noteMap", "doc":
		return true
	}
	return false
}

// defaultMime returns the MIME type given to new notes of type t.
func defaultMime(t string) string {
	switch t {
	case TypeText, TypeBook:
		return "text/html"
	case TypeCode:
		return "text/plain"
	case "mermaid":
		return "text/mermaid"
	case "canvas", "mindMap", "relationMap":
		return "application/json"
	}
	return ""
}

// ---------------------------------------------------------------------------
// Opening, schema and seed data

// Open opens the note store at path (creating it if needed), runs [Migrate]
// and [Seed], and returns a *sql.DB ready for use.
//
// A path starting with postgres:// or postgresql:// is a PostgreSQL
// connection URL, opened with pgx (driver "pgx"): the database must exist,
// and [Migrate] needs the unaccent extension (see there). Any other path is
// the file of a SQLite database, opened with the modernc.org/sqlite driver in
// WAL mode with foreign keys on, a 5 s busy timeout and IMMEDIATE
// transactions. Errors name the file, or the URL without its password and
// query.
func Open(ctx context.Context, path string) (*sql.DB, error) {
	if path == "" {
		return nil, fmt.Errorf("open note store: empty path: %w", ErrInvalidArgument)
	}
	var (
		db   *sql.DB
		name = fmt.Sprintf("%q", path)
		err  error
	)
	if IsPostgresURL(path) {
		u, perr := url.Parse(path)
		if perr != nil {
			// url.Error repeats the URL, password included: keep only
			// its cause.
			var ue *url.Error
			if errors.As(perr, &ue) {
				perr = ue.Err
			}
			return nil, fmt.Errorf("open note store: bad PostgreSQL URL (%w): %w", perr, ErrInvalidArgument)
		}
		u.RawQuery, u.Fragment = "", ""
		name = fmt.Sprintf("%q", u.Redacted())
		db, err = sql.Open("pgx", path)
		if err == nil {
			// database/sql keeps two idle connections by default: under
			// load a server would open a PostgreSQL session for most
			// calls. Keep enough for the registry's reserved reads and
			// a burst of concurrent writes.
			db.SetMaxIdleConns(16)
		}
	} else {
		if strings.ContainsRune(path, '?') {
			return nil, fmt.Errorf("open note store %s: path must not contain '?': %w", name, ErrInvalidArgument)
		}
		db, err = sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate")
	}
	if err != nil {
		return nil, fmt.Errorf("open note store %s: %w", name, err)
	}
	if err := Migrate(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open note store %s: %w", name, err)
	}
	if err := Seed(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open note store %s: %w", name, err)
	}
	return db, nil
}

// IsPostgresURL reports whether path, as given to [Open], names a
// PostgreSQL database: it starts with postgres:// or postgresql://.
func IsPostgresURL(path string) bool {
	return strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://")
}

// sqliteSchema is the list of idempotent DDL statements run by Migrate on
// SQLite.
var sqliteSchema = []string{
	`CREATE TABLE IF NOT EXISTS notes (
		noteId       TEXT PRIMARY KEY NOT NULL,
		title        TEXT NOT NULL DEFAULT '',
		type         TEXT NOT NULL DEFAULT 'text',
		mime         TEXT NOT NULL DEFAULT '',
		content      TEXT NOT NULL DEFAULT '',
		isProtected  INTEGER NOT NULL DEFAULT 0,
		isDeleted    INTEGER NOT NULL DEFAULT 0,
		dateCreated  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
		dateModified TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
	)`,
	`CREATE TABLE IF NOT EXISTS branches (
		branchId     TEXT PRIMARY KEY NOT NULL,
		noteId       TEXT NOT NULL REFERENCES notes(noteId),
		parentNoteId TEXT NOT NULL REFERENCES notes(noteId),
		position     INTEGER NOT NULL DEFAULT 0,
		isDeleted    INTEGER NOT NULL DEFAULT 0
	)`,
	`CREATE INDEX IF NOT EXISTS branches_noteId ON branches(noteId)`,
	`CREATE INDEX IF NOT EXISTS branches_parentNoteId ON branches(parentNoteId, position)`,
	// At most one live placement of a note under a given parent.
	`CREATE UNIQUE INDEX IF NOT EXISTS branches_live_unique
		ON branches(noteId, parentNoteId) WHERE isDeleted = 0`,
	`CREATE TABLE IF NOT EXISTS attributes (
		attributeId TEXT PRIMARY KEY NOT NULL,
		noteId      TEXT NOT NULL REFERENCES notes(noteId),
		type        TEXT NOT NULL CHECK (type IN ('label', 'relation')),
		name        TEXT NOT NULL,
		value       TEXT NOT NULL DEFAULT '',
		position    INTEGER NOT NULL DEFAULT 0,
		isDeleted   INTEGER NOT NULL DEFAULT 0
	)`,
	`CREATE INDEX IF NOT EXISTS attributes_noteId ON attributes(noteId)`,
	// SetAttribute upserts by (noteId, type, name).
	`CREATE UNIQUE INDEX IF NOT EXISTS attributes_live_unique
		ON attributes(noteId, type, name) WHERE isDeleted = 0`,
	`CREATE TABLE IF NOT EXISTS revisions (
		revisionId  TEXT PRIMARY KEY NOT NULL,
		noteId      TEXT NOT NULL REFERENCES notes(noteId),
		title       TEXT NOT NULL DEFAULT '',
		content     TEXT NOT NULL DEFAULT '',
		source      TEXT NOT NULL DEFAULT '',
		dateCreated TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
	)`,
	`CREATE INDEX IF NOT EXISTS revisions_noteId ON revisions(noteId, dateCreated)`,
	// Full-text index. Only live notes are indexed. The content of protected
	// notes is not indexed (only their title), so that search snippets never
	// expose protected content.
	`CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(
		noteId UNINDEXED, title, content, tokenize = 'unicode61 remove_diacritics 2'
	)`,
	`CREATE TRIGGER IF NOT EXISTS notes_fts_ai AFTER INSERT ON notes WHEN new.isDeleted = 0 BEGIN
		INSERT INTO notes_fts(noteId, title, content)
		VALUES (new.noteId, new.title, CASE WHEN new.isProtected THEN '' ELSE new.content END);
	END`,
	`CREATE TRIGGER IF NOT EXISTS notes_fts_au AFTER UPDATE OF noteId, title, content, isProtected, isDeleted ON notes BEGIN
		DELETE FROM notes_fts WHERE noteId = old.noteId;
		INSERT INTO notes_fts(noteId, title, content)
		SELECT new.noteId, new.title, CASE WHEN new.isProtected THEN '' ELSE new.content END
		WHERE new.isDeleted = 0;
	END`,
	`CREATE TRIGGER IF NOT EXISTS notes_fts_ad AFTER DELETE ON notes BEGIN
		DELETE FROM notes_fts WHERE noteId = old.noteId;
	END`,
}

// pgNow is PostgreSQL's default for date columns, the current time in the
// store's format (timeLayout), as SQLite's strftime default gives it.
const pgNow = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

// pgSchema is the list of idempotent DDL statements run by Migrate on
// PostgreSQL. It mirrors sqliteSchema, with these differences:
//
//   - text columns use the "C" collation, so that ORDER BY compares bytes as
//     SQLite's default BINARY collation does, whatever the database's locale;
//   - branches and revisions have an identity column named rowid, the
//     counterpart of SQLite's implicit rowid, so that ORDER BY rowid (oldest
//     first) is the same SQL on both engines;
//   - full-text search is the generated column notes.fts (NULL for deleted
//     notes; the content of protected notes left out) with a GIN index,
//     built with the text search configuration notes_fts: PostgreSQL's
//     'simple' configuration (no stemming, no stop words: words match
//     literally, as with FTS5's unicode61 tokenizer) preceded by the
//     unaccent dictionary (FTS5's remove_diacritics). The text is passed
//     through pgFTSText first, so that words split where FTS5 splits them.
var pgSchema = []string{
	`CREATE EXTENSION IF NOT EXISTS unaccent`,
	`DO $$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_ts_config
			WHERE cfgname = 'notes_fts' AND cfgnamespace = to_regnamespace(current_schema())) THEN
			CREATE TEXT SEARCH CONFIGURATION notes_fts (COPY = pg_catalog.simple);
			ALTER TEXT SEARCH CONFIGURATION notes_fts
				ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword,
					hword_asciipart, hword_part, hword_numpart
				WITH unaccent, simple;
		END IF;
	END $$`,
	`CREATE TABLE IF NOT EXISTS notes (
		noteId       TEXT COLLATE "C" PRIMARY KEY NOT NULL,
		title        TEXT COLLATE "C" NOT NULL DEFAULT '',
		type         TEXT COLLATE "C" NOT NULL DEFAULT 'text',
		mime         TEXT COLLATE "C" NOT NULL DEFAULT '',
		content      TEXT COLLATE "C" NOT NULL DEFAULT '',
		isProtected  INTEGER NOT NULL DEFAULT 0,
		isDeleted    INTEGER NOT NULL DEFAULT 0,
		dateCreated  TEXT COLLATE "C" NOT NULL DEFAULT ` + pgNow + `,
		dateModified TEXT COLLATE "C" NOT NULL DEFAULT ` + pgNow + `,
		fts          tsvector GENERATED ALWAYS AS (CASE WHEN isDeleted = 0 THEN
			to_tsvector('notes_fts', ` + pgFTSText("title") + `) ||
			to_tsvector('notes_fts', CASE WHEN isProtected = 0 THEN ` + pgFTSText("content") + ` ELSE '' END)
		END) STORED
	)`,
	`CREATE INDEX IF NOT EXISTS notes_fts_gin ON notes USING GIN (fts)`,
	`CREATE TABLE IF NOT EXISTS branches (
		rowid        BIGINT GENERATED ALWAYS AS IDENTITY,
		branchId     TEXT COLLATE "C" PRIMARY KEY NOT NULL,
		noteId       TEXT COLLATE "C" NOT NULL REFERENCES notes(noteId),
		parentNoteId TEXT COLLATE "C" NOT NULL REFERENCES notes(noteId),
		position     INTEGER NOT NULL DEFAULT 0,
		isDeleted    INTEGER NOT NULL DEFAULT 0
	)`,
	`CREATE INDEX IF NOT EXISTS branches_noteId ON branches(noteId)`,
	`CREATE INDEX IF NOT EXISTS branches_parentNoteId ON branches(parentNoteId, position)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS branches_live_unique
		ON branches(noteId, parentNoteId) WHERE isDeleted = 0`,
	`CREATE TABLE IF NOT EXISTS attributes (
		attributeId TEXT COLLATE "C" PRIMARY KEY NOT NULL,
		noteId      TEXT COLLATE "C" NOT NULL REFERENCES notes(noteId),
		type        TEXT COLLATE "C" NOT NULL CHECK (type IN ('label', 'relation')),
		name        TEXT COLLATE "C" NOT NULL,
		value       TEXT COLLATE "C" NOT NULL DEFAULT '',
		position    INTEGER NOT NULL DEFAULT 0,
		isDeleted   INTEGER NOT NULL DEFAULT 0
	)`,
	`CREATE INDEX IF NOT EXISTS attributes_noteId ON attributes(noteId)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS attributes_live_unique
		ON attributes(noteId, type, name) WHERE isDeleted = 0`,
	`CREATE TABLE IF NOT EXISTS revisions (
		rowid       BIGINT GENERATED ALWAYS AS IDENTITY,
		revisionId  TEXT COLLATE "C" PRIMARY KEY NOT NULL,
		noteId      TEXT COLLATE "C" NOT NULL REFERENCES notes(noteId),
		title       TEXT COLLATE "C" NOT NULL DEFAULT '',
		content     TEXT COLLATE "C" NOT NULL DEFAULT '',
		source      TEXT COLLATE "C" NOT NULL DEFAULT '',
		dateCreated TEXT COLLATE "C" NOT NULL DEFAULT ` + pgNow + `
	)`,
	`CREATE INDEX IF NOT EXISTS revisions_noteId ON revisions(noteId, dateCreated)`,
}

// asciiPunct is the ASCII punctuation. FTS5's unicode61 tokenizer splits
// words at every character that is not a letter or a digit; PostgreSQL's
// text search parser keeps some of them inside tokens (e-mail addresses,
// URLs, file names, hyphenated words, signed numbers, HTML tags). Turning
// them into spaces, in the indexed text (pgFTSText) and in query words
// (tsQuery) alike, makes it split where FTS5 does.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// pgFTSText returns the SQL expression of column col with its ASCII
// punctuation turned into spaces, the text PostgreSQL's index is built from.
func pgFTSText(col string) string {
	return "translate(" + col + ", '" + strings.ReplaceAll(asciiPunct, "'", "''") + "', '" +
		strings.Repeat(" ", len(asciiPunct)) + "')"
}

// pgMissingUnaccent tells whether the server lacks the unaccent extension,
// which is part of PostgreSQL's contrib modules.
const pgMissingUnaccent = `SELECT NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'unaccent')`

// Migrate creates the tables, indexes and full-text index of the store if
// they do not exist yet. It is idempotent.
//
// On SQLite the full-text index is an FTS5 table kept in sync by triggers.
// On PostgreSQL it is a generated tsvector column with a GIN index and the
// text search configuration notes_fts, which needs the unaccent extension:
// Migrate creates it (CREATE EXTENSION IF NOT EXISTS unaccent), which the
// server allows to a role with the CREATE privilege on the database, and
// fails with a clear error when the server does not have it (it is in
// PostgreSQL's contrib modules).
func Migrate(ctx context.Context, db Execer) error {
	engine, known, err := engineOf(db)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	schema := sqliteSchema
	if engine == EnginePostgres {
		schema = pgSchema
	}
	return inTx(ctx, db, func(tx Execer) error {
		if engine == EnginePostgres {
			var missing bool
			if err := tx.QueryRowContext(ctx, pgMissingUnaccent).Scan(&missing); err != nil {
				return fmt.Errorf("migrate: look for the unaccent extension: %w", err)
			}
			if missing {
				return fmt.Errorf("migrate: the PostgreSQL server lacks the unaccent extension (contrib), which full-text search needs: %w", errors.ErrUnsupported)
			}
		}
		for _, stmt := range schema {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate: %w%s", err, assumedHint(db, known))
			}
		}
		return nil
	})
}

type seedNote struct {
	id, parent, title, typ, content string
	protected                       bool
}

type seedAttr struct {
	id, noteID, typ, name, value string
}

// seedNotes are created by Seed, parents before children, in position order.
var seedNotes = []seedNote{
	{id: RootID, title: "root", typ: TypeText},
	{id: "projects", parent: RootID, title: "Projects", typ: TypeBook,
		content: "<p>Everything we are currently working on.</p>"},
	{id: "roadmap", parent: "projects", title: "Roadmap", typ: TypeText,
		content: "<h2>Q3 roadmap</h2><ul><li>Ship the offline sync engine</li>" +
			"<li>Migrate the search index to FTS5</li><li>Write the plugin API documentation</li></ul>"},
	{id: "meetings", parent: "projects", title: "Meeting notes", typ: TypeText,
		content: "<p>Weekly sync, Monday: we agreed to freeze the plugin API before the beta. " +
			"Alice owns the sync engine, Bob the documentation.</p>"},
	{id: "recipes", parent: RootID, title: "Recipes", typ: TypeBook,
		content: "<p>Things worth cooking again.</p>"},
	{id: "pancakes", parent: "recipes", title: "Pancakes", typ: TypeText,
		content: "<p>Whisk 250 g flour, 2 eggs, 500 ml milk and a pinch of salt. " +
			"Rest the batter for 30 minutes, then fry thin pancakes in a hot buttered pan.</p>"},
	{id: "secret", parent: RootID, title: "Secret", typ: TypeText, protected: true,
		content: "<p>The vault combination is 12-34-56.</p>"},
	{id: HiddenID, parent: RootID, title: "Hidden Notes", typ: TypeText},
	{id: ShareID, parent: RootID, title: "Shared Notes", typ: TypeText},
	{id: LaunchBarRootID, parent: HiddenID, title: "Launch Bar", typ: TypeText},
	{id: GlobalNoteMapID, parent: HiddenID, title: "Note Map", typ: "noteMap"},
}

// seedAttrs are created by Seed.
var seedAttrs = []seedAttr{
	{id: "attrTodo", noteID: "roadmap", typ: AttributeLabel, name: "todo"},
	{id: "attrPriority", noteID: "roadmap", typ: AttributeLabel, name: "priority", value: "high"},
	{id: "attrCuisine", noteID: "pancakes", typ: AttributeLabel, name: "cuisine", value: "french"},
	{id: "attrRelated", noteID: "meetings", typ: AttributeRelation, name: "relatedTo", value: "roadmap"},
}

// Seed fills an empty store (no row in notes, deleted ones included) with the
// system notes (root; _hidden and _share under it; _lbRoot and
// _globalNoteMap under _hidden) and a few sample notes, labels and a
// relation, plus one protected note ("secret"). It does nothing when the
// notes table is not empty. Seed notes have stable, readable IDs: root,
// _hidden, _share, _lbRoot, _globalNoteMap, projects, roadmap, meetings,
// recipes, pancakes, secret.
func Seed(ctx context.Context, db Execer) error {
	return inTx(ctx, db, func(tx Execer) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM notes`).Scan(&n); err != nil {
			return fmt.Errorf("seed: count notes: %w", err)
		}
		if n > 0 {
			return nil
		}
		now := nowString()
		positions := map[string]int{}
		for _, sn := range seedNotes {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO notes (noteId, title, type, mime, content, isProtected, isDeleted, dateCreated, dateModified)
				 VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8)`,
				sn.id, sn.title, sn.typ, defaultMime(sn.typ), sn.content, boolInt(sn.protected), now, now); err != nil {
				return fmt.Errorf("seed: insert note %q: %w", sn.id, err)
			}
			if sn.parent == "" {
				continue
			}
			positions[sn.parent] += positionStep
			branchID := sn.parent + "_" + sn.id
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO branches (branchId, noteId, parentNoteId, position, isDeleted) VALUES ($1, $2, $3, $4, 0)`,
				branchID, sn.id, sn.parent, positions[sn.parent]); err != nil {
				return fmt.Errorf("seed: insert branch %q: %w", branchID, err)
			}
		}
		attrPositions := map[string]int{}
		for _, sa := range seedAttrs {
			attrPositions[sa.noteID] += positionStep
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO attributes (attributeId, noteId, type, name, value, position, isDeleted) VALUES ($1, $2, $3, $4, $5, $6, 0)`,
				sa.id, sa.noteID, sa.typ, sa.name, sa.value, attrPositions[sa.noteID]); err != nil {
				return fmt.Errorf("seed: insert attribute %q: %w", sa.id, err)
			}
		}
		return nil
	})
}

// ---------------------------------------------------------------------------
// Read functions

// Exists reports whether a non-deleted note with the given ID exists.
func Exists(ctx context.Context, q Queryer, id string) (bool, error) {
	var ok bool
	err := q.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM notes WHERE noteId = $1 AND isDeleted = 0)`, id).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check note %q exists: %w", id, err)
	}
	return ok, nil
}

// IsProtected reports whether the note is protected. It returns an error
// wrapping [ErrNotFound] if the note does not exist.
func IsProtected(ctx context.Context, q Queryer, id string) (bool, error) {
	var p bool
	err := q.QueryRowContext(ctx,
		`SELECT isProtected FROM notes WHERE noteId = $1 AND isDeleted = 0`, id).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return false, notFound(id)
	}
	if err != nil {
		return false, fmt.Errorf("read note %q: %w", id, err)
	}
	return p, nil
}

// IsDescendant reports whether candidate is a strict descendant of ancestor
// (through any of its parents). A note is not its own descendant. It returns
// false if either note does not exist.
func IsDescendant(ctx context.Context, q Queryer, candidate, ancestor string) (bool, error) {
	if candidate == ancestor {
		return false, nil
	}
	var ok bool
	err := q.QueryRowContext(ctx, `
		WITH RECURSIVE anc(id) AS (
			SELECT b.parentNoteId FROM branches b
			JOIN notes n ON n.noteId = b.noteId AND n.isDeleted = 0
			WHERE b.noteId = $1 AND b.isDeleted = 0
			UNION
			SELECT b.parentNoteId FROM branches b
			JOIN anc ON b.noteId = anc.id
			WHERE b.isDeleted = 0
		)
		SELECT EXISTS (
			SELECT 1 FROM anc JOIN notes n ON n.noteId = anc.id AND n.isDeleted = 0
			WHERE anc.id = $2
		)`, candidate, ancestor).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check whether %q is under %q: %w", candidate, ancestor, err)
	}
	return ok, nil
}

// ProtectedDescendant returns the ID of a protected strict descendant of
// note id (through any of its placements), or "" if it has none. Callers
// use it to refuse deleting a subtree that holds protected notes.
func ProtectedDescendant(ctx context.Context, q Queryer, id string) (string, error) {
	var found string
	err := q.QueryRowContext(ctx, `
		WITH RECURSIVE sub(id) AS (
			SELECT b.noteId FROM branches b
			JOIN notes n ON n.noteId = b.noteId AND n.isDeleted = 0
			WHERE b.parentNoteId = $1 AND b.isDeleted = 0
			UNION
			SELECT b.noteId FROM branches b
			JOIN sub ON b.parentNoteId = sub.id
			JOIN notes n ON n.noteId = b.noteId AND n.isDeleted = 0
			WHERE b.isDeleted = 0
		)
		SELECT n.noteId FROM sub JOIN notes n ON n.noteId = sub.id
		WHERE n.isProtected = 1 AND n.noteId <> $1
		ORDER BY n.noteId LIMIT 1`, id).Scan(&found)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look for protected notes under %q: %w", id, err)
	}
	return found, nil
}

// GetNote returns the metadata of a note (not its content; see [GetContent])
// with its parents, children and attributes. It returns an error wrapping
// [ErrNotFound] if the note does not exist.
func GetNote(ctx context.Context, q Queryer, id string) (*Note, error) {
	n := &Note{ID: id}
	err := q.QueryRowContext(ctx, `
		SELECT title, type, mime, isProtected, dateCreated, dateModified
		FROM notes WHERE noteId = $1 AND isDeleted = 0`, id).
		Scan(&n.Title, &n.Type, &n.Mime, &n.IsProtected, &n.DateCreated, &n.DateModified)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("read note %q: %w", id, err)
	}
	if n.Parents, err = queryRefs(ctx, q, `
		SELECT p.noteId, p.title FROM branches b
		JOIN notes p ON p.noteId = b.parentNoteId AND p.isDeleted = 0
		WHERE b.noteId = $1 AND b.isDeleted = 0
		ORDER BY b.rowid`, id); err != nil {
		return nil, fmt.Errorf("read parents of note %q: %w", id, err)
	}
	if n.Children, err = children(ctx, q, id); err != nil {
		return nil, err
	}
	if n.Attributes, err = attributes(ctx, q, id); err != nil {
		return nil, err
	}
	return n, nil
}

// GetContent returns the content of a note. It returns an error wrapping
// [ErrNotFound] if the note does not exist.
func GetContent(ctx context.Context, q Queryer, id string) (string, error) {
	var c string
	err := q.QueryRowContext(ctx,
		`SELECT content FROM notes WHERE noteId = $1 AND isDeleted = 0`, id).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound(id)
	}
	if err != nil {
		return "", fmt.Errorf("read content of note %q: %w", id, err)
	}
	return c, nil
}

// Children returns the children of a note in position order. It returns an
// error wrapping [ErrNotFound] if the note does not exist.
func Children(ctx context.Context, q Queryer, id string) ([]NoteRef, error) {
	if err := mustExist(ctx, q, id); err != nil {
		return nil, err
	}
	return children(ctx, q, id)
}

func children(ctx context.Context, q Queryer, id string) ([]NoteRef, error) {
	refs, err := queryRefs(ctx, q, `
		SELECT n.noteId, n.title FROM branches b
		JOIN notes n ON n.noteId = b.noteId AND n.isDeleted = 0
		WHERE b.parentNoteId = $1 AND b.isDeleted = 0
		ORDER BY b.position, n.title, b.branchId`, id)
	if err != nil {
		return nil, fmt.Errorf("read children of note %q: %w", id, err)
	}
	return refs, nil
}

// Subtree returns the note id and its descendants down to depth levels
// (depth 0 returns the note alone, depth 1 adds its children, ...), listing
// at most maxChildrenPerLevel children under each note (<= 0: no limit).
// Nodes whose children were cut have Truncated set; ChildCount always holds
// the full number of children. A note cloned at several places appears at
// each of them. It returns an error wrapping [ErrNotFound] if the note does
// not exist and [ErrInvalidArgument] if depth is negative.
func Subtree(ctx context.Context, q Queryer, id string, depth, maxChildrenPerLevel int) (*TreeNode, error) {
	if depth < 0 {
		return nil, fmt.Errorf("subtree of note %q: negative depth %d: %w", id, depth, ErrInvalidArgument)
	}
	root := &TreeNode{ID: id}
	err := q.QueryRowContext(ctx, `
		SELECT n.title, n.type, n.isProtected, (
			SELECT COUNT(*) FROM branches cb
			JOIN notes cn ON cn.noteId = cb.noteId AND cn.isDeleted = 0
			WHERE cb.parentNoteId = n.noteId AND cb.isDeleted = 0)
		FROM notes n WHERE n.noteId = $1 AND n.isDeleted = 0`, id).
		Scan(&root.Title, &root.Type, &root.IsProtected, &root.ChildCount)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("read note %q: %w", id, err)
	}
	limit := int64(maxChildrenPerLevel)
	if limit <= 0 {
		// No limit: LIMIT -1 is SQLite's, LIMIT ALL PostgreSQL's, this
		// is both's.
		limit = math.MaxInt64
	}
	if err := fillSubtree(ctx, q, root, depth, limit, map[string]bool{}); err != nil {
		return nil, fmt.Errorf("subtree of note %q: %w", id, err)
	}
	return root, nil
}

// fillSubtree loads the children of node down to depth levels. onPath holds
// the IDs of the ancestors of node in this walk, as a guard against cycles.
func fillSubtree(ctx context.Context, q Queryer, node *TreeNode, depth int, limit int64, onPath map[string]bool) error {
	if node.ChildCount == 0 {
		return nil
	}
	if depth == 0 || onPath[node.ID] {
		node.Truncated = true
		return nil
	}
	rows, err := q.QueryContext(ctx, `
		SELECT n.noteId, n.title, n.type, n.isProtected, (
			SELECT COUNT(*) FROM branches cb
			JOIN notes cn ON cn.noteId = cb.noteId AND cn.isDeleted = 0
			WHERE cb.parentNoteId = n.noteId AND cb.isDeleted = 0)
		FROM branches b
		JOIN notes n ON n.noteId = b.noteId AND n.isDeleted = 0
		WHERE b.parentNoteId = $1 AND b.isDeleted = 0
		ORDER BY b.position, n.title, b.branchId
		LIMIT $2`, node.ID, limit)
	if err != nil {
		return fmt.Errorf("read children of note %q: %w", node.ID, err)
	}
	var kids []TreeNode
	for rows.Next() {
		var k TreeNode
		if err := rows.Scan(&k.ID, &k.Title, &k.Type, &k.IsProtected, &k.ChildCount); err != nil {
			_ = rows.Close()
			return fmt.Errorf("read children of note %q: %w", node.ID, err)
		}
		kids = append(kids, k)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read children of note %q: %w", node.ID, err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read children of note %q: %w", node.ID, err)
	}
	node.Truncated = len(kids) < node.ChildCount
	onPath[node.ID] = true
	defer delete(onPath, node.ID)
	for i := range kids {
		if err := fillSubtree(ctx, q, &kids[i], depth-1, limit, onPath); err != nil {
			return err
		}
	}
	node.Children = kids
	return nil
}

// Search runs a full-text search over the titles and contents of notes and
// returns at most limit hits (<= 0: [DefaultSearchLimit], capped at
// [MaxSearchLimit]), best first (ties by note ID).
//
// The query is split on white space and each word is matched literally
// (search operators and quotes in it have no special meaning), all words
// being required; case and diacritics are ignored; a word ending in '*' is a
// prefix search. So any user input is safe to pass. A word holding
// punctuation ("12-34", "main.go") matches its parts in a row. If ancestorID
// is not empty only strict descendants of that note are searched, and an
// error wrapping [ErrNotFound] is returned if it does not exist. A query with
// no searchable word returns an error wrapping [ErrInvalidArgument].
//
// The content of protected notes is not indexed: they can only be found by
// title, and their snippet is empty. Other snippets are a short extract of
// the content (of the title when only the title matches) with the matched
// words wrapped in **.
//
// On SQLite this is FTS5 (MATCH, snippet, ranking by bm25); on PostgreSQL
// its own text search (to_tsquery, ts_headline, ranking by ts_rank). Both
// find the same notes. The order of hits may differ, and so do snippets,
// though both mark cut text with "…": FTS5 keeps HTML tags and trailing
// punctuation; PostgreSQL drops them, picks a slightly different extract
// (16 words, tags not counted), and highlights the parts of a match joined
// by punctuation one by one ("**offline**-**sync**"), or not at all inside
// an e-mail address, a file name or a dashed number (which its parser reads
// as one token).
func Search(ctx context.Context, q Queryer, query, ancestorID string, limit int) ([]SearchResult, error) {
	engine, known, err := engineOf(q)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	dialect, match := sqliteSearch, ""
	if engine == EnginePostgres {
		dialect = pgSearch
		match, err = tsQuery(query)
	} else {
		match, err = ftsQuery(query)
	}
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)

	stmt, args := dialect.head+dialect.tail, []any{match, limit}
	if ancestorID != "" {
		if err := mustExist(ctx, q, ancestorID); err != nil {
			return nil, fmt.Errorf("search under %q: %w", ancestorID, err)
		}
		// The first term reads the ID from notes, not from $3, so that
		// its type (and collation, on PostgreSQL) is the column's.
		stmt = `
			WITH RECURSIVE sub(id) AS (
				SELECT noteId FROM notes WHERE noteId = $3
				UNION
				SELECT b.noteId FROM branches b
				JOIN sub ON b.parentNoteId = sub.id
				WHERE b.isDeleted = 0
			)` + dialect.head + `
			  AND n.noteId IN (SELECT id FROM sub WHERE id <> $3)` + dialect.tail
		args = append(args, ancestorID)
	}
	rows, err := q.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w%s", query, err, assumedHint(q, known))
	}
	defer func() { _ = rows.Close() }()
	res := []SearchResult{}
	for rows.Next() {
		var r SearchResult
		if err := rows.Scan(&r.ID, &r.Title, &r.IsProtected, &r.Snippet); err != nil {
			return nil, fmt.Errorf("search %q: %w", query, err)
		}
		res = append(res, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search %q: %w%s", query, err, assumedHint(q, known))
	}
	return res, nil
}

// searchSQL is the statement of Search on one engine: head ends with the
// WHERE clause, to which the ancestor filter is appended (AND ...), and tail
// holds ORDER BY and LIMIT. $1 is the match expression (ftsQuery or
// tsQuery), $2 the limit.
type searchSQL struct{ head, tail string }

var sqliteSearch = searchSQL{
	head: `
		SELECT n.noteId, n.title, n.isProtected,
			CASE WHEN n.isProtected <> 0 THEN '' ELSE snippet(notes_fts, -1, '**', '**', '…', 16) END
		FROM notes_fts
		JOIN notes n ON n.noteId = notes_fts.noteId AND n.isDeleted = 0
		WHERE notes_fts MATCH $1`,
	tail: `
		ORDER BY notes_fts.rank, n.noteId
		LIMIT $2`,
}

// pgSearch picks the hits in a subquery (its WHERE clause ends head), then
// makes the snippets of these hits only (ts_headline is costly), in three
// steps joined laterally: src, the text to extract from (the content when it
// matches, else the title; NULL for a protected note, hence no snippet); hl,
// ts_headline's extract of it (one fragment of about 16 words, as FTS5's
// snippet, with the white space left by dropped HTML tags collapsed); cut,
// the words of src and of the extract, to tell whether the extract starts or
// ends src, and mark it with "…" where it does not, as FTS5 does.
var pgSearch = searchSQL{
	head: `
		SELECT hit.noteId, hit.title, hit.isProtected, COALESCE(
			CASE WHEN starts_with(cut.text, cut.extract) THEN '' ELSE '…' END || hl.snippet ||
			CASE WHEN right(cut.text, length(cut.extract)) = cut.extract THEN '' ELSE '…' END, '')
		FROM (
			SELECT n.noteId, n.title, n.isProtected, n.content,
				ts_rank(n.fts, to_tsquery('notes_fts', $1)) AS rank
			FROM notes n
			WHERE n.isDeleted = 0 AND n.fts @@ to_tsquery('notes_fts', $1)`,
	tail: `
			ORDER BY rank DESC, n.noteId
			LIMIT $2
		) hit
		CROSS JOIN LATERAL (SELECT CASE
			WHEN hit.isProtected <> 0 THEN NULL
			WHEN to_tsvector('notes_fts', ` + pgFTSText("hit.content") + `) @@ to_tsquery('notes_fts', $1) THEN hit.content
			ELSE hit.title END AS text) src
		CROSS JOIN LATERAL (SELECT btrim(regexp_replace(
			ts_headline('notes_fts', src.text, to_tsquery('notes_fts', $1),
				'StartSel=**, StopSel=**, MaxFragments=1, MaxWords=16, MinWords=8, ShortWord=0'),
			'\s+', ' ', 'g')) AS snippet) hl
		CROSS JOIN LATERAL (SELECT
			` + pgWords(`regexp_replace(src.text, '<[^>]*>', ' ', 'g')`) + ` AS text,
			` + pgWords(`replace(hl.snippet, '**', '')`) + ` AS extract) cut
		ORDER BY hit.rank DESC, hit.noteId`,
}

// pgWords returns the SQL expression of the words of text expression x:
// ASCII punctuation dropped, white space collapsed.
func pgWords(x string) string {
	return `btrim(regexp_replace(` + pgFTSText(x) + `, '\s+', ' ', 'g'))`
}

// ftsQuery turns free user input into a safe FTS5 MATCH expression: every
// white-space separated word becomes a quoted string (inner quotes doubled),
// so FTS5 operators and syntax characters lose their meaning; a trailing '*'
// is kept outside the quotes as a prefix marker. Words are implicitly ANDed.
func ftsQuery(query string) (string, error) {
	var terms []string
	for _, w := range strings.Fields(query) {
		prefix := strings.HasSuffix(w, "*")
		w = strings.TrimRight(w, "*")
		if !hasWordChar(w) {
			// Pure punctuation produces no token: an empty phrase, which
			// would match nothing and makes FTS5 prefix queries fail.
			continue
		}
		t := `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
		if prefix {
			t += "*"
		}
		terms = append(terms, t)
	}
	if len(terms) == 0 {
		return "", fmt.Errorf("no searchable word in query: %w", ErrInvalidArgument)
	}
	return strings.Join(terms, " "), nil
}

// tsQuery turns free user input into a safe PostgreSQL to_tsquery
// expression, the counterpart of ftsQuery: every white-space separated word
// becomes a quoted operand with its ASCII punctuation and control
// characters turned into spaces (so no quote or backslash is left in it,
// and PostgreSQL's parser splits it as it splits the indexed text, see
// pgFTSText; several parts make a phrase, as in FTS5); a trailing '*'
// becomes the prefix marker ":*". Words are ANDed.
func tsQuery(query string) (string, error) {
	var terms []string
	for _, w := range strings.Fields(query) {
		prefix := strings.HasSuffix(w, "*")
		w = strings.TrimRight(w, "*")
		if !hasWordChar(w) {
			continue
		}
		w = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
			if r < 0x80 && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
				return ' '
			}
			return r
		}, w)), " ")
		t := "'" + w + "'"
		if prefix {
			t += ":*"
		}
		terms = append(terms, t)
	}
	if len(terms) == 0 {
		return "", fmt.Errorf("no searchable word in query: %w", ErrInvalidArgument)
	}
	return strings.Join(terms, " & "), nil
}

// hasWordChar reports whether s holds a letter or digit (something the
// unicode61 tokenizer turns into a token).
func hasWordChar(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			return true
		}
	}
	return false
}

// Attributes returns the attributes of a note in position order. It returns
// an error wrapping [ErrNotFound] if the note does not exist.
func Attributes(ctx context.Context, q Queryer, noteID string) ([]NoteAttribute, error) {
	if err := mustExist(ctx, q, noteID); err != nil {
		return nil, err
	}
	return attributes(ctx, q, noteID)
}

func attributes(ctx context.Context, q Queryer, noteID string) ([]NoteAttribute, error) {
	rows, err := q.QueryContext(ctx, `
		SELECT attributeId, noteId, type, name, value, position FROM attributes
		WHERE noteId = $1 AND isDeleted = 0
		ORDER BY position, name, type, attributeId`, noteID)
	if err != nil {
		return nil, fmt.Errorf("read attributes of note %q: %w", noteID, err)
	}
	defer func() { _ = rows.Close() }()
	attrs := []NoteAttribute{}
	for rows.Next() {
		var a NoteAttribute
		if err := rows.Scan(&a.ID, &a.NoteID, &a.Type, &a.Name, &a.Value, &a.Position); err != nil {
			return nil, fmt.Errorf("read attributes of note %q: %w", noteID, err)
		}
		attrs = append(attrs, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read attributes of note %q: %w", noteID, err)
	}
	return attrs, nil
}

// Attribute returns the attribute called name of a note. If the note has
// both a label and a relation with that name, the label is returned. It
// returns an error wrapping [ErrNotFound] if the note or the attribute does
// not exist.
func Attribute(ctx context.Context, q Queryer, noteID, name string) (*NoteAttribute, error) {
	if err := mustExist(ctx, q, noteID); err != nil {
		return nil, err
	}
	a := &NoteAttribute{}
	err := q.QueryRowContext(ctx, `
		SELECT attributeId, noteId, type, name, value, position FROM attributes
		WHERE noteId = $1 AND name = $2 AND isDeleted = 0
		ORDER BY type, position LIMIT 1`, noteID, name).
		Scan(&a.ID, &a.NoteID, &a.Type, &a.Name, &a.Value, &a.Position)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("attribute %q of note %q: %w", name, noteID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read attribute %q of note %q: %w", name, noteID, err)
	}
	return a, nil
}

// IDsWithPrefix returns the IDs of live notes that start with prefix, in
// byte order, at most limit of them (none for limit <= 0), for completing
// a note ID a person types. The comparison is exact: case matters, and
// '%' and '_' are ordinary characters. Protected and system notes are
// listed like any other; callers filter them.
//
// The query is a range over the primary key (prefix <= noteId < the
// prefix with its last character incremented), the same SQL on both
// engines: SQLite's BINARY collation and PostgreSQL's "C" collation of
// noteId (see [Migrate]) both compare bytes, so the range holds exactly the
// IDs with the prefix.
func IDsWithPrefix(ctx context.Context, q Queryer, prefix string, limit int) ([]string, error) {
	if limit <= 0 {
		return []string{}, nil
	}
	var (
		ids []string
		err error
	)
	if end, ok := prefixEnd(prefix); ok {
		ids, err = queryStrings(ctx, q, `
			SELECT noteId FROM notes WHERE noteId >= $1 AND noteId < $2 AND isDeleted = 0
			ORDER BY noteId LIMIT $3`, prefix, end, limit)
	} else {
		// No upper bound: the empty prefix, or one ending in the last
		// code point. Filter the tail here.
		ids, err = queryStrings(ctx, q, `
			SELECT noteId FROM notes WHERE noteId >= $1 AND isDeleted = 0
			ORDER BY noteId LIMIT $2`, prefix, limit)
		ids = slices.DeleteFunc(ids, func(id string) bool { return !strings.HasPrefix(id, prefix) })
	}
	if err != nil {
		return nil, fmt.Errorf("list note IDs starting with %q: %w", prefix, err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// prefixEnd returns the least string above every string that starts with
// prefix, in byte order: prefix with its last code point incremented
// (skipping the surrogates, which UTF-8 cannot encode). ok is false for
// the empty prefix and for one that ends in utf8.MaxRune or is not valid
// UTF-8.
func prefixEnd(prefix string) (end string, ok bool) {
	r, size := utf8.DecodeLastRuneInString(prefix)
	if size == 0 || r == utf8.RuneError || r == utf8.MaxRune || !utf8.ValidString(prefix) {
		return "", false
	}
	r++
	if r >= 0xD800 && r <= 0xDFFF {
		r = 0xE000
	}
	return prefix[:len(prefix)-size] + string(r), true
}

// Revisions returns the saved revisions of a note, newest first. It returns
// an error wrapping [ErrNotFound] if the note does not exist.
func Revisions(ctx context.Context, q Queryer, noteID string) ([]Revision, error) {
	if err := mustExist(ctx, q, noteID); err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `
		SELECT revisionId, noteId, title, content, source, dateCreated FROM revisions
		WHERE noteId = $1 ORDER BY dateCreated DESC, rowid DESC`, noteID)
	if err != nil {
		return nil, fmt.Errorf("read revisions of note %q: %w", noteID, err)
	}
	defer func() { _ = rows.Close() }()
	revs := []Revision{}
	for rows.Next() {
		var r Revision
		if err := rows.Scan(&r.ID, &r.NoteID, &r.Title, &r.Content, &r.Source, &r.DateCreated); err != nil {
			return nil, fmt.Errorf("read revisions of note %q: %w", noteID, err)
		}
		revs = append(revs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read revisions of note %q: %w", noteID, err)
	}
	return revs, nil
}

// ---------------------------------------------------------------------------
// Write functions

// CreateNote creates a note of type typ ("" means [TypeText]) under parentID,
// appended after the parent's existing children, and returns it. The new note
// gets a random ID of [IDLength] alphanumeric characters. It returns an error
// wrapping [ErrNotFound] if the parent does not exist and
// [ErrInvalidArgument] if the title is blank or the type unknown.
func CreateNote(ctx context.Context, db Execer, parentID, title, typ, content string) (*Note, error) {
	if strings.TrimSpace(title) == "" {
		return nil, fmt.Errorf("create note: empty title: %w", ErrInvalidArgument)
	}
	if typ == "" {
		typ = TypeText
	}
	if !ValidNoteType(typ) {
		return nil, fmt.Errorf("create note: unknown note type %q: %w", typ, ErrInvalidArgument)
	}
	var note *Note
	err := inTx(ctx, db, func(tx Execer) error {
		if err := mustExist(ctx, tx, parentID); err != nil {
			return fmt.Errorf("create note under %q: parent: %w", parentID, err)
		}
		id, err := NewID()
		if err != nil {
			return fmt.Errorf("create note: %w", err)
		}
		now := nowString()
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO notes (noteId, title, type, mime, content, isProtected, isDeleted, dateCreated, dateModified)
			VALUES ($1, $2, $3, $4, $5, 0, 0, $6, $7)`,
			id, title, typ, defaultMime(typ), content, now, now); err != nil {
			return fmt.Errorf("create note %q: %w", title, err)
		}
		if err := addBranch(ctx, tx, id, parentID); err != nil {
			return fmt.Errorf("create note %q: %w", title, err)
		}
		note, err = GetNote(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return note, nil
}

// Rename changes the title of a note. It returns an error wrapping
// [ErrNotFound] if the note does not exist and [ErrInvalidArgument] if the
// title is blank.
func Rename(ctx context.Context, db Execer, id, title string) error {
	if strings.TrimSpace(title) == "" {
		return fmt.Errorf("rename note %q: empty title: %w", id, ErrInvalidArgument)
	}
	res, err := db.ExecContext(ctx,
		`UPDATE notes SET title = $1, dateModified = $2 WHERE noteId = $3 AND isDeleted = 0`,
		title, nowString(), id)
	if err != nil {
		return fmt.Errorf("rename note %q: %w", id, err)
	}
	return checkAffected(res, id)
}

// SetContent replaces the content of a note. Before the overwrite it saves a
// revision of the note's current title and content, recording source (e.g.
// [SourceModel]). Setting the content it already has is a no-op (no
// revision). It returns an error wrapping [ErrNotFound] if the note does not
// exist.
func SetContent(ctx context.Context, db Execer, id, content, source string) error {
	return inTx(ctx, db, func(tx Execer) error {
		var title, old string
		err := tx.QueryRowContext(ctx,
			`SELECT title, content FROM notes WHERE noteId = $1 AND isDeleted = 0`, id).Scan(&title, &old)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("set content: %w", notFound(id))
		}
		if err != nil {
			return fmt.Errorf("set content of note %q: %w", id, err)
		}
		if old == content {
			return nil
		}
		revID, err := NewID()
		if err != nil {
			return fmt.Errorf("set content of note %q: %w", id, err)
		}
		now := nowString()
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO revisions (revisionId, noteId, title, content, source, dateCreated)
			VALUES ($1, $2, $3, $4, $5, $6)`, revID, id, title, old, source, now); err != nil {
			return fmt.Errorf("save revision of note %q: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx,
			`UPDATE notes SET content = $1, dateModified = $2 WHERE noteId = $3`, content, now, id); err != nil {
			return fmt.Errorf("set content of note %q: %w", id, err)
		}
		return nil
	})
}

// AppendContent appends text to the content of a note, as is (add any
// separator such as a newline or an HTML paragraph to text yourself). No
// revision is saved, since nothing is overwritten. It returns an error
// wrapping [ErrNotFound] if the note does not exist.
func AppendContent(ctx context.Context, db Execer, id, text string) error {
	res, err := db.ExecContext(ctx,
		`UPDATE notes SET content = content || $1, dateModified = $2 WHERE noteId = $3 AND isDeleted = 0`,
		text, nowString(), id)
	if err != nil {
		return fmt.Errorf("append to note %q: %w", id, err)
	}
	return checkAffected(res, id)
}

// DeleteNote soft-deletes a note: it marks the note, all its branches (all
// its placements in the tree) and its attributes as deleted, as well as the
// relations of other notes pointing to it. Children left without any parent
// are deleted the same way, recursively; children that have another parent
// survive there. It returns the IDs of all the notes deleted, id first.
// It returns an error wrapping [ErrNotFound] if the note does not exist and
// [ErrInvalidArgument] for the root note.
func DeleteNote(ctx context.Context, db Execer, id string) ([]string, error) {
	if id == RootID {
		return nil, fmt.Errorf("delete note %q: the root note cannot be deleted: %w", id, ErrInvalidArgument)
	}
	var deleted []string
	err := inTx(ctx, db, func(tx Execer) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return fmt.Errorf("delete note: %w", err)
		}
		queue := []string{id}
		seen := map[string]bool{}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			if seen[cur] {
				continue
			}
			seen[cur] = true
			kids, err := queryStrings(ctx, tx,
				`SELECT noteId FROM branches WHERE parentNoteId = $1 AND isDeleted = 0 ORDER BY position, branchId`, cur)
			if err != nil {
				return fmt.Errorf("delete note %q: %w", cur, err)
			}
			for _, stmt := range []string{
				`UPDATE notes SET isDeleted = 1 WHERE noteId = $1`,
				`UPDATE branches SET isDeleted = 1 WHERE (noteId = $1 OR parentNoteId = $1) AND isDeleted = 0`,
				`UPDATE attributes SET isDeleted = 1 WHERE noteId = $1 AND isDeleted = 0`,
				`UPDATE attributes SET isDeleted = 1 WHERE type = 'relation' AND value = $1 AND isDeleted = 0`,
			} {
				if _, err := tx.ExecContext(ctx, stmt, cur); err != nil {
					return fmt.Errorf("delete note %q: %w", cur, err)
				}
			}
			deleted = append(deleted, cur)
			for _, k := range kids {
				var parents int
				if err := tx.QueryRowContext(ctx,
					`SELECT COUNT(*) FROM branches WHERE noteId = $1 AND isDeleted = 0`, k).Scan(&parents); err != nil {
					return fmt.Errorf("delete note %q: count parents of %q: %w", cur, k, err)
				}
				if parents == 0 {
					queue = append(queue, k)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

// MoveNote moves a note from under fromParentID to under toParentID,
// appending it after the new parent's existing children. If fromParentID is
// "" the note's only (or oldest) parent is used. Moving a note to the parent
// it is already under (fromParentID == toParentID) is a no-op.
//
// It returns an error wrapping [ErrNotFound] if a note does not exist or is
// not a child of fromParentID, [ErrCycle] if toParentID is the note itself or
// one of its descendants, [ErrConflict] if the note is already a child of
// toParentID through another placement, and [ErrInvalidArgument] if the note
// has no parent (root).
func MoveNote(ctx context.Context, db Execer, id, fromParentID, toParentID string) error {
	return inTx(ctx, db, func(tx Execer) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return fmt.Errorf("move note: %w", err)
		}
		if err := mustExist(ctx, tx, toParentID); err != nil {
			return fmt.Errorf("move note %q: target parent: %w", id, err)
		}
		var branchID, from string
		if fromParentID == "" {
			err := tx.QueryRowContext(ctx, `
				SELECT b.branchId, b.parentNoteId FROM branches b
				JOIN notes p ON p.noteId = b.parentNoteId AND p.isDeleted = 0
				WHERE b.noteId = $1 AND b.isDeleted = 0
				ORDER BY b.rowid LIMIT 1`, id).Scan(&branchID, &from)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("move note %q: it has no parent: %w", id, ErrInvalidArgument)
			}
			if err != nil {
				return fmt.Errorf("move note %q: %w", id, err)
			}
		} else {
			from = fromParentID
			var err error
			branchID, err = liveBranch(ctx, tx, id, fromParentID)
			if err != nil {
				return fmt.Errorf("move note %q: %w", id, err)
			}
			if branchID == "" {
				return fmt.Errorf("move note %q: it is not a child of %q: %w", id, fromParentID, ErrNotFound)
			}
		}
		if from == toParentID {
			return nil
		}
		if err := checkNoCycle(ctx, tx, id, toParentID); err != nil {
			return fmt.Errorf("move note %q under %q: %w", id, toParentID, err)
		}
		existing, err := liveBranch(ctx, tx, id, toParentID)
		if err != nil {
			return fmt.Errorf("move note %q: %w", id, err)
		}
		if existing != "" {
			return fmt.Errorf("move note %q: it is already a child of %q: %w", id, toParentID, ErrConflict)
		}
		pos, err := nextPosition(ctx, tx, toParentID)
		if err != nil {
			return fmt.Errorf("move note %q: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx,
			`UPDATE branches SET parentNoteId = $1, position = $2 WHERE branchId = $3`,
			toParentID, pos, branchID); err != nil {
			return fmt.Errorf("move note %q under %q: %w", id, toParentID, err)
		}
		return nil
	})
}

// CloneNote places an existing note under one more parent, newParentID
// (appended after its existing children); the note keeps its other
// placements. It returns an error wrapping [ErrNotFound] if a note does not
// exist, [ErrConflict] if the note is already a child of newParentID and
// [ErrCycle] if newParentID is the note itself or one of its descendants.
func CloneNote(ctx context.Context, db Execer, id, newParentID string) error {
	return inTx(ctx, db, func(tx Execer) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return fmt.Errorf("clone note: %w", err)
		}
		if err := mustExist(ctx, tx, newParentID); err != nil {
			return fmt.Errorf("clone note %q: target parent: %w", id, err)
		}
		existing, err := liveBranch(ctx, tx, id, newParentID)
		if err != nil {
			return fmt.Errorf("clone note %q: %w", id, err)
		}
		if existing != "" {
			return fmt.Errorf("clone note %q: it is already a child of %q: %w", id, newParentID, ErrConflict)
		}
		if err := checkNoCycle(ctx, tx, id, newParentID); err != nil {
			return fmt.Errorf("clone note %q under %q: %w", id, newParentID, err)
		}
		if err := addBranch(ctx, tx, id, newParentID); err != nil {
			return fmt.Errorf("clone note %q under %q: %w", id, newParentID, err)
		}
		return nil
	})
}

// SetAttribute creates or updates the attribute of type typ
// ([AttributeLabel] or [AttributeRelation]) called name on a note, and
// returns it. An existing attribute with the same note, type and name gets
// the new value; otherwise a new one is appended. Names are made of letters,
// digits, '_' and ':'. The value of a relation must be the ID of an existing
// note.
//
// It returns an error wrapping [ErrNotFound] if the note (or the relation
// target) does not exist and [ErrInvalidArgument] for a bad type or name.
func SetAttribute(ctx context.Context, db Execer, noteID, typ, name, value string) (*NoteAttribute, error) {
	if typ != AttributeLabel && typ != AttributeRelation {
		return nil, fmt.Errorf("set attribute on note %q: type %q is not %q or %q: %w",
			noteID, typ, AttributeLabel, AttributeRelation, ErrInvalidArgument)
	}
	if !validAttributeName(name) {
		return nil, fmt.Errorf("set attribute on note %q: bad name %q (use letters, digits, '_' and ':'): %w",
			noteID, name, ErrInvalidArgument)
	}
	var attr *NoteAttribute
	err := inTx(ctx, db, func(tx Execer) error {
		if err := mustExist(ctx, tx, noteID); err != nil {
			return fmt.Errorf("set attribute %q: %w", name, err)
		}
		if typ == AttributeRelation {
			if err := mustExist(ctx, tx, value); err != nil {
				return fmt.Errorf("set relation %q on note %q: target: %w", name, noteID, err)
			}
		}
		var id string
		err := tx.QueryRowContext(ctx, `
			SELECT attributeId FROM attributes
			WHERE noteId = $1 AND type = $2 AND name = $3 AND isDeleted = 0`, noteID, typ, name).Scan(&id)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if id, err = NewID(); err != nil {
				return fmt.Errorf("set attribute %q on note %q: %w", name, noteID, err)
			}
			if _, err := tx.ExecContext(ctx, `
				INSERT INTO attributes (attributeId, noteId, type, name, value, position, isDeleted)
				VALUES ($1, $2, $3, $4, $5, (
					SELECT COALESCE(MAX(position), 0) + $6 FROM attributes WHERE noteId = $2 AND isDeleted = 0
				), 0)`, id, noteID, typ, name, value, positionStep); err != nil {
				return fmt.Errorf("set attribute %q on note %q: %w", name, noteID, err)
			}
		case err != nil:
			return fmt.Errorf("set attribute %q on note %q: %w", name, noteID, err)
		default:
			if _, err := tx.ExecContext(ctx,
				`UPDATE attributes SET value = $1 WHERE attributeId = $2`, value, id); err != nil {
				return fmt.Errorf("set attribute %q on note %q: %w", name, noteID, err)
			}
		}
		attr = &NoteAttribute{ID: id}
		if err := tx.QueryRowContext(ctx, `
			SELECT noteId, type, name, value, position FROM attributes WHERE attributeId = $1`, id).
			Scan(&attr.NoteID, &attr.Type, &attr.Name, &attr.Value, &attr.Position); err != nil {
			return fmt.Errorf("read attribute %q: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return attr, nil
}

// DeleteAttribute soft-deletes the attribute attributeID, which must belong
// to note noteID. It returns an error wrapping [ErrNotFound] if the attribute
// does not exist and [ErrNotOwned] if it belongs to another note.
func DeleteAttribute(ctx context.Context, db Execer, attributeID, noteID string) error {
	return inTx(ctx, db, func(tx Execer) error {
		var owner string
		err := tx.QueryRowContext(ctx,
			`SELECT noteId FROM attributes WHERE attributeId = $1 AND isDeleted = 0`, attributeID).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("delete attribute %q: %w", attributeID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("delete attribute %q: %w", attributeID, err)
		}
		if owner != noteID {
			return fmt.Errorf("delete attribute %q: it does not belong to note %q: %w", attributeID, noteID, ErrNotOwned)
		}
		if _, err := tx.ExecContext(ctx,
			`UPDATE attributes SET isDeleted = 1 WHERE attributeId = $1`, attributeID); err != nil {
			return fmt.Errorf("delete attribute %q: %w", attributeID, err)
		}
		return nil
	})
}

// NewID returns a random identifier of [IDLength] characters from [A-Za-z0-9],
// drawn from crypto/rand.
func NewID() (string, error) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	// Reject bytes >= 248 (= 4*62) so that every character is equally likely.
	const maxByte = 256 - 256%len(alphabet)
	out := make([]byte, 0, IDLength)
	buf := make([]byte, IDLength*2)
	for len(out) < IDLength {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("generate id: %w", err)
		}
		for _, b := range buf {
			if int(b) < maxByte && len(out) < IDLength {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out), nil
}

// ---------------------------------------------------------------------------
// Helpers

// txBeginner is implemented by *sql.DB and *sql.Conn (not by *sql.Tx).
type txBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// pgWriteLock serializes the store's write transactions on PostgreSQL, as
// SQLite's IMMEDIATE transactions do: a transaction-level advisory lock,
// released when the transaction ends, on a key of the store's own.
const pgWriteLock = `SELECT pg_advisory_xact_lock(hashtext('llmtool/examples/notes'))`

// inTx runs fn in a new transaction if db can begin one, committing on
// success and rolling back on error; otherwise (db is already a transaction)
// it runs fn on db directly. On PostgreSQL fn runs after pgWriteLock, in
// the caller's transaction too.
func inTx(ctx context.Context, db Execer, fn func(tx Execer) error) (err error) {
	engine, _, err := engineOf(db)
	if err != nil {
		return err
	}
	lock := func(tx Execer) error {
		if engine != EnginePostgres {
			return nil
		}
		if _, err := tx.ExecContext(ctx, pgWriteLock); err != nil {
			return fmt.Errorf("take the store's write lock: %w", err)
		}
		return nil
	}
	b, ok := db.(txBeginner)
	if !ok {
		if err := lock(db); err != nil {
			return err
		}
		return fn(db)
	}
	tx, err := b.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := lock(tx); err != nil {
		return err
	}
	if err := fn(OnEngine(tx, engine)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func notFound(id string) error {
	return fmt.Errorf("note %q: %w", id, ErrNotFound)
}

// mustExist returns an error wrapping ErrNotFound if note id does not exist.
func mustExist(ctx context.Context, q Queryer, id string) error {
	ok, err := Exists(ctx, q, id)
	if err != nil {
		return err
	}
	if !ok {
		return notFound(id)
	}
	return nil
}

// checkAffected turns "no row updated" into ErrNotFound for note id.
func checkAffected(res sql.Result, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("update note %q: %w", id, err)
	}
	if n == 0 {
		return notFound(id)
	}
	return nil
}

// checkNoCycle returns an error wrapping ErrCycle if putting id under parent
// would make id its own ancestor.
func checkNoCycle(ctx context.Context, q Queryer, id, parent string) error {
	if parent == id {
		return fmt.Errorf("a note cannot be placed under itself: %w", ErrCycle)
	}
	under, err := IsDescendant(ctx, q, parent, id)
	if err != nil {
		return err
	}
	if under {
		return fmt.Errorf("%q is a descendant of %q: %w", parent, id, ErrCycle)
	}
	return nil
}

// liveBranch returns the ID of the live branch placing id under parent, or ""
// if there is none.
func liveBranch(ctx context.Context, q Queryer, id, parent string) (string, error) {
	var b string
	err := q.QueryRowContext(ctx,
		`SELECT branchId FROM branches WHERE noteId = $1 AND parentNoteId = $2 AND isDeleted = 0`,
		id, parent).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read branch %q -> %q: %w", parent, id, err)
	}
	return b, nil
}

// nextPosition returns the position after the last live child of parent.
func nextPosition(ctx context.Context, q Queryer, parent string) (int, error) {
	var pos int
	err := q.QueryRowContext(ctx,
		`SELECT COALESCE(MAX(position), 0) + $1 FROM branches WHERE parentNoteId = $2 AND isDeleted = 0`,
		positionStep, parent).Scan(&pos)
	if err != nil {
		return 0, fmt.Errorf("read positions under %q: %w", parent, err)
	}
	return pos, nil
}

// addBranch places id as the last child of parent.
func addBranch(ctx context.Context, db Execer, id, parent string) error {
	pos, err := nextPosition(ctx, db, parent)
	if err != nil {
		return err
	}
	branchID, err := NewID()
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx,
		`INSERT INTO branches (branchId, noteId, parentNoteId, position, isDeleted) VALUES ($1, $2, $3, $4, 0)`,
		branchID, id, parent, pos); err != nil {
		return fmt.Errorf("insert branch %q -> %q: %w", parent, id, err)
	}
	return nil
}

// validAttributeName reports whether name is a non-empty run of letters,
// digits, '_' and ':'.
func validAttributeName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != ':' {
			return false
		}
	}
	return true
}

func queryRefs(ctx context.Context, q Queryer, query string, args ...any) ([]NoteRef, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	refs := []NoteRef{}
	for rows.Next() {
		var r NoteRef
		if err := rows.Scan(&r.ID, &r.Title); err != nil {
			return nil, err
		}
		refs = append(refs, r)
	}
	return refs, rows.Err()
}

func queryStrings(ctx context.Context, q Queryer, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func nowString() string { return time.Now().UTC().Format(timeLayout) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
