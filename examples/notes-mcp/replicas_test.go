package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/pgtest"
)

// The load of TestReplicas.
const (
	replicaCount = 3
	clientCount  = 8
	replicaCalls = 10_000 // in all, spread over the clients; 1,000 with -short
	hotNoteCount = 3      // the notes every client's writes meet on
	// writeShare is the share of writes among the calls.
	writeShare = 0.30
	// writesOffBound is how soon after "notes-mcp writes off" exits every
	// replica must refuse writes. notes-mcp reads the tenant's setting on
	// every listing and call (tenant.NoCache), so the bound is
	// immediate; 3 s leaves room for a loaded machine.
	writesOffBound = 3 * time.Second
	// replicaToken is the bearer token of every replica.
	replicaToken = "replica-test-token"
)

// busySentence is the answer of a write that still lost to other
// transactions (serialization failures, deadlocks) when its deadline
// passed: llmtool runs a write that lost again until then
// (Options.RetryFor, ten seconds, for a call without a deadline of its
// own).
func busySentence(tool string) string {
	return "The database is busy, so " + tool + " could not finish and changed nothing. Try again in a few seconds; if it is still busy, tell the user."
}

// writesOffRefusal starts the result of a call to a write tool while the
// tenant's writes are off: not listed, but callable, and refused with the
// registry's sentence, which goes on with the command that enables writes.
func writesOffRefusal(tool string) string {
	return `Tool "` + tool + `" changes data, and write tools are off in tenant "default". Ask the user to enable write tools with ` + "`"
}

// refusedText returns the text of a refused call's result.
func refusedText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.True(t, res.IsError)
	require.Len(t, res.Content, 1)
	return res.Content[0].(mcp.TextContent).Text
}

// replicaProc is one notes-mcp process serving stateless HTTP.
type replicaProc struct {
	url            string
	stdout, stderr *syncBuffer
	stop           func() error // ends the process (Ctrl+C) and waits for it
}

var endpointURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/mcp`)

// startReplica starts notes-mcp on the database and returns once it
// printed its endpoint. The process is stopped when the test ends, if the
// test did not stop it first. It may run on any goroutine.
func startReplica(t *testing.T, bin, dsn string) (*replicaProc, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-db", dsn, "-addr", "127.0.0.1:0", "-stateless", "-token", replicaToken)
	// Stopping is Ctrl+C, as a user (or an orchestrator's SIGTERM) does;
	// a process still running 10 s later is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	p := &replicaProc{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	p.stop = sync.OnceValue(func() error {
		cancel()
		<-exited
		if cmd.ProcessState != nil && cmd.ProcessState.Success() {
			return nil // Wait reports the cancelled context even so
		}
		return waitErr
	})
	t.Cleanup(func() { _ = p.stop() })

	deadline := time.After(60 * time.Second)
	for p.url == "" {
		select {
		case <-exited:
			return nil, fmt.Errorf("notes-mcp exited before serving: %v\nstdout:\n%s\nstderr:\n%s", waitErr, p.stdout, p.stderr)
		case <-deadline:
			return nil, fmt.Errorf("notes-mcp printed no endpoint within 60 s\nstdout:\n%s\nstderr:\n%s", p.stdout, p.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		p.url = endpointURL.FindString(p.stdout.String())
	}
	return p, nil
}

// spreader is a load balancer in the client: it sends each request to the
// next replica in turn. Stateless HTTP keeps nothing between requests, so
// any replica may serve any of them.
type spreader struct {
	base   http.RoundTripper
	hosts  []string
	next   atomic.Uint64
	served []atomic.Int64 // requests per replica, shared by the clients
}

func (s *spreader) RoundTrip(r *http.Request) (*http.Response, error) {
	i := int(s.next.Add(1) % uint64(len(s.hosts)))
	s.served[i].Add(1)
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = s.hosts[i], ""
	return s.base.RoundTrip(r)
}

// dialReplicas connects an MCP client over streamable HTTP whose requests
// go through rt, and initializes it.
func dialReplicas(t *testing.T, url string, rt http.RoundTripper) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + replicaToken}),
		transport.WithHTTPBasicClient(&http.Client{Transport: rt}))
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { _ = c.Close() })
	initialize(t, c)
	return c
}

// outcome is how a write call ended.
type outcome uint8

const (
	acked outcome = iota // the tool's result came back
	busy                 // answered with busySentence: nothing may be saved
	lost                 // no answer (transport error): saved at most once
)

// write is one write call of the load, checkable in the database by its
// key: the title of a created note, the token appended to a hot note or the
// name of a label set on it.
type write struct {
	tool    string
	note    string // the parent of a created note, else the note written
	key     string
	noteID  string // the created note's ID, for an acknowledged create_note
	outcome outcome
}

// loadClient is what one client did.
type loadClient struct {
	latency []time.Duration
	reads   int
	writes  []write
	created []write // acknowledged create_note calls, to read back
	fails   []string
}

func (lc *loadClient) fail(format string, args ...any) {
	if len(lc.fails) < 20 {
		lc.fails = append(lc.fails, fmt.Sprintf(format, args...))
	}
}

// run makes n calls through c, writeShare of them writes; rng picks them.
func (lc *loadClient) run(ctx context.Context, c *client.Client, id, n int, hot []string, rng *rand.Rand) {
	for seq := range n {
		if rng.Float64() < writeShare {
			lc.write(ctx, c, id, seq, hot, rng)
		} else {
			lc.read(ctx, c, hot, rng)
		}
	}
}

// call calls a tool and returns its JSON result, or the text of its
// isError answer (isErr set), or the client's error.
func (lc *loadClient) call(ctx context.Context, c *client.Client, name string, args map[string]any) (out map[string]any, text string, isErr bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	start := time.Now()
	res, err := c.CallTool(ctx, req)
	lc.latency = append(lc.latency, time.Since(start))
	if err != nil {
		return nil, "", false, err
	}
	if len(res.Content) != 1 {
		return nil, "", false, fmt.Errorf("%d content blocks", len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return nil, "", false, fmt.Errorf("content block of type %T", res.Content[0])
	}
	if res.IsError {
		return nil, tc.Text, true, nil
	}
	if err := json.Unmarshal([]byte(tc.Text), &out); err != nil {
		return nil, "", false, fmt.Errorf("result is not a JSON object: %w: %s", err, tc.Text)
	}
	return out, tc.Text, false, nil
}

// read makes one read call; reads must all succeed. Some read back the
// client's own acknowledged notes: they went through another replica, and
// must be there.
func (lc *loadClient) read(ctx context.Context, c *client.Client, hot []string, rng *rand.Rand) {
	lc.reads++
	h := hot[rng.IntN(len(hot))]
	var (
		name  string
		args  map[string]any
		check func(out map[string]any) error
	)
	switch p := rng.Float64(); {
	case p < 0.35 && len(lc.created) > 0:
		w := lc.created[rng.IntN(len(lc.created))]
		if p < 0.20 {
			name, args = "get_note", map[string]any{"noteId": w.noteID}
			check = func(out map[string]any) error {
				if out["title"] != w.key {
					return fmt.Errorf("title %v, want %q", out["title"], w.key)
				}
				return nil
			}
		} else {
			name, args = "search_notes", map[string]any{"query": w.key}
			check = func(out map[string]any) error {
				res, _ := out["results"].([]any)
				if len(res) != 1 || res[0].(map[string]any)["noteId"] != w.noteID {
					return fmt.Errorf("results %v, want the one note %s", res, w.noteID)
				}
				return nil
			}
		}
	case p < 0.15:
		name, args = "get_note", map[string]any{"noteId": h}
	case p < 0.35:
		name, args = "search_notes", map[string]any{"query": "flour"}
	case p < 0.55:
		name, args = "get_child_notes", map[string]any{"noteId": h, "limit": 5}
	case p < 0.65:
		name, args = "get_subtree", map[string]any{"noteId": "root", "depth": 2}
	case p < 0.85:
		name, args = "get_note_content", map[string]any{"noteId": h, "maxChars": 2000}
	default:
		name, args = "get_attributes", map[string]any{"noteId": h}
	}
	out, text, isErr, err := lc.call(ctx, c, name, args)
	switch {
	case err != nil:
		lc.fail("%s %v: %v", name, args, err)
	case isErr:
		lc.fail("%s %v answered: %s", name, args, text)
	case check != nil:
		if err := check(out); err != nil {
			lc.fail("%s %v: %v", name, args, err)
		}
	}
}

// write makes one write call on the hot notes: it creates a note under one
// (40%), appends a token to one (45%) or sets a label on one (15%), each
// with a key no other call uses.
func (lc *loadClient) write(ctx context.Context, c *client.Client, id, seq int, hot []string, rng *rand.Rand) {
	w := write{note: hot[rng.IntN(len(hot))]}
	var args map[string]any
	switch p := rng.Float64(); {
	case p < 0.40:
		w.tool, w.key = "create_note", fmt.Sprintf("c%dn%05d", id, seq)
		args = map[string]any{"parentNoteId": w.note, "title": w.key, "content": "<p>made by the replica test</p>"}
	case p < 0.85:
		w.tool, w.key = "append_to_note", fmt.Sprintf("tok%d_%05d", id, seq)
		args = map[string]any{"noteId": w.note, "content": "<p>" + w.key + "</p>"}
	default:
		w.tool, w.key = "set_attribute", fmt.Sprintf("a%d_%05d", id, seq)
		args = map[string]any{"noteId": w.note, "name": w.key, "value": "v"}
	}
	out, text, isErr, err := lc.call(ctx, c, w.tool, args)
	switch {
	case err != nil:
		w.outcome = lost
		lc.fail("%s %v: no answer: %v", w.tool, args, err)
	case isErr && text == busySentence(w.tool):
		w.outcome = busy
	case isErr:
		w.outcome = busy // nothing may be saved: the check holds it to that
		lc.fail("%s %v answered: %s", w.tool, args, text)
	default:
		w.outcome = acked
		if w.tool == "create_note" {
			w.noteID, _ = out["noteId"].(string)
			lc.created = append(lc.created, w)
		}
	}
	lc.writes = append(lc.writes, w)
}

// auditStats are what the replicas' logs say: the "llmtool call" audit
// lines, and the errors of the writes that gave up.
type auditStats struct {
	calls, committedWrites, retried, extraRuns int
	attempts                                   map[int]int    // calls by runs, for those run more than once
	outcomes                                   map[string]int // calls by outcome
	gaveUp                                     map[string]int // writes that gave up, by tool
}

var (
	logAttr = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S*)`)
	// gaveUp is the error line of a write whose runs all lost to
	// concurrent writes (serialization failures, 40001, or deadlocks,
	// 40P01) until its deadline.
	gaveUp = regexp.MustCompile(`^time=\S+ level=ERROR msg="llmtool: tool failed" tool=(\w+) err="llmtool: tool (\w+): \d+ runs over \S+: the database stayed busy with other writes until the call's deadline; nothing was saved: .*\(SQLSTATE 40(?:001|P01)\)"$`)
)

// parseAudit adds a replica's log to into. A warning or error other than
// a write that gave up is an error.
func parseAudit(stderr string, into *auditStats) error {
	for line := range strings.Lines(stderr) {
		line = strings.TrimSuffix(line, "\n")
		if m := gaveUp.FindStringSubmatch(line); m != nil && m[1] == m[2] {
			into.gaveUp[m[1]]++
			continue
		}
		if strings.Contains(line, " level=WARN ") || strings.Contains(line, " level=ERROR ") || strings.Contains(line, "panic") {
			return fmt.Errorf("unexpected log line: %s", line)
		}
		if !strings.Contains(line, ` msg="llmtool call" `) {
			continue
		}
		into.calls++
		attrs := map[string]string{}
		for _, m := range logAttr.FindAllStringSubmatch(line, -1) {
			attrs[m[1]] = m[2]
		}
		into.outcomes[attrs["outcome"]]++
		if attrs["write"] == "true" && attrs["committed"] == "true" {
			into.committedWrites++
		}
		if n, err := strconv.Atoi(attrs["attempts"]); err == nil && n > 1 {
			into.retried++
			into.extraRuns += n - 1
			into.attempts[n]++
		}
	}
	return nil
}

// TestReplicas runs three notes-mcp processes serving stateless HTTP on one
// PostgreSQL database, and eight clients whose calls a load balancer
// spreads over them: 10,000 calls, 30% of them writes meeting on three hot
// notes. Every acknowledged write is saved exactly once, every write
// answered busy (the sentence, exactly) saved not at all, reads see each
// client's acknowledged notes through any replica, and any other error
// fails the test. Then "notes-mcp writes off" through one database makes
// every replica refuse writes within writesOffBound, while reads go on.
func TestReplicas(t *testing.T) {
	dsn := pgtest.DSN(t)
	bin := buildBinary(t)
	total := replicaCalls
	if testing.Short() {
		total = 1_000
	}

	stdout, stderr, code := runBinary(t, bin, "writes", "on", "-db", dsn)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "Write tools are on for tenant \"default\" in "+dsn+".\nRunning servers apply the change on their next listing or call.\n", stdout)

	// The replicas start side by side, as behind a load balancer.
	started := time.Now()
	replicas := make([]*replicaProc, replicaCount)
	startErrs := make([]error, replicaCount)
	var startWG sync.WaitGroup
	for i := range replicas {
		startWG.Go(func() { replicas[i], startErrs[i] = startReplica(t, bin, dsn) })
	}
	startWG.Wait()
	hosts := make([]string, replicaCount)
	for i, r := range replicas {
		require.NoError(t, startErrs[i], "replica %d", i)
		require.Regexp(t, `^http://127\.0\.0\.1:\d+/mcp$`, r.url)
		u, err := url.Parse(r.url)
		require.NoError(t, err)
		hosts[i] = u.Host
	}
	t.Logf("three replicas serving after %v", time.Since(started).Round(time.Millisecond))

	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = clientCount
	spread := &spreader{base: base, hosts: hosts, served: make([]atomic.Int64, replicaCount)}

	// The hot notes, made through the replicas like everything else.
	setup := dialReplicas(t, replicas[0].url, spread)
	require.Equal(t, slices.Sorted(slices.Values(append(slices.Clone(readTools), writeTools...))), listTools(t, setup))
	hot := make([]string, hotNoteCount)
	for i := range hot {
		out := callOK(t, setup, "create_note", map[string]any{"parentNoteId": "root", "title": fmt.Sprintf("Hot %d", i+1), "content": "<p>hot</p>"})
		hot[i] = out["noteId"].(string)
	}

	// Watch the database's connections during the load.
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	var peakConns atomic.Int64
	sessions := func() int64 {
		var n int64
		_ = db.QueryRow(`SELECT sessions FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
		return n
	}
	sessionsBefore := sessions()
	watchCtx, stopWatch := context.WithCancel(t.Context())
	var watchWG sync.WaitGroup
	watchWG.Go(func() {
		for {
			var n int64
			if db.QueryRowContext(watchCtx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()`).Scan(&n) == nil && n > peakConns.Load() {
				peakConns.Store(n)
			}
			select {
			case <-watchCtx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})

	// The load: eight clients, their requests spread over the replicas.
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	clients := make([]*client.Client, clientCount)
	for i := range clients {
		clients[i] = dialReplicas(t, replicas[i%replicaCount].url, spread)
	}
	for i := range spread.served {
		spread.served[i].Store(0)
	}
	loads := make([]*loadClient, clientCount)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range clients {
		loads[i] = &loadClient{}
		n := total / clientCount
		if i < total%clientCount {
			n++
		}
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() { loads[i].run(t.Context(), clients[i], i, n, hot, rng) })
	}
	wg.Wait()
	elapsed := time.Since(began)
	stopWatch()
	watchWG.Wait()

	var (
		latency              []time.Duration
		writes               []write
		reads, nAcked, nBusy int
		nLost                int
		fails                []string
	)
	byTool := map[string][3]int{}
	for _, lc := range loads {
		latency = append(latency, lc.latency...)
		writes = append(writes, lc.writes...)
		reads += lc.reads
		fails = append(fails, lc.fails...)
	}
	for _, w := range writes {
		counts := byTool[w.tool]
		counts[w.outcome]++
		byTool[w.tool] = counts
		switch w.outcome {
		case acked:
			nAcked++
		case busy:
			nBusy++
		case lost:
			nLost++
		}
	}
	slices.Sort(latency)
	pct := func(p float64) time.Duration { return latency[min(len(latency)-1, int(p*float64(len(latency))))] }
	t.Logf("%d calls (%d reads, %d writes) by %d clients in %v: %.0f calls/s; latency p50 %v, p99 %v, max %v",
		len(latency), reads, len(writes), clientCount, elapsed.Round(time.Millisecond), float64(len(latency))/elapsed.Seconds(),
		pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), latency[len(latency)-1].Round(time.Microsecond))
	for _, tool := range []string{"create_note", "append_to_note", "set_attribute"} {
		c := byTool[tool]
		t.Logf("  %s: %d acknowledged, %d busy, %d without an answer", tool, c[acked], c[busy], c[lost])
	}
	served := make([]int64, replicaCount)
	for i := range served {
		served[i] = spread.served[i].Load()
	}
	// The counts include the test's own connection; PostgreSQL's
	// statistics may lag by a second.
	t.Logf("requests served per replica %v; database connections: peak %d open, about %d sessions opened during the load",
		served, peakConns.Load()-1, sessions()-sessionsBefore)
	require.Empty(t, fails, "calls that failed otherwise than busy")
	require.Equal(t, total, len(latency))
	for i, n := range served {
		require.NotZero(t, n, "replica %d served none of the load", i)
	}

	// Every acknowledged write is in the database exactly once, every busy
	// one not at all, and nothing else is there.
	checkWrites(t, db, hot, writes)
	require.Zero(t, nLost, "calls without an answer over loopback")

	// writes off, run once against the database, reaches every replica.
	stdout, stderr, code = runBinary(t, bin, "writes", "off", "-db", dsn)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "Write tools are off for tenant \"default\" in "+dsn+".\nRunning servers apply the change on their next listing or call.\n", stdout)
	off := time.Now()
	var lateAcked []string // writes acknowledged after writes off, within the bound
	offCalls, offRefused := 0, 0
	for i, r := range replicas {
		c := dialReplicas(t, r.url, base) // this replica only
		for try := 0; ; try++ {
			title := fmt.Sprintf("late%d_%d", i, try)
			req := mcp.CallToolRequest{}
			req.Params.Name = "create_note"
			req.Params.Arguments = map[string]any{"parentNoteId": "root", "title": title}
			res, err := c.CallTool(t.Context(), req)
			offCalls++
			require.NoError(t, err)
			if res.IsError {
				require.True(t, strings.HasPrefix(refusedText(t, res), writesOffRefusal("create_note")), "replica %d: %s", i, refusedText(t, res))
				offRefused++
				t.Logf("replica %d refuses writes %v after writes off (%d writes acknowledged before)", i, time.Since(off).Round(time.Millisecond), try)
				break
			}
			require.False(t, res.IsError, "%v", res.Content)
			lateAcked = append(lateAcked, title)
			require.Less(t, time.Since(off), writesOffBound, "replica %d still writes", i)
		}
		// Every write tool is refused, each with the registry's sentence,
		// and only the read tools are listed; reads go on.
		for _, tool := range writeTools {
			req := mcp.CallToolRequest{}
			req.Params.Name = tool
			req.Params.Arguments = map[string]any{"noteId": hot[0], "parentNoteId": "root", "title": "late",
				"content": "<p>late</p>", "name": "late", "oldText": "hot", "newText": "late", "attributeId": "x"}
			res, err := c.CallTool(t.Context(), req)
			require.NoError(t, err)
			offCalls++
			offRefused++
			require.True(t, strings.HasPrefix(refusedText(t, res), writesOffRefusal(tool)), "replica %d: %s", i, refusedText(t, res))
		}
		require.Equal(t, readTools, listTools(t, c), "replica %d lists the read tools only", i)
		require.Equal(t, "Hot 1", callOK(t, c, "get_note", map[string]any{"noteId": hot[0]})["title"], "replica %d still reads", i)
		offCalls++
	}
	var late int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM notes WHERE title LIKE 'late%' AND isDeleted = 0`).Scan(&late))
	require.Equal(t, len(lateAcked), late, "the writes acknowledged after writes off, and no other")
	var hotNote string
	require.NoError(t, db.QueryRow(`SELECT title || content FROM notes WHERE noteId = $1 AND isDeleted = 0`, hot[0]).Scan(&hotNote))
	require.True(t, strings.HasPrefix(hotNote, "Hot 1<p>hot</p>"), "the refused writes left the hot note as it was")
	require.NotContains(t, hotNote, "late")

	// The replicas stop cleanly (Ctrl+C, exit status 0). Their logs hold
	// one audit line per call: the committed writes are exactly the
	// acknowledged ones, the failed calls exactly the busy answers, each
	// also logged as a write whose runs lost to serialization failures or
	// deadlocks until its deadline; no other warning or error.
	stats := auditStats{attempts: map[int]int{}, outcomes: map[string]int{}, gaveUp: map[string]int{}}
	for i, r := range replicas {
		require.NoError(t, r.stop(), "replica %d; stderr:\n%s", i, r.stderr)
		require.NoError(t, parseAudit(r.stderr.String(), &stats), "replica %d", i)
	}
	t.Logf("audit lines: %d calls, outcomes %v; %d committed writes; %d writes run more than once (%d more runs; calls by runs %v)",
		stats.calls, stats.outcomes, stats.committedWrites, stats.retried, stats.extraRuns, stats.attempts)
	t.Logf("busy answers: %d of %d writes (%.1f%%)", nBusy, len(writes), 100*float64(nBusy)/float64(len(writes)))
	require.Equal(t, hotNoteCount+total+offCalls, stats.calls, "one audit line per call")
	outcomes := map[string]int{"ok": hotNoteCount + total - nBusy + offCalls - offRefused, "refused": offRefused}
	if nBusy > 0 { // writes run again until their deadline: busy answers are rare
		outcomes["internal"] = nBusy
	}
	require.Equal(t, outcomes, stats.outcomes)
	require.Equal(t, hotNoteCount+nAcked+len(lateAcked), stats.committedWrites, "committed writes: the hot notes, the acknowledged writes")
	busyByTool := map[string]int{}
	for tool, c := range byTool {
		if c[busy] > 0 {
			busyByTool[tool] = c[busy]
		}
	}
	require.Equal(t, busyByTool, stats.gaveUp, "writes logged as given up, by tool: the busy answers")
}

// checkWrites checks the database against the load's writes: a note per
// acknowledged create_note, under its parent, with the ID the call
// returned; a token per acknowledged append_to_note, once, in its note; a
// label per acknowledged set_attribute; none for a busy write; at most one
// for a write without an answer; and no note, token or label no call
// made.
func checkWrites(t *testing.T, db *sql.DB, hot []string, writes []write) {
	t.Helper()
	type place struct{ note, id string }
	found := map[string][]place{} // by key
	rows, err := db.Query(`SELECT n.title, n.noteId, b.parentNoteId FROM notes n
		JOIN branches b ON b.noteId = n.noteId AND b.isDeleted = 0
		WHERE n.isDeleted = 0 AND n.title ~ '^c[0-9]+n[0-9]+$'`)
	require.NoError(t, err)
	for rows.Next() {
		var title, id, parent string
		require.NoError(t, rows.Scan(&title, &id, &parent))
		found[title] = append(found[title], place{note: parent, id: id})
	}
	require.NoError(t, rows.Err())

	token := regexp.MustCompile(`tok\d+_\d+`)
	for _, h := range hot {
		var content string
		require.NoError(t, db.QueryRow(`SELECT content FROM notes WHERE noteId = $1`, h).Scan(&content))
		for _, k := range token.FindAllString(content, -1) {
			found[k] = append(found[k], place{note: h})
		}
	}

	rows, err = db.Query(`SELECT name, noteId FROM attributes WHERE isDeleted = 0 AND name ~ '^a[0-9]+_[0-9]+$'`)
	require.NoError(t, err)
	for rows.Next() {
		var name, id string
		require.NoError(t, rows.Scan(&name, &id))
		found[name] = append(found[name], place{note: id})
	}
	require.NoError(t, rows.Err())

	var bad []string
	for _, w := range writes {
		got := found[w.key]
		delete(found, w.key)
		switch {
		case w.outcome == acked && len(got) != 1:
			bad = append(bad, fmt.Sprintf("acknowledged %s %s found %d times", w.tool, w.key, len(got)))
		case w.outcome == acked && got[0].note != w.note:
			bad = append(bad, fmt.Sprintf("acknowledged %s %s is on note %s, not %s", w.tool, w.key, got[0].note, w.note))
		case w.outcome == acked && w.tool == "create_note" && got[0].id != w.noteID:
			bad = append(bad, fmt.Sprintf("created note %s has ID %s; the call returned %s", w.key, got[0].id, w.noteID))
		case w.outcome == busy && len(got) != 0:
			bad = append(bad, fmt.Sprintf("%s %s answered busy, yet saved %d times", w.tool, w.key, len(got)))
		case w.outcome == lost && len(got) > 1:
			bad = append(bad, fmt.Sprintf("%s %s without an answer saved %d times", w.tool, w.key, len(got)))
		}
	}
	for k, got := range found {
		bad = append(bad, fmt.Sprintf("%s in the database %d times, from no call", k, len(got)))
	}
	require.Empty(t, bad)
}
