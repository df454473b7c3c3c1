package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/oauth"
	"github.com/llmtool/llmtool/oauth/oauthtest"
	"github.com/llmtool/llmtool/sqlite"
)

type noteOut struct {
	Title string `json:"title"`
}

// notes is the example module: a read tool and a write tool, each with the
// OAuth scope it needs.
var notes = llmtool.DefineTools("notes",
	llmtool.Read("get_note", "Read the note.",
		func(c *llmtool.ReadCtx, _ struct{}) (noteOut, error) { return noteOut{Title: "Hello"}, nil },
		llmtool.Scopes("notes:read")),
	llmtool.Write("rename_note", "Rename the note.",
		func(c *llmtool.WriteCtx, in noteOut) (noteOut, error) { return in, nil },
		llmtool.Scopes("notes:write")))

// exampleRegistry opens a SQLite file in a temporary directory and
// registers the example module, with writes on.
func exampleRegistry() (*llmtool.Registry, func()) {
	dir, err := os.MkdirTemp("", "oauth-example-")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)}, notes)
	if err != nil {
		log.Fatal(err)
	}
	if err := reg.Tenants().SetWrites(context.Background(), "", true); err != nil {
		log.Fatal(err)
	}
	return reg, func() { db.Close(); os.RemoveAll(dir) }
}

// An MCP server that accepts the access tokens of an authorization server:
// a client without a token learns from the 401 where the protected
// resource metadata is, reads there which authorization server to ask,
// and comes back with a token; a token without the scope a tool needs
// gets 403 and the scopes to ask for.
func Example() {
	iss := oauthtest.NewIssuer() // stands in for the real authorization server
	defer iss.Close()
	reg, done := exampleRegistry()
	defer done()

	v, err := oauth.New(context.Background(), oauth.Config{
		Issuer:          iss.URL,
		Resource:        "https://mcp.example.com/mcp",
		ScopesSupported: []string{"notes:read", "notes:write"},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := mcpadapter.New(reg, &mcpadapter.Options{
		Authenticator:    v,
		ResourceMetadata: v.MetadataURL(),
		Logger:           slog.New(slog.DiscardHandler),
	})
	defer srv.Close()
	mux := http.NewServeMux()
	mux.Handle(v.MetadataPath(), v.Metadata())
	mux.Handle("/mcp", srv.StatelessHandler())
	ts := httptest.NewServer(mux)
	defer ts.Close()

	post := func(token, body string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
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
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rename_note","arguments":{"title":"Hi"}}}`

	post("", call)

	resp, err := http.Get(ts.URL + v.MetadataPath())
	if err != nil {
		log.Fatal(err)
	}
	var md struct {
		Resource        string   `json:"resource"`
		Servers         []string `json:"authorization_servers"`
		ScopesSupported []string `json:"scopes_supported"`
	}
	err = json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(md.Resource, md.Servers[0] == iss.URL, md.ScopesSupported)

	// The client authorizes at iss with resource=https://mcp.example.com/mcp.
	reader := iss.Token(map[string]any{"sub": "ada", "aud": md.Resource, "scope": "notes:read"})
	post(reader, call)
	writer := iss.Token(map[string]any{"sub": "ada", "aud": md.Resource, "scope": "notes:read notes:write"})
	post(writer, call)
	// Output:
	// 401 Bearer realm="mcp", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// https://mcp.example.com/mcp true [notes:read notes:write]
	// 403 Bearer realm="mcp", error="insufficient_scope", error_description="Tool rename_note needs the scope notes:write, which the access token does not grant", scope="notes:read notes:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// 200
}

// Verify checks a token and returns the principal its calls run as, with
// the token's scopes; a refusal says why, for the log and for the client.
func ExampleVerifier_Verify() {
	iss := oauthtest.NewIssuer()
	defer iss.Close()
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: iss.URL, Resource: "https://mcp.example.com/mcp"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	p, err := v.Verify(ctx, iss.Token(map[string]any{"sub": "ada", "name": "Ada", "aud": "https://mcp.example.com/mcp", "scope": "notes:read"}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.ID, p.Name, p.Scopes)

	_, err = v.Verify(ctx, iss.Token(map[string]any{"sub": "ada", "aud": "https://other.example.com/mcp"}))
	var te *oauth.TokenError
	if errors.As(err, &te) {
		fmt.Println(errors.Is(err, oauth.ErrAudience))
		fmt.Println(te.Description)
	}
	// Output:
	// oauth:ada Ada [notes:read]
	// true
	// The access token is not for this server: its audience is https://other.example.com/mcp, not https://mcp.example.com/mcp; get a token with the resource parameter https://mcp.example.com/mcp (RFC 8707).
}

// With Introspection, the authorization server vouches for each token: for
// opaque tokens, or to refuse a revoked token at once.
func ExampleIntrospection() {
	iss := oauthtest.NewIssuer()
	defer iss.Close()
	v, err := oauth.New(context.Background(), oauth.Config{
		Issuer:        iss.URL,
		Resource:      "https://mcp.example.com/mcp",
		Introspection: &oauth.Introspection{ClientID: oauthtest.ClientID, ClientSecret: oauthtest.ClientSecret},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	token := iss.OpaqueToken(map[string]any{"sub": "ada", "aud": "https://mcp.example.com/mcp", "scope": "notes:read notes:write"})

	p, err := v.Verify(ctx, token)
	fmt.Println(p.ID, p.Scopes, err)

	iss.Revoke(token)
	_, err = v.Verify(ctx, token)
	fmt.Println(errors.Is(err, oauth.ErrInactive))
	// Output:
	// oauth:ada [notes:read notes:write] <nil>
	// true
}

// Config.Principal maps a token's claims to the principal, here with the
// roles of a "groups" claim, and may refuse a token.
func ExampleConfig_principal() {
	iss := oauthtest.NewIssuer()
	defer iss.Close()
	v, err := oauth.New(context.Background(), oauth.Config{
		Issuer:   iss.URL,
		Resource: "https://mcp.example.com/mcp",
		Principal: func(c oauth.Claims) (*llmtool.Principal, error) {
			p, err := oauth.DefaultPrincipal(c)
			if err != nil {
				return nil, err
			}
			groups, _ := c.Raw["groups"].([]any)
			for _, g := range groups {
				if g, ok := g.(string); ok {
					p.Roles = append(p.Roles, g)
				}
			}
			if len(p.Roles) == 0 {
				return nil, errors.New("no group")
			}
			return p, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	p, err := v.Verify(ctx, iss.Token(map[string]any{"sub": "ada", "aud": "https://mcp.example.com/mcp", "groups": []string{"editors"}}))
	fmt.Println(p.ID, p.Roles, p.Scopes, err)

	_, err = v.Verify(ctx, iss.Token(map[string]any{"sub": "eve", "aud": "https://mcp.example.com/mcp"}))
	fmt.Println(err)
	// Output:
	// oauth:ada [editors] [] <nil>
	// oauth: Config.Principal refused subject "eve": no group
}

// Config.Principal is also where the issuer's subjects become the host's
// own users, deliberately: here from a table of the host's, refusing the
// subjects it does not know. The token's scopes still limit the user.
func ExampleConfig_users() {
	iss := oauthtest.NewIssuer()
	defer iss.Close()
	users := map[string]*llmtool.Principal{ // subject at the issuer → the host's user
		"248289761001": {ID: "user-42", Name: "Ada Lovelace", Roles: []string{"editor"}},
	}
	v, err := oauth.New(context.Background(), oauth.Config{
		Issuer:   iss.URL,
		Resource: "https://mcp.example.com/mcp",
		Principal: func(c oauth.Claims) (*llmtool.Principal, error) {
			if p, ok := users[c.Subject]; ok {
				return p, nil // runs as a copy with the token's scopes
			}
			return nil, errors.New("not a user of this server")
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	p, err := v.Verify(ctx, iss.Token(map[string]any{"sub": "248289761001", "aud": "https://mcp.example.com/mcp", "scope": "notes:read"}))
	fmt.Println(p.ID, p.Name, p.Roles, p.Scopes, err)
	fmt.Println(users["248289761001"].Scopes == nil)

	_, err = v.Verify(ctx, iss.Token(map[string]any{"sub": "owner", "aud": "https://mcp.example.com/mcp"}))
	fmt.Println(err)
	// Output:
	// user-42 Ada Lovelace [editor] [notes:read] <nil>
	// true
	// oauth: Config.Principal refused subject "owner": not a user of this server
}
