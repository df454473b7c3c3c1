// Package pgtest gives llmtool's tests a fresh PostgreSQL database each.
//
// The server is named by the environment variable LLMTOOL_TEST_POSTGRES, a
// DSN for a role that may create databases, for instance
//
//	LLMTOOL_TEST_POSTGRES=postgres://postgres@127.0.0.1:55432/postgres
//
// .ci/postgres.sh installs, starts and names one. Without the variable a
// PostgreSQL test is skipped with a message saying how to run it, never
// silently passed; under CI (CI is set) it fails instead, because CI always
// has PostgreSQL.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// Env is the environment variable that names the test server.
const Env = "LLMTOOL_TEST_POSTGRES"

// Engine is the environment variable that, set to "postgres", runs the
// tests that take their engine from the environment (see [FromEnv])
// against PostgreSQL.
const Engine = "LLMTOOL_TEST_ENGINE"

// AdminDSN returns the server's DSN, or skips t (fails it under CI) when
// there is none.
func AdminDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(Env)
	if dsn != "" {
		return dsn
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not set: CI runs PostgreSQL (.ci/postgres.sh) and these tests need it", Env)
	}
	t.Skipf("PostgreSQL test skipped: set %s=postgres://user@host:port/db (a role that may create databases); .ci/postgres.sh starts one", Env)
	return ""
}

// DSN creates a fresh database for t, dropped when t ends, and returns its
// DSN.
func DSN(t testing.TB) string {
	t.Helper()
	admin := AdminDSN(t)
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "llmtool_t_" + hex.EncodeToString(b)
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("open %s: %v", Env, err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err != nil {
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// Open returns a *sql.DB (driver "pgx") on a fresh database for t, closed
// and dropped when t ends.
func Open(t testing.TB) *sql.DB {
	t.Helper()
	dsn := DSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// FromEnv reports whether the tests that run on either engine should use
// PostgreSQL: LLMTOOL_TEST_ENGINE=postgres.
func FromEnv() bool { return os.Getenv(Engine) == "postgres" }
