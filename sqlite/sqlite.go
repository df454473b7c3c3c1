// Package sqlite opens a SQLite database the way llmtool's transactions
// expect, with modernc.org/sqlite (pure Go, no cgo), which it imports: a
// host needs neither a blank import of the driver nor its name.
//
//	db, err := sqlite.Open("notes.db")
//	...
//	reg, err := llmtool.NewRegistry(db, nil, notes.Tools)
//
// The root package imports modernc.org/sqlite too, for its authorizer,
// which enforces on SQLite what a tool's SQL may touch; a host that also
// imports another driver registered as "sqlite" gets a duplicate
// registration panic at start-up.
package sqlite

import (
	"database/sql"
	"fmt"
	"strings"

	_ "modernc.org/sqlite" // registers the driver "sqlite"
)

// Open opens the SQLite file at path, creating it if needed, with the
// settings DSN gives, and checks that it can be used. Text after a '?' in
// path is passed on as the host's own URI parameters.
func Open(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("llmtool: open %s: %w", path, err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("llmtool: open %s: %w", path, err)
	}
	return db, nil
}

// DSN returns the data source name of the SQLite file at path with the
// settings llmtool's transactions expect: WAL (readers run beside the
// writer), a busy timeout of ten seconds, foreign keys on, synchronous
// NORMAL, and BEGIN IMMEDIATE for write transactions. Open uses it; a host
// that opens the file with a driver of its own that wraps
// modernc.org/sqlite's (for tracing, say) passes it to sql.Open.
func DSN(path string) string {
	// path goes into a file: URI, where a '#' would end the file name (and
	// drop the settings) and a '%' start an escape; text after a '?' is the
	// caller's own URI parameters.
	name, params, hasParams := strings.Cut(path, "?")
	name = strings.NewReplacer("%", "%25", "#", "%23").Replace(name)
	sep := "?"
	if hasParams {
		name, sep = name+"?"+params, "&"
	}
	return "file:" + name + sep + "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}
