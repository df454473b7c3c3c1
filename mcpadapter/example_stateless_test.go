package mcpadapter_test

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/llmtool/llmtool/mcpadapter"
)

// Stateless streamable HTTP keeps nothing a request needs in the process, so
// replicas on one PostgreSQL database can serve behind a load balancer, any
// of them any request: here a tools/call with no session before it.
func ExampleServer_StatelessHandler() {
	reg, done := exampleRegistry()
	defer done()
	srv := mcpadapter.New(reg, &mcpadapter.Options{Logger: slog.New(slog.DiscardHandler)})
	defer srv.Close()
	ts := httptest.NewServer(srv.StatelessHandler())
	defer ts.Close()

	req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Header.Get("Mcp-Session-Id") == "")
	fmt.Println(strings.TrimSpace(string(body)))
	// Output:
	// 200 true
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada!\"}"}],"structuredContent":{"greeting":"Hello, Ada!"}}}
}
