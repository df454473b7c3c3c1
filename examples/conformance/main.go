// Command conformance serves the fixtures of the official MCP conformance
// suite (npm package @modelcontextprotocol/conformance) with llmtool tools
// and mcpadapter, over streamable HTTP at /mcp:
//
//	go run ./examples/conformance -addr 127.0.0.1:3000
//	bash .ci/conformance.sh http://127.0.0.1:3000/mcp
//
// The tools are read tools over a throwaway SQLite database (-db to keep
// one). Logs go to standard error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/sqlite"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:3000", "listen address (use loopback: the suite tests DNS rebinding protection)")
	dbPath := flag.String("db", "", "SQLite file (default: a temporary one, removed at exit)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if *dbPath == "" {
		dir, err := os.MkdirTemp("", "llmtool-conformance-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*dbPath = filepath.Join(dir, "conformance.db")
	}
	db, err := sqlite.Open(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: logger}, fixtures, resources, stateless, inputRequired, listen)
	if err != nil {
		return err
	}
	registry = reg
	srv := mcpadapter.New(reg, &mcpadapter.Options{Name: "llmtool-conformance", Version: "0.1.0", Logger: logger})
	defer srv.Close()

	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdown)
	}()
	fmt.Fprintf(os.Stderr, "conformance: serving http://%s/mcp\n", ln.Addr())
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
