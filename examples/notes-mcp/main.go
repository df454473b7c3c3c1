// Command notes-mcp serves the notes tools (package
// github.com/llmtool/llmtool/examples/notes) to MCP clients: Claude
// Desktop, IDEs, agents.
//
// It is a module of its own (its OpenTelemetry and Prometheus exporters
// stay out of llmtool's go.mod). Run it from the root of the repository
// with
//
//	go run -C examples/notes-mcp .
//
// (or go run . in examples/notes-mcp; go run ./examples/notes-mcp does not
// work from the root, which is another module). The first run takes a
// minute or two and looks stuck: it prints only "go: downloading ..." lines
// while it fetches about 70 MB of modules, most of them modernc.org/sqlite
// and its modernc.org/libc, the rest mostly the exporters, then nothing
// while it compiles them (the SQLite package is one 5 MB Go file, about 20
// seconds on its own). The module and build caches keep everything, and
// later runs start in about a second. It opens notes.db in the current
// directory, which go run -C makes examples/notes-mcp (creating and
// seeding it the first time), and serves streamable HTTP at
// http://127.0.0.1:8080/mcp. It prints the URL, the bearer token clients
// must send and how to connect a client. The token is kept in a file next
// to the database (notes.db.token) so it stays the same across restarts;
// -token or NOTES_MCP_TOKEN override it.
//
// Besides the tools, clients get the module's resource template
// note://{noteId} (a note's content, with its MIME type), the prompt
// summarize_note, and completion of note IDs for both; protected notes are
// refused and never completed.
//
// With -stdio it serves one client over standard input and output instead,
// as desktop clients expect: standard output carries nothing but the
// protocol, and logs go to standard error.
//
// -db also takes a PostgreSQL URL, postgres://user:password@host:port/dbname
// (or postgresql://): the database must exist; notes-mcp creates its tables
// and seeds it when it is empty, as it does a new SQLite file. There is no
// file to keep the token in, so HTTP needs -token or NOTES_MCP_TOKEN. The
// banner, the logs and the messages show the URL without its password.
//
// With -stateless it serves streamable HTTP without sessions, so that
// several replicas on one PostgreSQL database can run behind a load
// balancer, any of them serving any request. Every replica reads the write
// setting on each listing and call, so a change made with the writes
// command applies to all of them at once (without sessions, clients get no
// notifications/tools/list_changed: they see it on their next listing).
// The keys that sign approval tokens and the state of calls that ask the
// user are derived from the bearer token, so an answer may come back to
// any replica given the same token.
//
// delete_note and move_note need the user's approval: the call previews
// the change and rolls it back, the client shows the preview (MCP
// elicitation), and the change commits only once the user approves it, and
// only if it is still the change they saw. A client that cannot ask its
// user gets the preview and a sentence saying so, and the change is not
// made. -approve=false lets them commit at once. The setting is stored
// with the tenant's other settings at start-up, so start every replica
// with the same -approve.
//
// Write tools are off until they are enabled for the tenant:
//
//	go run -C examples/notes-mcp . writes on  [-db PATH|URL] [-tenant NAME]
//	go run -C examples/notes-mcp . writes off [-db PATH|URL] [-tenant NAME]
//	go run -C examples/notes-mcp . writes     [-db PATH|URL] [-tenant NAME]
//
// A running server sees the change on its next listing or call and tells
// its clients (notifications/tools/list_changed).
//
// Telemetry is off unless asked for. -otlp URL sends traces (a span per
// call, execute_tool <tool>) and metrics (llmtool.calls,
// llmtool.call.duration and the others the library records) over OTLP/HTTP
// to the collector at URL, such as http://localhost:4318: to /v1/traces
// and /v1/metrics under it, metrics every 10 s, and what is left when the
// program stops. -metrics HOST:PORT serves the same metrics to Prometheus
// at http://HOST:PORT/metrics (llmtool_calls_total,
// llmtool_call_duration_seconds, ...), with the Go runtime's and the
// process's. The two go together. The resource's service.name is
// notes-mcp; the exporters' OTEL_* environment variables apply.
//
// -oauth-issuer URL (HTTP only) also accepts, beside the bearer token, the
// access tokens of the authorization server whose issuer is URL (found
// through its /.well-known/oauth-authorization-server or
// openid-configuration; JWTs checked against its published keys) and serves
// this server's protected-resource metadata at
// /.well-known/oauth-protected-resource/mcp, which 401 answers point to. A
// token's calls run as its subject and see only what its scopes allow: the
// read tools need notes:read, the write tools notes:write; a call beyond
// them gets 403 insufficient_scope. -oauth-resource URL is this server's
// public URL, the audience tokens must name (default: the MCP endpoint's
// URL, as printed).
//
// Connecting a client over HTTP (IDEs, agents): URL
// http://127.0.0.1:8080/mcp, header "Authorization: Bearer <token printed
// at start-up>". Over stdio (desktop clients): build the binary once with
// go build -C examples/notes-mcp -o notes-mcp . and add it to the client's
// configuration (for Claude Desktop, claude_desktop_config.json) with
// absolute paths:
//
//	{
//	  "mcpServers": {
//	    "notes": {
//	      "command": "/absolute/path/to/notes-mcp",
//	      "args": ["-stdio", "-db", "/absolute/path/to/notes.db", "-tenant", "default"]
//	    }
//	  }
//	}
//
// and enable its write tools with notes-mcp writes on -db
// /absolute/path/to/notes.db. The model can call man for the catalog of
// tools and man with {"name": "<tool>"} for a tool's options and examples.
// System notes (root, _hidden, _share, _lbRoot, _globalNoteMap) are never
// changed by a write tool, and protected notes are neither read nor
// written.
//
// Usage:
//
//	notes-mcp [-db PATH|URL] [-addr HOST:PORT] [-stateless] [-tenant NAME] [-token TOKEN] [-approve=false] [-otlp URL] [-metrics HOST:PORT] [-oauth-issuer URL [-oauth-resource URL]]
//	notes-mcp -stdio [-db PATH|URL] [-tenant NAME] [-approve=false] [-otlp URL] [-metrics HOST:PORT]
//	notes-mcp writes [on|off] [-db PATH|URL] [-tenant NAME]
//
// Errors are one line on standard error, with exit status 1 (2 for a
// usage error).
package main

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/examples/notes"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/oauth"
	"github.com/llmtool/llmtool/tenant"
)

// Defaults of the flags.
const (
	defaultDB     = "notes.db"
	defaultAddr   = "127.0.0.1:8080"
	defaultTenant = "default"
	// tokenEnv names the environment variable that sets the bearer token.
	tokenEnv = "NOTES_MCP_TOKEN"
	// version is reported to clients in the initialize handshake.
	version = "0.1.0"
	// endpoint is the path of the MCP endpoint.
	endpoint = "/mcp"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

// instructions are sent to the client's model in the initialize handshake.
const instructions = `Tools over a hierarchical note store. The tree starts at the note "root". ` +
	`Find notes with search_notes or by walking the tree with get_child_notes, read them with get_note ` +
	`and get_note_content. Call man for the catalog of tools and man {"name": "<tool>"} for examples.`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command, with its streams as arguments so tests can run
// it in process. It returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var err error
	if len(args) > 0 && args[0] == "writes" {
		err = writesCmd(ctx, args[1:], stdout)
	} else {
		err = serveCmd(ctx, args, stdin, stdout, stderr)
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "notes-mcp: "+oneLine(err.Error())+" "+helpHint())
		return exitUsage
	}
	fmt.Fprintln(stderr, "notes-mcp: "+oneLine(err.Error()))
	return exitError
}

// oneLine joins the lines of a message, so every error is one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// helpHint says how to get the usage, as the user ran this program:
// "go run -C DIR . -h" under go run (its binary lies in a temporary
// directory the user never sees), else "notes-mcp -h".
func helpHint() string {
	if builtByGoRun(os.Args[0]) {
		return "(for help: " + goRunCommand() + " -h)"
	}
	return "(run notes-mcp -h for help)"
}

// goRunCommand returns the go run command that runs this program from any
// directory, "go run -C DIR .", DIR being the current directory: go run
// -C examples/notes-mcp . and go run . in examples/notes-mcp both leave
// the program there, in its module.
func goRunCommand() string {
	wd, err := os.Getwd()
	if err != nil {
		return "go run ."
	}
	return "go run -C " + shellQuote(wd) + " ."
}

// builtByGoRun reports whether exe is a binary go run built and started:
// go run links it as $WORK/b001/exe/NAME, $WORK being a go-build*
// directory under the temporary directory (GOTMPDIR, else TMPDIR). Test
// binaries and binaries built with go build -o are not.
func builtByGoRun(exe string) bool {
	dir := filepath.Dir(exe)
	return filepath.Base(dir) == "exe" && strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(dir))), "go-build")
}

// usageError wraps a command-line mistake.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%s%w", fmt.Sprintf(format, args...), usageSuffix{})
}

// usageSuffix is an error that prints as nothing and matches errUsage, so
// usageError's message stays the caller's.
type usageSuffix struct{}

func (usageSuffix) Error() string        { return "" }
func (usageSuffix) Is(target error) bool { return target == errUsage }

// parseFlags parses args with fs, turning flag errors into one-line usage
// errors (the flag package's own messages and usage text are silenced).
// With -h it prints usage to w and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string, w io.Writer, usage string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(w, usage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		return err
	}
	if err != nil {
		return usageError("%v", err)
	}
	return nil
}

const serveUsage = `notes-mcp serves the notes tools over MCP.

Usage:
  notes-mcp [flags]                        serve streamable HTTP (or stdio with -stdio)
  notes-mcp writes [on|off] [-db] [-tenant] show, enable or disable write tools

The database (-db) is either
  - a SQLite file, created and seeded if missing; the bearer token of HTTP
    clients is kept next to it (FILE.token) unless -token or $NOTES_MCP_TOKEN
    sets it; or
  - a PostgreSQL URL, postgres://user:password@host:port/dbname (or
    postgresql://): the database must exist, and is set up and seeded when
    empty. HTTP then needs -token or $NOTES_MCP_TOKEN: there is no file to
    keep a token in. Output and logs show the URL without its password.

delete_note and move_note need the user's approval: the client shows the
change they would make and the user approves or refuses it (MCP
elicitation); a client that cannot ask gets the preview and the change is
not made. -approve=false lets them commit at once.

Several replicas behind a load balancer: start each with the same PostgreSQL
-db and token, and -stateless. Stateless HTTP keeps no session, so any
replica serves any request; clients get no tools/list_changed notifications
and see changes on their next listing. Every server reads the write setting
on each listing and call, so "notes-mcp writes on|off" takes effect on all
replicas at once, and each derives its signing keys from the token, so a
user's answer (an approval) may reach any of them. Use -stateless only for
HTTP, and only when requests may reach different processes; one server is
better off without it.

Telemetry is off by default. -otlp URL sends a span per call and the
llmtool.* metrics over OTLP/HTTP to the collector at URL (for example
http://localhost:4318: traces to URL/v1/traces, metrics to URL/v1/metrics
every 10 s and once more on exit). -metrics HOST:PORT serves the same
metrics to Prometheus at http://HOST:PORT/metrics (llmtool_calls_total,
llmtool_call_duration_seconds, ...). Both may be given; they work with HTTP
and -stdio alike, and the OTEL_* environment variables of the OpenTelemetry
SDK apply (OTEL_SERVICE_NAME, default notes-mcp; OTEL_EXPORTER_OTLP_HEADERS).

-oauth-issuer URL makes the server an OAuth 2.1 resource server beside its
bearer token: it accepts the access tokens (JWTs, checked against the
issuer's published keys) of the authorization server whose issuer is URL,
and serves its protected-resource metadata (RFC 9728), which 401 answers
point clients to. A token's calls run as its subject and are limited to its
scopes: read tools need notes:read, write tools notes:write; a token without
the scope does not see the tool, and a call of it gets 403 with the scope to
ask for. -oauth-resource URL is this server's public URL, which tokens must
name as their audience (default: the MCP endpoint's URL, as printed).

Flags:
`

// approvalTools need the user's approval unless -approve=false: the
// destructive and the far-reaching changes of the tree.
var approvalTools = []string{"delete_note", "move_note"}

// serveCmd serves the notes tools over HTTP or stdio until ctx ends (or, for
// stdio, until the client closes standard input).
func serveCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("notes-mcp", flag.ContinueOnError)
	dbPath := fs.String("db", defaultDB, "the note database `file|URL`: a SQLite file, created and seeded if missing, or postgres://user:password@host:port/dbname")
	addr := fs.String("addr", defaultAddr, "`host:port` to serve streamable HTTP on")
	stdio := fs.Bool("stdio", false, "serve one client over stdin/stdout instead of HTTP")
	stateless := fs.Bool("stateless", false, "serve streamable HTTP without sessions, for replicas behind a load balancer (HTTP only)")
	tenantName := fs.String("tenant", defaultTenant, "the `name` of the tenant whose settings decide which tools run")
	token := fs.String("token", "", "the bearer `token` HTTP clients must send (default: $"+tokenEnv+", else one kept in FILE.token; required with a PostgreSQL -db)")
	approve := fs.Bool("approve", true, "ask the user, through the client, to approve each "+strings.Join(approvalTools, " and ")+" before it commits (-approve=false: they commit at once)")
	otlpURL := fs.String("otlp", "", "send traces and metrics over OTLP/HTTP to the collector at `URL`, such as http://localhost:4318 (to /v1/traces and /v1/metrics under it)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://`host:port`/metrics, such as 127.0.0.1:9464")
	oauthIssuer := fs.String("oauth-issuer", "", "also accept access tokens of the OAuth authorization server whose issuer is `URL` (its keys found through /.well-known/oauth-authorization-server or openid-configuration); read tools need scope notes:read, write tools notes:write")
	oauthResource := fs.String("oauth-resource", "", "this server's resource `URL`, which access tokens must name as their audience (default: the MCP endpoint's URL)")
	if err := parseFlags(fs, args, stdout, serveUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unknown command %q; the only command is \"writes\"", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *stdio && (set["addr"] || set["token"]) {
		return usageError("-addr and -token are for HTTP; leave them out with -stdio")
	}
	if *stdio && *stateless {
		return usageError("-stateless is for HTTP; leave it out with -stdio")
	}
	if *stdio && (set["oauth-issuer"] || set["oauth-resource"]) {
		return usageError("-oauth-issuer and -oauth-resource are for HTTP; leave them out with -stdio")
	}
	if *oauthResource != "" && *oauthIssuer == "" {
		return usageError("-oauth-resource names the audience of the tokens of -oauth-issuer; give -oauth-issuer URL too")
	}
	if *tenantName == "" {
		return usageError("-tenant must not be empty")
	}
	if *dbPath == "" {
		return usageError("-db must not be empty") // before a token file is made next to it
	}
	if *otlpURL != "" {
		if err := checkOTLPURL(*otlpURL); err != nil {
			return err
		}
	}
	if *metricsAddr != "" {
		if err := checkMetricsAddr(*metricsAddr); err != nil {
			return err
		}
	}
	if !*stdio {
		if err := tokenNeeded(*token, *dbPath); err != nil {
			return err
		}
	}
	dbName := displayDB(*dbPath)

	// Over HTTP, the keys that sign approval tokens and the state of calls
	// that ask the user come from the bearer token, which replicas share:
	// an answer whose retry reaches another replica is honoured there, and
	// one given before a restart after it.
	var tok, tokenSource string
	var approvalKey, stateKey []byte
	if !*stdio {
		var err error
		if tok, tokenSource, err = bearerToken(*token, *dbPath); err != nil {
			return err
		}
		approvalKey, stateKey = deriveKey(tok, "notes-mcp approval tokens"), deriveKey(tok, "notes-mcp request state")
	}

	// Logs go to stderr, in both modes: with -stdio, stdout is the protocol.
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	// -otlp and -metrics: the providers record every call (a span, and
	// the llmtool.* metrics). Stopped last, after the server, so the
	// final calls are sent too.
	tel, err := startTelemetry(ctx, *otlpURL, *metricsAddr, logger)
	if err != nil {
		return err
	}
	defer tel.stop(ctx, logger)

	db, reg, err := openRegistry(ctx, *dbPath, &llmtool.Options{
		// Each write's exact changes: shown in approval questions, kept
		// in the history, undone by undo_changes (a client undoes its own
		// session's changes).
		Changesets:     notes.Changesets,
		ApprovalKey:    approvalKey,
		Logger:         logger,
		TracerProvider: tel.tracer,
		MeterProvider:  tel.meter,
		// The writes command runs in another process, and replicas
		// share a PostgreSQL database: read the tenant's setting on every
		// listing and call (a primary-key lookup), so a change shows at
		// once on every server and clients get tools/list_changed.
		TenantCacheTTL: tenant.NoCache,
		WritesOffAction: fmt.Sprintf("Ask the user to enable write tools with `%s writes on -db %s -tenant %s`, then call the tool again.",
			selfCommand(), shellQuote(dbName), shellQuote(*tenantName)),
	})
	if err != nil {
		return err
	}
	defer db.Close()
	defer reg.Close()
	writes, err := reg.Tenants().Writes(ctx, *tenantName)
	if err != nil {
		return fmt.Errorf("read the write setting of tenant %q in %s: %w", *tenantName, dbName, err)
	}
	for _, tool := range approvalTools {
		if err := reg.Tenants().SetApproval(ctx, *tenantName, tool, *approve); err != nil {
			return fmt.Errorf("set approval of %s in tenant %q in %s: %w", tool, *tenantName, dbName, err)
		}
	}

	owner := &llmtool.Principal{ID: "owner", Name: "Owner of the notes"}
	opts := mcpadapter.Options{
		Name:         "notes-mcp",
		Version:      version,
		Instructions: instructions,
		Tenant:       *tenantName,
		Logger:       logger,
		// llmtool.mcp.sessions, the sessions open (the calls' spans and
		// metrics are the registry's).
		MeterProvider: tel.meter,

		RequestStateKey: stateKey,
	}

	if *stdio {
		opts.Principal = owner
		srv := mcpadapter.New(reg, &opts)
		defer srv.Close()
		logger.Info("notes-mcp: serving over stdio", "db", dbName, "tenant", *tenantName, "writes", onOff(writes), "approve", onOff(*approve))
		if err := srv.ServeStdio(ctx, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("stdio: %w", err)
		}
		return nil
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (choose another address with -addr)", *addr, err)
	}
	url := "http://" + ln.Addr().String() + endpoint
	mux := http.NewServeMux()

	// -oauth-issuer: the issuer's access tokens are accepted beside the
	// bearer token, and run as their subject, limited to their scopes.
	var verifier *oauth.Verifier
	if *oauthIssuer != "" {
		resource := cmp.Or(*oauthResource, url)
		verifier, err = oauth.New(ctx, oauth.Config{Issuer: *oauthIssuer, Resource: resource,
			ScopesSupported: []string{notes.ScopeRead, notes.ScopeWrite}})
		if err != nil {
			ln.Close()
			return fmt.Errorf("-oauth-issuer %s: %w", *oauthIssuer, err)
		}
		opts.ResourceMetadata = verifier.MetadataURL()
		mux.Handle(verifier.MetadataPath(), verifier.Metadata())
		if root := "/.well-known/oauth-protected-resource"; verifier.MetadataPath() != root {
			mux.Handle(root, verifier.Metadata()) // where clients look when the 401 names none
		}
	}
	opts.Authenticator = mcpadapter.BearerAuth(func(ctx context.Context, got string) (*llmtool.Principal, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1 {
			return owner, nil
		}
		if verifier != nil {
			return verifier.Verify(ctx, got)
		}
		return nil, errors.New("wrong bearer token")
	})
	srv := mcpadapter.New(reg, &opts)
	defer srv.Close()

	handler := srv.Handler()
	if *stateless {
		// No sessions: every POST stands alone, so a load balancer may
		// send each request to any replica.
		handler = srv.StatelessHandler()
	}
	mux.Handle(endpoint, handler)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "notes-mcp: the MCP endpoint is %s\n", endpoint)
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		logger.Warn("notes-mcp: listening beyond loopback without TLS; put it behind an HTTPS proxy before exposing it", "addr", ln.Addr().String())
	}
	logger.Info("notes-mcp: serving streamable HTTP", "url", url, "db", dbName, "tenant", *tenantName, "writes", onOff(writes), "stateless", *stateless, "approve", onOff(*approve))
	printBanner(stdout, banner{url: url, token: tok, tokenSource: tokenSource, db: *dbPath, tenant: *tenantName, writes: writes,
		metricsURL: tel.metricsURL, otlpURL: *otlpURL, oauthIssuer: *oauthIssuer, resourceMetadata: opts.ResourceMetadata})

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve HTTP: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

const writesUsage = `notes-mcp writes shows, enables or disables the write tools of a tenant.

Usage:
  notes-mcp writes [-db PATH|URL] [-tenant NAME]        show the setting
  notes-mcp writes on|off [-db PATH|URL] [-tenant NAME] enable or disable write tools

-db is the SQLite file or the PostgreSQL URL (postgres://user:password@host:port/dbname)
the servers use. Every running server, each replica included, applies a change
on its next listing or call.

Flags:
`

// writesCmd shows or changes whether write tools are enabled for a tenant.
// The action may come before or after the flags.
func writesCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("notes-mcp writes", flag.ContinueOnError)
	dbPath := fs.String("db", defaultDB, "the note database `file|URL`: a SQLite file or postgres://user:password@host:port/dbname")
	tenantName := fs.String("tenant", defaultTenant, "the `name` of the tenant")
	var action string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		action, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, stdout, writesUsage); err != nil {
		return err
	}
	rest := fs.Args()
	if action == "" && len(rest) > 0 {
		action, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		return usageError("unexpected argument %q after %q", rest[0], action)
	}
	switch action {
	case "", "on", "off":
	default:
		return usageError("unknown writes action %q; use \"on\", \"off\" or nothing to show the setting", action)
	}
	if *tenantName == "" {
		return usageError("-tenant must not be empty")
	}
	db, reg, err := openRegistry(ctx, *dbPath, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer db.Close()
	defer reg.Close()
	switch action {
	case "on":
		err = reg.Tenants().SetWrites(ctx, *tenantName, true)
	case "off":
		err = reg.Tenants().SetWrites(ctx, *tenantName, false)
	}
	dbName := displayDB(*dbPath)
	if err != nil {
		return fmt.Errorf("turn write tools %s for tenant %q in %s: %w", action, *tenantName, dbName, err)
	}
	on, err := reg.Tenants().Writes(ctx, *tenantName)
	if err != nil {
		return fmt.Errorf("read the write setting of tenant %q in %s: %w", *tenantName, dbName, err)
	}
	fmt.Fprintf(stdout, "Write tools are %s for tenant %q in %s.\n", onOff(on), *tenantName, dbName)
	switch {
	case action != "":
		fmt.Fprintln(stdout, "Running servers apply the change on their next listing or call.")
	case !on:
		fmt.Fprintf(stdout, "Turn them on with: %s writes on -db %s -tenant %s\n", selfCommand(), shellQuote(dbName), shellQuote(*tenantName))
	}
	return nil
}

// openRegistry opens (creating and seeding it if needed) the note store and
// a registry of the notes tools over it, configured by opts. path is a
// PostgreSQL URL (see notes.IsPostgresURL) or a SQLite file. The file must
// be a database or not exist: notes.Open would otherwise be given a
// directory or a file of another kind, and SQLite's own message for those
// is obscure.
func openRegistry(ctx context.Context, path string, opts *llmtool.Options) (*sql.DB, *llmtool.Registry, error) {
	if path == "" {
		return nil, nil, usageError("-db must not be empty")
	}
	if notes.IsPostgresURL(path) {
		// notes.Open's errors name the URL without its password.
		db, err := notes.Open(ctx, path)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (is the PostgreSQL server up, does the database exist, and may the user create tables in it?)", err)
		}
		reg, err := llmtool.NewRegistry(db, opts, notes.Tools)
		if err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("%s: %w", displayDB(path), err)
		}
		return db, reg, nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, nil, fmt.Errorf("open %s: it is a directory; give -db the path of a database file", path)
	} else if errors.Is(err, fs.ErrNotExist) {
		if dir := filepath.Dir(path); !isDir(dir) {
			return nil, nil, fmt.Errorf("open %s: the directory %s does not exist; create it or give -db another path", path, dir)
		}
	} else if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	db, err := notes.Open(ctx, path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (is %s a notes database you can read and write?)", err, path)
	}
	reg, err := llmtool.NewRegistry(db, opts, notes.Tools)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, reg, nil
}

// tokenNeeded returns a usage error when HTTP would have no token to
// check: with a PostgreSQL database there is no file to keep one in, so
// -token or the environment must give it.
func tokenNeeded(flagValue, dbPath string) error {
	if notes.IsPostgresURL(dbPath) && flagValue == "" && strings.TrimSpace(os.Getenv(tokenEnv)) == "" {
		return usageError("a PostgreSQL -db needs the bearer token from -token or $%s; only a SQLite database has a file next to it to keep one in", tokenEnv)
	}
	return nil
}

// bearerToken returns the token HTTP clients must send and where it came
// from: the -token flag, the environment, or (for a SQLite database) the
// token file next to the database, created with a random token the first
// time.
func bearerToken(flagValue, dbPath string) (token, source string, err error) {
	if flagValue != "" {
		return flagValue, "from -token", nil
	}
	if v := strings.TrimSpace(os.Getenv(tokenEnv)); v != "" {
		return v, "from $" + tokenEnv, nil
	}
	if err := tokenNeeded(flagValue, dbPath); err != nil {
		return "", "", err
	}
	file := dbPath + ".token"
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, "kept in " + file, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("read the token file: %w", err)
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", "", fmt.Errorf("generate a token: %w", err)
	}
	t := hex.EncodeToString(raw)
	if err := os.WriteFile(file, []byte(t+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("write the token file: %w", err)
	}
	return t, "kept in " + file, nil
}

// banner is what the HTTP server prints when it starts.
type banner struct {
	url, token, tokenSource string
	db, tenant              string
	writes                  bool
	// metricsURL is the Prometheus endpoint of -metrics, otlpURL the
	// collector of -otlp; "" when off.
	metricsURL, otlpURL string
	// oauthIssuer is the issuer of -oauth-issuer, resourceMetadata the
	// URL of this server's OAuth metadata; "" without it.
	oauthIssuer, resourceMetadata string
}

// printBanner prints b. A PostgreSQL URL in b.db is shown without its
// password, a SQLite file as given (and as an absolute path in the desktop
// snippet).
func printBanner(w io.Writer, b banner) {
	abs := displayDB(b.db)
	if !notes.IsPostgresURL(b.db) {
		if a, err := filepath.Abs(b.db); err == nil {
			abs = a
		}
	}
	b.db = displayDB(b.db)
	fmt.Fprintf(w, "notes-mcp serves the notes in %s (tenant %q).\n\n", b.db, b.tenant)
	fmt.Fprintf(w, "  MCP endpoint:  %s\n", b.url)
	fmt.Fprintf(w, "  Bearer token:  %s  (%s)\n", b.token, b.tokenSource)
	if b.metricsURL != "" {
		fmt.Fprintf(w, "  Metrics:       %s  (Prometheus)\n", b.metricsURL)
	}
	if b.otlpURL != "" {
		fmt.Fprintf(w, "  OTLP/HTTP:     %s  (traces and metrics)\n", b.otlpURL)
	}
	if b.oauthIssuer != "" {
		fmt.Fprintf(w, "  OAuth issuer:  %s  (its access tokens too; metadata at %s)\n", b.oauthIssuer, b.resourceMetadata)
	}
	fmt.Fprintln(w)
	if b.writes {
		fmt.Fprintf(w, "Write tools are on. Turn them off with: %s writes off -db %s -tenant %s\n\n", selfCommand(), shellQuote(b.db), shellQuote(b.tenant))
	} else {
		fmt.Fprintf(w, "Write tools are off: clients can search and read. Turn them on with:\n  %s writes on -db %s -tenant %s\n\n", selfCommand(), shellQuote(b.db), shellQuote(b.tenant))
	}
	fmt.Fprintf(w, "Connect an MCP client over streamable HTTP: URL %s, header \"Authorization: Bearer %s\".\n", b.url, b.token)
	fmt.Fprintf(w, "For example, Claude Code:\n  claude mcp add --transport http notes %s --header \"Authorization: Bearer %s\"\n\n", b.url, b.token)
	cmd, built := selfBinary()
	if !built {
		fmt.Fprintf(w, "Connect a desktop client over stdio: build the binary once,\n  go build -C %s -o notes-mcp .\nthen add this to its configuration (Claude Desktop: claude_desktop_config.json):\n", shellQuote(filepath.Dir(cmd)))
	} else {
		fmt.Fprintf(w, "Connect a desktop client over stdio: add this to its configuration (Claude Desktop: claude_desktop_config.json):\n")
	}
	type stdioServer struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	// Not json.MarshalIndent, which would write the & of a URL's query
	// as \u0026.
	var snippet strings.Builder
	enc := json.NewEncoder(&snippet)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	_ = enc.Encode(map[string]map[string]stdioServer{
		"mcpServers": {"notes": {Command: cmd, Args: []string{"-stdio", "-db", abs, "-tenant", b.tenant}}},
	})
	fmt.Fprintf(w, "  %s\n\nPress Ctrl+C to stop.\n", strings.TrimSuffix(snippet.String(), "\n"))
}

// selfBinary returns the absolute path of this program, and whether it is a
// built binary rather than one go run made in a temporary directory. For
// go run, it returns the path a "go build -o notes-mcp" in the current
// directory would produce.
func selfBinary() (string, bool) {
	exe, err := os.Executable()
	if err == nil && !underTemp(exe) {
		return exe, true
	}
	wd, err := os.Getwd()
	if err != nil {
		return "notes-mcp", false
	}
	return filepath.Join(wd, "notes-mcp"), false
}

// selfCommand returns how the user runs this program again: "go run -C
// DIR ." under go run (see goRunCommand), else the command as invoked.
func selfCommand() string {
	if exe, err := os.Executable(); err == nil && !underTemp(exe) {
		return shellQuote(os.Args[0])
	}
	return goRunCommand()
}

// underTemp reports whether path lies in go run's build cache or another
// temporary directory.
func underTemp(path string) bool {
	tmp := os.TempDir()
	if t, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = t
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	rel, err := filepath.Rel(tmp, path)
	return err == nil && !strings.HasPrefix(rel, "..") && strings.Contains(rel, "go-build")
}

// displayDB returns how output and logs name the database at path: a
// SQLite file as given; a PostgreSQL URL without its password (in the
// user part or a password parameter), which shows as xxxxx.
func displayDB(path string) string {
	if !notes.IsPostgresURL(path) {
		return path
	}
	u, err := url.Parse(path)
	if err != nil {
		// notes.Open reports what is wrong with it; show nothing of it
		// but its scheme.
		scheme, _, _ := strings.Cut(path, "://")
		return scheme + "://(malformed URL)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// deriveKey derives a signing key for purpose from the bearer token
// (HMAC-SHA256), so that replicas given the same token share it.
func deriveKey(token, purpose string) []byte {
	h := hmac.New(sha256.New, []byte(token))
	h.Write([]byte(purpose))
	return h.Sum(nil)
}
