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
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
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

// Cluster is a private PostgreSQL server for one test, which the test may
// stop and start again (to see what a client does while the database is
// down). It needs the server's binaries: LLMTOOL_PG_BIN names their
// directory, else they are looked up on PATH and in /usr/lib/postgresql.
type Cluster struct {
	// DSN connects to the cluster's postgres database as postgres.
	DSN string

	t    testing.TB
	bin  string
	dir  string
	port int
	user string // run the binaries as this user (initdb refuses root)
}

// StartCluster initializes and starts a private cluster, stopped and
// removed when t ends. Without the binaries it skips t (fails it under CI).
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := findBin()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("pgtest: PostgreSQL's binaries (initdb, pg_ctl) not found: set LLMTOOL_PG_BIN")
		}
		t.Skip("pgtest: PostgreSQL's binaries (initdb, pg_ctl) not found: set LLMTOOL_PG_BIN to their directory")
	}
	c := &Cluster{t: t, bin: bin}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			t.Skip("pgtest: running as root and there is no postgres user to run the server as")
		}
		c.user = "postgres"
	}
	dir, err := os.MkdirTemp("", "llmtool-pgcluster-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() {
		_ = c.pgctl("stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	if c.user != "" {
		if out, err := exec.Command("chown", "-R", c.user, dir).CombinedOutput(); err != nil {
			t.Fatalf("pgtest: chown %s: %v: %s", dir, err, out)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if out, err := c.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		t.Fatalf("pgtest: initdb: %v: %s", err, out)
	}
	c.Start()
	c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", c.port)
	return c
}

// Start starts the cluster and waits until it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c fsync=off", c.port, c.dir)
	if err := c.pgctl("start", "-w", "-t", "60", "-o", opts, "-l", filepath.Join(c.dir, "log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		c.t.Fatalf("pgtest: pg_ctl start: %v\n%s", err, log)
	}
}

// Stop stops the cluster at once (-m immediate): clients' connections
// drop, new ones are refused until Start.
func (c *Cluster) Stop() {
	c.t.Helper()
	if err := c.pgctl("stop", "-m", "immediate", "-w"); err != nil {
		c.t.Fatalf("pgtest: pg_ctl stop: %v", err)
	}
}

func (c *Cluster) pgctl(args ...string) error {
	out, err := c.run("pg_ctl", append([]string{"-D", filepath.Join(c.dir, "data")}, args...)...)
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.user != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.user, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// findBin returns the directory of initdb and pg_ctl, or "".
func findBin() string {
	if d := os.Getenv("LLMTOOL_PG_BIN"); d != "" {
		return d
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(r)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(dirs) > 0 {
		return dirs[len(dirs)-1]
	}
	return ""
}

// Available reports whether a test server is named, for tests that run
// on SQLite always and on PostgreSQL too when they can.
func Available() bool { return os.Getenv(Env) != "" }
