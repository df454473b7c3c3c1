package mcpadapter_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/sqlite"
)

type greetIn struct {
	Name string `json:"name" desc:"Who to greet."`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

// greeting is the example module: one read tool.
var greeting = llmtool.DefineTools("greeting", llmtool.Read("greet", "Greet someone by name.",
	func(c *llmtool.ReadCtx, in greetIn) (greetOut, error) {
		if in.Name == "" {
			return greetOut{}, llmtool.InvalidArgs("name: empty. Send the name of the person to greet.")
		}
		return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
	}, llmtool.FriendlyName("Greet")))

// exampleRegistry opens a SQLite file in a temporary directory and
// registers the example module.
func exampleRegistry() (*llmtool.Registry, func()) {
	dir, err := os.MkdirTemp("", "mcpadapter-example-")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)}, greeting)
	if err != nil {
		log.Fatal(err)
	}
	return reg, func() { db.Close(); os.RemoveAll(dir) }
}

// A registry served over streamable HTTP to an mcp-go client: every
// tools/call goes through Registry.Invoke.
func ExampleNew() {
	reg, done := exampleRegistry()
	defer done()
	srv := mcpadapter.New(reg, &mcpadapter.Options{
		Name:    "greeter",
		Version: "1.0.0",
		Logger:  slog.New(slog.DiscardHandler),
	})
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	ctx := context.Background()
	tr, err := transport.NewStreamableHTTP(ts.URL)
	if err != nil {
		log.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "example", Version: "1"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("server:", init.ServerInfo.Name, init.ServerInfo.Version)

	for _, name := range []string{"Ada", ""} {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": name}}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("isError=%v %s\n", res.IsError, res.Content[0].(mcp.TextContent).Text)
	}
	// Output:
	// server: greeter 1.0.0
	// isError=false {"greeting":"Hello, Ada!"}
	// isError=true Error: name: empty. Send the name of the person to greet.
}

// Streamable HTTP behind bearer authentication: a request without a valid
// token is refused before anything runs.
func ExampleBearerAuth() {
	reg, done := exampleRegistry()
	defer done()
	users := map[string]*llmtool.Principal{"s3cret": {ID: "ada", Name: "Ada"}}
	srv := mcpadapter.New(reg, &mcpadapter.Options{
		Logger: slog.New(slog.DiscardHandler),
		Authenticator: mcpadapter.BearerAuth(func(ctx context.Context, token string) (*llmtool.Principal, error) {
			if p, ok := users[token]; ok {
				return p, nil
			}
			return nil, errors.New("unknown token")
		}),
		TenantFunc: func(r *http.Request, p *llmtool.Principal) (string, error) {
			return "user:" + p.ID, nil // each user's own tenant
		},
	})
	defer srv.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	ts := httptest.NewServer(mux)
	defer ts.Close()

	for _, token := range []string{"", "s3cret"} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// Output:
	// 401 Bearer realm="mcp"
	// 200
}

// Stdio serves one client over a pair of streams; here pipes stand in for
// os.Stdin and os.Stdout.
func ExampleServer_ServeStdio() {
	reg, done := exampleRegistry()
	defer done()
	srv := mcpadapter.New(reg, &mcpadapter.Options{Principal: &llmtool.Principal{ID: "desktop-user"}})
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go srv.ServeStdio(ctx, inR, outW)

	lines := bufio.NewScanner(outR)
	send := func(msg string) string {
		fmt.Fprintln(inW, msg)
		lines.Scan()
		return lines.Text()
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"desktop","version":"1"}}}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Println(send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Bob"}}}`))
	// Output:
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"greeting\":\"Hello, Bob!\"}"}],"structuredContent":{"greeting":"Hello, Bob!"}}}
}
