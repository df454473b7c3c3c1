package mcpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/sqlite"
)

// docKind is the entity kind of the resource fixture: document 2 is
// protected.
var docKind = &llmtool.Entity{
	Kind: "doc",
	Noun: "document",
	Exists: func(c *llmtool.ReadCtx, id string) (bool, error) {
		var n int
		err := c.QueryRow(`SELECT count(*) FROM docs WHERE id = ?`, id).Scan(&n)
		return n > 0, err
	},
	Protected: func(c *llmtool.ReadCtx, id string) (bool, error) {
		var p bool
		err := c.QueryRow(`SELECT protected FROM docs WHERE id = ?`, id).Scan(&p)
		return p, err
	},
	Complete: func(c *llmtool.ReadCtx, prefix string, limit int) ([]string, error) {
		rows, err := c.Query(`SELECT id FROM docs WHERE id LIKE ? || '%' ORDER BY id LIMIT ?`, prefix, limit)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, rows.Err()
	},
	NotFoundNext: "List the documents to find an ID.",
}

type docRef struct {
	DocID string `json:"docId" ref:"doc" desc:"ID of the document."`
}

var (
	docResource = llmtool.Resource("doc", "doc://{docId}", "A document's body.",
		func(c *llmtool.ReadCtx, in docRef) (llmtool.Rich, error) {
			var body string
			err := c.QueryRow(`SELECT body FROM docs WHERE id = ?`, in.DocID).Scan(&body)
			return llmtool.Rich{Content: []llmtool.Content{llmtool.TextContent(body)}}, err
		}, llmtool.FriendlyName("Document"))
	indexResource = llmtool.Resource("index", "doc://index", "Every document's ID.",
		func(*llmtool.ReadCtx, struct{}) (llmtool.Rich, error) {
			return llmtool.Rich{Content: []llmtool.Content{{Type: "text", Text: `["1","2","10"]`, MIMEType: "application/json"}}}, nil
		})
	reviewPrompt = llmtool.Prompt("review_doc", "Ask for a review of a document.",
		func(c *llmtool.ReadCtx, in docRef) ([]llmtool.Message, error) {
			var body string
			if err := c.QueryRow(`SELECT body FROM docs WHERE id = ?`, in.DocID).Scan(&body); err != nil {
				return nil, err
			}
			return []llmtool.Message{{Role: "user", Content: llmtool.TextContent("Review this: " + body)}}, nil
		}, llmtool.FriendlyName("Review document"))
)

type editIn struct {
	DocID string `json:"docId" ref:"doc" desc:"ID of the document."`
	Body  string `json:"body" desc:"The new body."`
}

var editDoc = llmtool.Write("edit_doc", "Replace a document's body.",
	func(c *llmtool.WriteCtx, in editIn) (struct{}, error) {
		_, err := c.Exec(`UPDATE docs SET body = ? WHERE id = ?`, in.Body, in.DocID)
		return struct{}{}, err
	}, llmtool.Updates("doc"))

// topicPrompt asks the user for a topic before it renders.
var topicPrompt = llmtool.Prompt("pick_topic", "Ask the user for a topic, then write about it.",
	func(c *llmtool.ReadCtx, _ struct{}) ([]llmtool.Message, error) {
		res, err := ask.Elicit(c, ask.ElicitRequest{Message: "Which topic?"})
		if err != nil {
			return nil, err
		}
		return []llmtool.Message{{Role: "user", Content: llmtool.TextContent("Write about " + string(res.Content))}}, nil
	})

// newDocFixture serves the resource fixture with opts.
func newDocFixture(t *testing.T, opts *llmtool.Options) *fixture {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "docs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT NOT NULL, protected INTEGER NOT NULL DEFAULT 0);
		INSERT INTO docs VALUES ('1', 'First', 0), ('2', 'Secret', 1), ('10', 'Tenth', 0)`)
	require.NoError(t, err)
	o := llmtool.Options{Logger: slog.New(slog.DiscardHandler)}
	if opts != nil {
		o = *opts
		o.Logger = slog.New(slog.DiscardHandler)
	}
	reg, err := llmtool.NewRegistry(db, &o, llmtool.DefineTools("docs", docResource, indexResource, reviewPrompt, topicPrompt, editDoc).WithEntities(docKind))
	require.NoError(t, err)
	require.NoError(t, reg.Tenants().SetWrites(context.Background(), "", true))
	srv := mcpadapter.New(reg, &mcpadapter.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { srv.Close() })
	return &fixture{db: db, reg: reg, srv: srv}
}

// modernFixtureClient connects to f's HTTP handler under revision 2026-07-28
// (mcp-go's client default): no session, server/discover.
func modernFixtureClient(t *testing.T, f *fixture) *client.Client {
	t.Helper()
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	c := client.NewClient(tr, client.WithElicitationHandler(handlers{}))
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { c.Close() })
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}})
	require.NoError(t, err)
	require.Equal(t, mcp.ProtocolVersion20260728, c.ProtocolVersion())
	return c
}

func TestResources(t *testing.T) {
	all := append(connectors[:len(connectors):len(connectors)], struct {
		name     string
		parallel bool
		connect  func(t *testing.T, f *fixture) *client.Client
	}{"http-2026-07-28", true, modernFixtureClient})
	for _, cn := range all {
		t.Run(cn.name, func(t *testing.T) {
			if cn.parallel {
				t.Parallel()
			}
			c := cn.connect(t, newDocFixture(t, nil))
			ctx := context.Background()

			list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			require.NoError(t, err)
			require.Len(t, list.Resources, 1)
			require.Equal(t, "doc://index", list.Resources[0].URI)
			require.Equal(t, "Every document's ID.", list.Resources[0].Description)

			tmpls, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			require.NoError(t, err)
			require.Len(t, tmpls.ResourceTemplates, 1)
			require.Equal(t, "doc://{docId}", tmpls.ResourceTemplates[0].URITemplate.Raw())
			require.Equal(t, "Document", tmpls.ResourceTemplates[0].Title)

			read := func(uri string) (string, string, error) {
				res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
				if err != nil {
					return "", "", err
				}
				require.Len(t, res.Contents, 1)
				tc, ok := res.Contents[0].(mcp.TextResourceContents)
				require.True(t, ok, "%T", res.Contents[0])
				require.Equal(t, uri, tc.URI)
				return tc.Text, tc.MIMEType, nil
			}
			body, mt, err := read("doc://10")
			require.NoError(t, err)
			require.Equal(t, "Tenth", body)
			require.Equal(t, "text/plain", mt)
			body, mt, err = read("doc://index")
			require.NoError(t, err)
			require.Equal(t, `["1","2","10"]`, body)
			require.Equal(t, "application/json", mt)

			for _, tt := range []struct{ uri, want string }{
				{"doc://2", `Document "2" (docId) is protected; tools may neither read nor change it. Work with another document, or ask the user to remove the protection.`},
				{"doc://9", `Document "9" (docId) does not exist. List the documents to find an ID.`},
				// The registry's sentence, on every transport, with the URI in
				// the error's data (SEP-2164; TestResourceRefusalCodes).
				{"other://1", `No resource has the URI "other://1". Read a resource the server lists, or a URI that matches one of its templates.`},
			} {
				_, _, err := read(tt.uri)
				require.Error(t, err, tt.uri)
				require.Contains(t, err.Error(), tt.want)
			}

			prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
			require.NoError(t, err)
			require.Len(t, prompts.Prompts, 2)
			require.Equal(t, mcp.Prompt{Name: "review_doc", Title: "Review document", Description: "Ask for a review of a document.",
				Arguments: []mcp.PromptArgument{{Name: "docId", Description: "ID of the document.", Required: true}}}, prompts.Prompts[1])
			got, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "review_doc", Arguments: map[string]string{"docId": "1"}}})
			require.NoError(t, err)
			require.Equal(t, []mcp.PromptMessage{{Role: mcp.RoleUser, Content: mcp.TextContent{Type: "text", Text: "Review this: First"}}}, got.Messages)
			// A prompt that asks: an input-required result under
			// 2026-07-28, elicitation/create within the request before.
			got, err = c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "pick_topic"}})
			require.NoError(t, err)
			require.Equal(t, []mcp.PromptMessage{{Role: mcp.RoleUser, Content: mcp.TextContent{Type: "text", Text: `Write about {"name":"Ada (asked: Which topic?)"}`}}}, got.Messages)
			_, err = c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "review_doc", Arguments: map[string]string{"docId": "2"}}})
			require.ErrorContains(t, err, `Document "2" (docId) is protected`)

			complete := func(ref any, arg, value string) []string {
				res, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteArgument{Name: arg, Value: value}}})
				require.NoError(t, err)
				return res.Completion.Values
			}
			tmplRef := mcp.ResourceReference{Type: "ref/resource", URI: "doc://{docId}"}
			require.Equal(t, []string{"1", "10"}, complete(tmplRef, "docId", "1"))
			require.Equal(t, []string{"1", "10"}, complete(tmplRef, "docId", ""), "the protected document is left out")
			require.Equal(t, []string{"10"}, complete(mcp.PromptReference{Type: "ref/prompt", Name: "review_doc"}, "docId", "10"))
		})
	}
}

// TestResourcesPolicy shows listings and reads refused by Options.Authorize
// with its own sentence.
func TestResourcesPolicy(t *testing.T) {
	t.Parallel()
	f := newDocFixture(t, &llmtool.Options{Authorize: func(_ context.Context, _ *llmtool.Principal, s *llmtool.Spec) error {
		if s.Name == "doc" || s.Prompt {
			return &llmtool.Error{Kind: llmtool.KindDenied, Message: fmt.Sprintf("Only editors may use %s.", s.Name), NextAction: "Ask an editor."}
		}
		return nil
	}})
	c := httpClient(t, f)
	ctx := context.Background()
	tmpls, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	require.NoError(t, err)
	require.Empty(t, tmpls.ResourceTemplates)
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	require.NoError(t, err)
	require.Empty(t, prompts.Prompts)
	list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	require.NoError(t, err)
	require.Len(t, list.Resources, 1)

	_, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "doc://1"}})
	require.ErrorContains(t, err, "Only editors may use doc. Ask an editor.")
	_, err = c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
		Ref: mcp.PromptReference{Type: "ref/prompt", Name: "review_doc"}, Argument: mcp.CompleteArgument{Name: "docId", Value: "1"}}})
	require.ErrorContains(t, err, "Only editors may use review_doc.")
}

// TestResourceSubscriptions shows a write tool that declares Updates
// notifying the sessions subscribed to the URI it changed, and only them.
func TestResourceSubscriptions(t *testing.T) {
	for _, cn := range connectors {
		if cn.name == "inprocess" {
			continue // the in-process client has no notification stream for resources
		}
		t.Run(cn.name, func(t *testing.T) {
			if cn.parallel {
				t.Parallel()
			}
			c := cn.connect(t, newDocFixture(t, nil))
			notes := collect(c)
			subscribe(t, c, "doc://1", true)
			require.False(t, call(t, c, "edit_doc", map[string]any{"docId": "10", "body": "x"}).IsError)
			require.False(t, call(t, c, "edit_doc", map[string]any{"docId": "1", "body": "Changed"}).IsError)
			n := notes.next(t, "notifications/resources/updated")
			require.Equal(t, "doc://1", n.Params.AdditionalFields["uri"])
			subscribe(t, c, "doc://1", false)
			subscribe(t, c, "doc://10", true)
			require.False(t, call(t, c, "edit_doc", map[string]any{"docId": "1", "body": "Again"}).IsError)
			require.False(t, call(t, c, "edit_doc", map[string]any{"docId": "10", "body": "y"}).IsError)
			n = notes.next(t, "notifications/resources/updated")
			require.Equal(t, "doc://10", n.Params.AdditionalFields["uri"], "no update for doc://1 after unsubscribing")
		})
	}
}

// subscribe sends resources/subscribe (on) or resources/unsubscribe: the
// requests of revisions up to 2025-11-25, which 2026-07-28 replaced with
// subscriptions/listen.
func subscribe(t *testing.T, c *client.Client, uri string, on bool) {
	t.Helper()
	ctx := context.Background()
	if on {
		//lint:ignore SA1019 resources/subscribe is the request of the revisions this test serves (2025-11-25 and before)
		require.NoError(t, c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}))
		return
	}
	//lint:ignore SA1019 resources/unsubscribe is the request of the revisions this test serves (2025-11-25 and before)
	require.NoError(t, c.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}))
}

// TestResourceNotFoundWire: at 2026-07-28, resources/read of a URI no
// resource has is an invalid-params error with the registry's sentence and
// the URI in its data (SEP-2164).
func TestResourceNotFoundWire(t *testing.T) {
	t.Parallel()
	f := newDocFixture(t, nil)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	rc := &rpc{url: ts.URL, headers: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read", "Mcp-Name": "other://1"}}
	resp, body := rc.post(t, `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"other://1",`+modernMeta(`{}`)+`}}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body) // mcp-go's status for -32602 at 2026-07-28
	require.JSONEq(t, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"No resource has the URI \"other://1\". Read a resource the server lists, or a URI that matches one of its templates.","data":{"uri":"other://1","kind":"not_found"}}}`, body)
}

// TestResourceRefusalCodes: a refusal of resources/read or prompts/get is
// the request's JSON-RPC error with the registry's sentence and a code that
// says what it is, never -32603 "internal error", on every transport:
// "resource not found" for a URI or an entity that does not exist (-32002
// before 2026-07-28, -32602 at it, HTTP 400), -32602 for a prompt's
// missing or malformed arguments and for what a prompt names that does not
// exist, -32003 for a refusal by protection or policy (HTTP 200 at
// 2026-07-28, as mcp-go answers a server error).
func TestResourceRefusalCodes(t *testing.T) { // not parallel: stdio
	f := newDocFixture(t, &llmtool.Options{Authorize: func(_ context.Context, _ *llmtool.Principal, s *llmtool.Spec) error {
		if s.Name == "index" {
			return &llmtool.Error{Kind: llmtool.KindDenied, Message: "Only editors may read the index.", NextAction: "Ask an editor."}
		}
		return nil
	}})
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	legacy := &rpc{url: ts.URL}
	legacy.initialize(t)
	stdio := newStdioWire(t, f)

	protected := `Document \"2\" (docId) is protected; tools may neither read nor change it. Work with another document, or ask the user to remove the protection.`
	missing := `Document \"9\" (docId) does not exist. List the documents to find an ID.`
	for _, tc := range []struct {
		name, method, params string
		code, modernCode     int // before 2026-07-28, and at it
		modernStatus         int
		message, data        string
	}{
		{"protected entity", "resources/read", `"uri":"doc://2"`, -32003, -32003, http.StatusOK, protected, `{"kind":"denied"}`},
		{"missing entity", "resources/read", `"uri":"doc://9"`, -32002, -32602, http.StatusBadRequest, missing, `{"kind":"not_found","uri":"doc://9"}`},
		{"no such resource", "resources/read", `"uri":"other://1"`, -32002, -32602, http.StatusBadRequest,
			`No resource has the URI \"other://1\". Read a resource the server lists, or a URI that matches one of its templates.`, `{"kind":"not_found","uri":"other://1"}`},
		{"refused by policy", "resources/read", `"uri":"doc://index"`, -32003, -32003, http.StatusOK, `Only editors may read the index. Ask an editor.`, `{"kind":"denied"}`},
		{"prompt of a protected entity", "prompts/get", `"name":"review_doc","arguments":{"docId":"2"}`, -32003, -32003, http.StatusOK, protected, `{"kind":"denied"}`},
		{"prompt of a missing entity", "prompts/get", `"name":"review_doc","arguments":{"docId":"9"}`, -32602, -32602, http.StatusBadRequest, missing, `{"kind":"not_found"}`},
		{"prompt without its argument", "prompts/get", `"name":"review_doc"`, -32602, -32602, http.StatusBadRequest,
			`Error: /docId: missing required parameter \"docId\". Send \"docId\" as a string (ID of the document).`, `{"kind":"invalid_args"}`},
		{"no such prompt", "prompts/get", `"name":"review_dog"`, -32602, -32602, http.StatusBadRequest,
			`Unknown prompt \"review_dog\". Use one of the prompts the server lists.`, `{"kind":"not_found"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := func(code int) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"error":{"code":%d,"message":"%s","data":%s}}`, code, tc.message, tc.data)
			}
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":%q,"params":{%s}}`, tc.method, tc.params)
			resp, body := legacy.post(t, msg)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.JSONEq(t, want(tc.code), body, "HTTP session")
			require.JSONEq(t, want(tc.code), stdio.roundTrip(t, msg), "stdio")

			var n struct{ URI, Name string }
			require.NoError(t, json.Unmarshal([]byte(`{`+tc.params+`}`), &n))
			modern := &rpc{url: ts.URL, headers: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": tc.method, "Mcp-Name": n.URI + n.Name}}
			resp, body = modern.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":%q,"params":{%s,%s}}`, tc.method, tc.params, modernMeta(`{}`)))
			require.Equal(t, tc.modernStatus, resp.StatusCode, body)
			require.JSONEq(t, want(tc.modernCode), body, "HTTP 2026-07-28")
		})
	}
}
