package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	chatrun "github.com/llmtool/llmtool/chatadapter/run"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// The page in a real headless Chromium (Debian's chromium package),
// driven by chromedp, against the app served on a loopback port. Each
// step waits on a condition of the page (chromedp's polls), never on
// time. Screenshots of the main states are taken on the way and checked;
// UPDATE_SCREENSHOTS=1 writes them to testdata/, where the README shows
// them.

const chromium = "/usr/bin/chromium"

// newBrowser starts Chromium for the test, with flags besides the usual
// ones, or skips it where there is none (CI, which installs it, fails
// instead).
func newBrowser(t *testing.T, flags ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the browser tests need Chromium at %s; .ci/run installs it (apt-get install -y chromium): %v", chromium, err)
		}
		t.Skipf("the browser tests need Chromium at %s (apt-get install chromium); skipped", chromium)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1400, 860))
	opts = append(opts, flags...)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	_, err := chromedp.Run(bctx, chromedp.Evaluate[chromedp.Void]("1")) // starts the browser, for the contexts below
	require.NoError(t, err)
	return bctx
}

// page is one person's tab, in a browser context of its own (its own
// cookies), signed in.
type page struct {
	t   *testing.T
	ctx context.Context
	s   *site
}

func (s *site) open(t *testing.T, browser context.Context, user string) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &page{t: t, ctx: ctx, s: s}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1400, 860), chromedp.Navigate(s.srv.URL+"/")))
	p.do(chromedp.Click(chromedp.CSS("#login-"+user)), chromedp.WaitVisible(chromedp.CSS("#chat-form")))
	p.ready()
	return p
}

// do runs steps, each wait bounded by a deadline that only ends a hung
// test.
func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, steps...))
}

// until waits until the JavaScript expression is true.
func (p *page) until(expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+expr+")", chromedp.WithPollingTimeout(25*time.Second)))
		if err != nil && (strings.Contains(err.Error(), "navigated") || strings.Contains(err.Error(), "Cannot find context")) && ctx.Err() == nil {
			continue // a poll does not survive the page's navigation: start again on the new page
		}
		require.NoError(p.t, err, "waiting for %s", expr)
		return
	}
}

func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(p.t, err, expr)
	return v
}

// ready waits until the page has drawn its conversation and listens for
// changes.
func (p *page) ready() {
	p.t.Helper()
	p.until(`document.body.dataset.ready === "1" && document.body.dataset.live === "1" && !!document.querySelector(".tree-item")`)
}

func (p *page) reload() {
	p.t.Helper()
	p.do(chromedp.Reload())
	p.ready()
}

// say sends a message and waits until its turn ends.
func (p *page) say(text string) {
	p.t.Helper()
	p.send(text)
	p.idle()
}

func (p *page) send(text string) {
	p.t.Helper()
	p.do(chromedp.SendKeys(chromedp.CSS("#chat-input"), text), chromedp.Click(chromedp.CSS("#send")))
	p.until(`document.body.dataset.busy === "1" || [...document.querySelectorAll(".msg.user")].some(m => m.textContent === ` + js(text) + `)`)
}

// idle waits until no turn runs.
func (p *page) idle() {
	p.t.Helper()
	p.until(`document.body.dataset.busy !== "1"`)
}

// js is s as a JavaScript string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func inTree(title string) string {
	return `[...document.querySelectorAll(".tree-item")].some(a => a.textContent === ` + js(title) + `)`
}

// lastCard is the expression of the last card of tool.
func lastCard(tool string) string {
	return `[...document.querySelectorAll('.card[data-tool="` + tool + `"]')].at(-1)`
}

// text is the text of the last element sel matches, "" if none.
func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, `([...document.querySelectorAll(`+js(sel)+`)].at(-1) || {textContent: ""}).textContent`)
}

// screenshot takes the page as a PNG and checks it; with
// UPDATE_SCREENSHOTS=1 it writes it to testdata/name.
func (p *page) screenshot(name string) {
	p.t.Helper()
	b, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	require.NoError(p.t, err)
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	require.NoError(p.t, err, "a screenshot is a PNG")
	require.Equal(p.t, [2]int{1400, 860}, [2]int{cfg.Width, cfg.Height})
	if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		require.NoError(p.t, os.WriteFile(filepath.Join("testdata", name), b, 0o644))
	}
}

// Ask for a note: its card, then the tree. Delete it: the approval shows
// the rows in the host's words; Deny leaves the note, Approve removes it, also after a
// reload; Undo brings it back; the conversation survives reloads.
func TestBrowserCreateApproveUndo(t *testing.T) {
	s := newSite(t)
	p := s.open(t, newBrowser(t), "ana")
	require.Equal(t, "Model: the scripted model (no OPENAI_MODEL set)", p.text("#model-label"))

	p.say("create a note called Ideas under Projects")
	p.until(lastCard("create_note") + `.classList.contains("ok")`)
	require.Equal(t, "Create note", p.text(`.card[data-tool="create_note"] .name`))
	require.Equal(t, "done", p.text(`.card[data-tool="create_note"] .status`))
	require.Equal(t, `Changed: Create note "Ideas": type "text"; Create branch: under "projects"`, p.text(`.card[data-tool="create_note"] .summary`))
	require.Zero(t, eval[int](p, lastCard("create_note")+`.querySelectorAll(".changes").length`), "the rows in the store's words need no unfolding")
	require.Equal(t, `Created "Ideas" under "Projects".`, p.text(".msg.assistant"))
	p.until(inTree("Ideas"))
	p.do(chromedp.Click(chromedp.CSS(`.tree-item[data-id="projects"]`)))
	p.until(`document.querySelector("#note-title").textContent === "Projects"`)
	p.screenshot("created.png")

	// Delete asks; the page shows the rows as a person says them; a reload keeps the
	// question open; Deny leaves the note.
	p.say("delete Ideas")
	p.until(lastCard("delete_note") + `.querySelector(".approve:not([disabled])")`)
	require.Equal(t, "needs your approval", p.text(`.card[data-tool="delete_note"] .status`))
	require.Equal(t, `Delete note "Ideas".`, p.text(`.card[data-tool="delete_note"] .prompt`))
	// The rows read in the host's words (notes.Tools' Entity
	// declarations), not as the table's IDs, timestamps and flags.
	require.Equal(t, "Delete note \"Ideas\": type \"text\"\nDelete branch: under \"projects\"",
		eval[string](p, lastCard("delete_note")+`.querySelector(".preview").innerText`))
	card := eval[string](p, lastCard("delete_note")+`.innerText`)
	for _, dev := range []string{"rowid", "dateModified", "isDeleted", "noteId", "branchId", "update notes", "→"} {
		require.NotContains(t, card, dev)
	}
	require.True(t, eval[bool](p, `document.querySelector("#chat-input").disabled`), "the chat waits for the answer")
	p.screenshot("approval.png")
	p.reload()
	p.until(lastCard("delete_note") + `.querySelector(".deny:not([disabled])")`)
	p.do(chromedp.Click(chromedp.CSS(`.deny:not([disabled])`)))
	p.until(lastCard("delete_note") + `.classList.contains("failed")`)
	p.idle()
	require.Equal(t, "not approved", p.text(`.card[data-tool="delete_note"] .status`))
	require.Equal(t, "The user denied this change. Nothing was saved. Ask the user what to do instead.", p.text(`.card[data-tool="delete_note"] .error`))
	require.Equal(t, `All right, I left "Ideas" as it was.`, p.text(".msg.assistant"))
	require.Equal(t, "You denied this change.", p.text(`.card[data-tool="delete_note"] .answer`))
	require.True(t, eval[bool](p, inTree("Ideas")))
	require.Equal(t, 1, s.noteCount("ana", "Ideas"))

	// Approve removes it.
	p.say("delete Ideas")
	p.until(lastCard("delete_note") + `.querySelector(".approve:not([disabled])")`)
	p.do(chromedp.Click(chromedp.CSS(`.approve:not([disabled])`)))
	p.until(lastCard("delete_note") + `.classList.contains("ok")`)
	p.idle()
	p.until("!" + inTree("Ideas"))
	require.Zero(t, s.noteCount("ana", "Ideas"))
	require.Equal(t, `Deleted "Ideas".`, p.text(".msg.assistant"))
	require.Equal(t, "You approved this change.", p.text(`.card[data-tool="delete_note"] .answer`))
	require.Equal(t, "Saved as approved.", p.text(`.card.ok[data-tool="delete_note"] .summary`))

	// Undo brings it back, and says so on the card.
	p.do(chromedp.Click(chromedp.CSS(`.card.ok[data-tool="delete_note"] .undo`)))
	p.until(lastCard("delete_note") + `.querySelector(".undo").textContent === "Undone"`)
	p.until(inTree("Ideas"))
	require.Equal(t, 1, s.noteCount("ana", "Ideas"))
	p.screenshot("undone.png")

	// A reload draws the same conversation.
	before := eval[string](p, `document.querySelector("#chat-log").innerText`)
	p.reload()
	require.Equal(t, before, eval[string](p, `document.querySelector("#chat-log").innerText`))
	require.True(t, eval[bool](p, `document.querySelector(".card.undone .undo").disabled`))
	require.Equal(t, 1.0, eval[float64](p, `(b => { let o = 1; for (let e = b; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity); return o; })(document.querySelector(".card.undone .undo"))`), "the Undone button is not faded")
	require.Equal(t, 3, eval[int](p, `document.querySelectorAll(".msg.user").length`))
}

// A write a guard refuses shows the sentence the model reads.
func TestBrowserGuardRefusal(t *testing.T) {
	s := newSite(t)
	p := s.open(t, newBrowser(t), "ana")
	p.say("delete Shared Notes")
	p.until(lastCard("delete_note") + `.classList.contains("failed")`)
	require.Equal(t, "failed", p.text(`.card[data-tool="delete_note"] .status`))
	require.Equal(t, `Note "_share" (noteId) is a system note; delete_note must not change it. Leave system notes as they are and choose another note.`,
		p.text(`.card[data-tool="delete_note"] .error`))
	require.True(t, eval[bool](p, inTree("Shared Notes")))
	p.screenshot("refused.png")
}

// Stop while the model writes its call: the turn ends, nothing is
// written, the conversation keeps what finished and goes on. The call
// showed as the model wrote it, and stays as not sent; the words before
// it stay, marked cut.
func TestBrowserStop(t *testing.T) {
	s := newSite(t)
	p := s.open(t, newBrowser(t), "ana")
	conv := eval[int64](p, `Number(document.body.dataset.conversation)`)
	p.send("slowly create a note called Draft under Projects")
	s.waitHold() // the model is halfway through writing create_note's arguments
	p.until(`[...document.querySelectorAll(".msg.assistant")].some(m => m.textContent === 'Creating "Draft" under "Projects".')`)
	p.until(`!!document.querySelector('.card.forming[data-forming="create_note"]')`)
	require.Equal(t, "Create note", p.text(`.card.forming .name`))
	require.Equal(t, "writing the call…", p.text(`.card.forming .status`))
	require.True(t, strings.HasPrefix(p.text(`.card.forming .args-forming`), `{"parentNoteId":`), "the arguments so far")
	p.screenshot("writing.png")
	p.do(chromedp.Click(chromedp.CSS("#stop")))
	p.until(`!!document.querySelector(".msg.stopped")`)
	p.idle()
	s.waitSaved(conv)
	require.Zero(t, eval[int](p, `document.querySelectorAll('.card[data-tool="create_note"]').length`), "the call never started")
	require.Zero(t, s.noteCount("ana", "Draft"))
	require.False(t, eval[bool](p, inTree("Draft")))
	stopped := func() {
		t.Helper()
		require.Equal(t, `Creating "Draft" under "Projects". … stopped here`, p.text(".msg.assistant.cut"))
		require.Equal(t, "not sent: stopped", p.text(`.card.unsent[data-forming="create_note"] .status`))
		require.Zero(t, eval[int](p, `document.querySelectorAll(".card.forming").length`))
	}
	stopped()
	p.screenshot("stopped.png")

	p.reload()
	require.Equal(t, "Stopped. What finished before stays; nothing else was saved.", p.text(".msg.stopped"))
	require.Equal(t, "done", p.text(`.card[data-tool="find_note"] .status`))
	stopped()
	p.say("create a note called Final under Projects")
	p.until(lastCard("create_note") + `.classList.contains("ok")`)
	p.until(inTree("Final"))
	require.Zero(t, s.noteCount("ana", "Draft"))
}

// Stop in the middle of the model's answer: the
// words the person saw stay, marked cut, also
// after a reload; the model's thinking shows folded apart, never in the
// answer; and the conversation goes on from the cut answer.
func TestBrowserStopMidAnswer(t *testing.T) {
	s := newSite(t)
	p := s.open(t, newBrowser(t), "ana")
	conv := eval[int64](p, `Number(document.body.dataset.conversation)`)
	p.send("slowly list notes")
	s.waitHold() // the model has written half its answer
	p.until(`[...document.querySelectorAll(".msg.assistant")].some(m => m.textContent === "At the top: Projects, Recipes, ")`)
	p.do(chromedp.Click(chromedp.CSS("#stop")))
	p.until(`!!document.querySelector(".msg.stopped")`)
	p.idle()
	s.waitSaved(conv)
	cut := func() {
		t.Helper()
		require.Equal(t, "At the top: Projects, Recipes,  … stopped here", p.text(".msg.assistant.cut"))
		require.Equal(t, " … stopped here", p.text(".msg.assistant.cut .cut-mark"))
		require.Equal(t, []string{"thinkingThe person wants the notes: I read the root's children first.", "thinking5 notes at the top; I name them in order."},
			eval[[]string](p, `[...document.querySelectorAll("details.thinking")].map(d => d.textContent)`))
		require.False(t, eval[bool](p, `[...document.querySelectorAll("details.thinking")].some(d => d.open)`), "the thinking is folded")
		require.False(t, eval[bool](p, `[...document.querySelectorAll(".msg.assistant")].some(m => m.textContent.includes("notes at the top"))`))
		require.Equal(t, "done", p.text(`.card[data-tool="get_child_notes"] .status`))
	}
	cut()
	p.do(chromedp.Click(chromedp.CSS("details.thinking:last-of-type summary")))
	p.screenshot("cut.png")

	p.reload()
	cut()
	p.say("list notes")
	require.Equal(t, "At the top: Projects, Recipes, Secret, Hidden Notes, Shared Notes.", p.text(".msg.assistant"))
	require.Equal(t, 1, eval[int](p, `document.querySelectorAll(".msg.assistant.cut").length`))
}

// An attempt that fails after the model's thinking but before its words
// is retried: the page drops that attempt's thinking for the next one's,
// also after a reload.
func TestBrowserRetryDropsThinking(t *testing.T) {
	chunk := func(delta string) string {
		return `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	var attempts atomic.Int32 // the model's requests
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if attempts.Add(1) == 1 {
			fmt.Fprint(w, chunk(`{"role":"assistant","reasoning_content":"First try."}`))
			fmt.Fprint(w, `data: {"error":{"message":"The server had an error.","type":"server_error"}}`+"\n\n")
			return
		}
		fmt.Fprint(w, chunk(`{"role":"assistant","reasoning_content":"Second try."}`), chunk(`{"content":"Hello."}`))
		fmt.Fprint(w, `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(model.Close)
	s := &site{t: t, dir: t.TempDir(), gate: newGate(), saved: make(chan int64, 16)}
	s.start(chatrun.Endpoint{BaseURL: model.URL + "/v1", Model: "m"})
	p := s.open(t, newBrowser(t), "ana")
	p.say("hello")
	p.until(`[...document.querySelectorAll(".msg.assistant")].some(m => m.textContent === "Hello.")`)
	retried := func() {
		t.Helper()
		require.Equal(t, []string{"thinkingSecond try."}, eval[[]string](p, `[...document.querySelectorAll("details.thinking")].map(d => d.textContent)`))
		require.Equal(t, 1, eval[int](p, `document.querySelectorAll(".msg.status").length`), "the retry's line")
	}
	retried()
	p.reload()
	retried()
	require.Equal(t, int32(2), attempts.Load())
}

// Two people at once, each in a browser context of their own: each sees
// their own notes and conversations only.
func TestBrowserTwoUsers(t *testing.T) {
	s := newSite(t)
	browser := newBrowser(t)
	ana, ben := s.open(t, browser, "ana"), s.open(t, browser, "ben")
	require.Equal(t, "Ana", ana.text("#user"))
	require.Equal(t, "Ben", ben.text("#user"))

	ana.send("create a note called Ana's plan under Projects")
	ben.send("create a note called Ben's list under Recipes")
	ana.idle()
	ben.idle()
	ana.until(inTree("Ana's plan"))
	ben.until(inTree("Ben's list"))
	require.False(t, eval[bool](ana, inTree("Ben's list")))
	require.False(t, eval[bool](ben, inTree("Ana's plan")))

	// Ben's model cannot find Ana's note, nor can Ben read her conversation.
	ben.say("show Ana's plan")
	ben.until(lastCard("find_note") + `.classList.contains("failed")`)
	require.Equal(t, `No note has a title matching "Ana's plan". Try other words of the title, or call search_notes to search titles and content.`, ben.text(`.card[data-tool="find_note"] .error`))
	anaConv := eval[int64](ana, `Number(document.body.dataset.conversation)`)
	require.Equal(t, 404, eval[int](ben, fmt.Sprintf(`fetch("/api/conversations/%d").then(r => r.status)`, anaConv)))
	require.Equal(t, []string{"create a note called Ben's list under Recipes"}, eval[[]string](ben, `[...document.querySelectorAll("#conversations option")].map(o => o.textContent)`))
	ben.screenshot("ben.png")

	// Ben signs out: the sign-in page, and his session is gone from the
	// server; Ana's stays.
	ben.do(chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login")))
	require.Equal(t, 1, s.sessions())
	require.True(t, eval[bool](ana, `fetch("/api/tree").then(r => r.ok)`))
}

// A change made over MCP, by a real MCP client on /mcp with the user's
// token, shows in the page.
func TestBrowserMCPChange(t *testing.T) {
	s := newSite(t)
	p := s.open(t, newBrowser(t), "ana")
	c, err := client.NewStreamableHttpClient(s.srv.URL+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + s.app.mcpToken("ana")}))
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { _ = c.Close() })
	hello := mcp.InitializeRequest{}
	hello.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	hello.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	_, err = c.Initialize(t.Context(), hello)
	require.NoError(t, err)

	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "create_note", map[string]any{"parentNoteId": "projects", "title": "From MCP"}
	res, err := c.CallTool(t.Context(), req)
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	p.until(inTree("From MCP"))
	p.until(`!document.querySelector("#toast").hidden`)
	require.Equal(t, "An MCP client changed the notes (create_note)", p.text("#toast"))
	require.Zero(t, s.noteCount("ben", "From MCP"))
	p.screenshot("mcp.png")

	// Ben's token reaches Ben's notes; no token reaches none.
	status, _ := s.call(http.DefaultClient, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	require.Equal(t, http.StatusUnauthorized, status)
}

// The attacks of other sites' pages, in the browser: a name rebound to
// 127.0.0.1 (DNS rebinding; Chromium's host resolver rules stand in for
// the attacker's DNS) gets the refusal instead of the page, and another
// site's form that posts to /login signs no one in.
func TestBrowserOtherSites(t *testing.T) {
	s := newSite(t)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<form method="post" action="%s/login"><input name="user" value="ana"></form><script>document.forms[0].submit()</script>`, s.srv.URL)
	}))
	t.Cleanup(evil.Close)
	browser := newBrowser(t, chromedp.Flag("host-resolver-rules", "MAP rebound.test 127.0.0.1, MAP evil.test 127.0.0.1"))
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &page{t: t, ctx: ctx, s: s}
	port := s.port()

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://rebound.test:"+port+"/"))) // the tab's first action, on its context: the tab lives as long
	require.Equal(t, `{"error":"Host \"rebound.test:`+port+`\" is not a name this server serves (DNS rebinding protection): open the page at http://127.0.0.1:`+port+`/, or start notes-web with -host rebound.test to serve that name."}`,
		eval[string](p, `document.body.innerText.trim()`))

	_, evilPort, err := net.SplitHostPort(strings.TrimPrefix(evil.URL, "http://"))
	require.NoError(t, err)
	p.do(chromedp.Navigate("http://evil.test:" + evilPort + "/"))
	p.until(`location.pathname === "/login" && document.body.innerText.includes("cross-site request protection")`)
	require.Contains(t, eval[string](p, `document.body.innerText`), `This request comes from Origin \"http://evil.test:`+evilPort+`\"`)
	require.Zero(t, s.sessions())
	p.do(chromedp.Navigate(s.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#login")))
}

// While Ana's turn runs, Ben's POST to her conversation answers 404 as
// for any conversation that is not his: nothing tells him it exists.
func TestBrowserOtherRunningConversation(t *testing.T) {
	s := newSite(t)
	browser := newBrowser(t)
	ana, ben := s.open(t, browser, "ana"), s.open(t, browser, "ben")
	anaConv := eval[int64](ana, `Number(document.body.dataset.conversation)`)
	ana.send("slowly create a note called Draft under Projects")
	s.waitHold() // Ana's turn runs
	for _, path := range []string{"send", "answer", "undo"} {
		require.Equal(t, `404 {"error":"No such conversation."}`, eval[string](ben, fmt.Sprintf(
			`fetch("/api/conversations/%d/%s", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({text: "hi", approve: true, changeset: 1})}).then(async r => r.status + " " + (await r.text()).trim())`, anaConv, path)), path)
	}
	ana.do(chromedp.Click(chromedp.CSS("#stop")))
	ana.idle()
}

// At 1280 px a long first message (the conversation's title), a
// 2,000-character word and a long note title scroll nothing sideways:
// New stays on screen, the word wraps, the tree title ends in an ellipsis
// with the whole title in its tooltip, and "protected" stays on its
// note's line.
func TestBrowserLayout1280(t *testing.T) {
	s := newSite(t)
	p := s.open(t, newBrowser(t), "ana")
	p.do(chromedp.EmulateViewport(1280, 860))
	first := "show https://example.com/reports/2026/quarterly-summary-fina"
	require.Len(t, first, 60)
	p.say(first)
	p.until(`document.querySelector("#conversations").selectedOptions[0].textContent === ` + js(first))
	word := strings.Repeat("w", 2000)
	p.do(chromedp.SetValue(chromedp.CSS("#chat-input"), word), chromedp.Click(chromedp.CSS("#send")))
	p.until(`[...document.querySelectorAll(".msg.user")].some(m => m.textContent === ` + js(word) + `)`)
	p.idle()
	long := "A note whose title is far longer than the tree panel is wide, to see it end"
	p.say("create a note called " + long + " under Projects")
	p.until(inTree(long))

	noScroll := `(e => e.scrollWidth <= e.clientWidth)`
	require.True(t, eval[bool](p, noScroll+`(document.scrollingElement)`), "the page scrolls sideways")
	require.True(t, eval[bool](p, `(r => r.width > 0 && r.right <= document.querySelector("#chat").getBoundingClientRect().right && r.right <= innerWidth)(document.querySelector("#new-conversation").getBoundingClientRect())`), "New is off-screen")
	require.True(t, eval[bool](p, noScroll+`(document.querySelector("#chat-log"))`), "the chat scrolls sideways")
	require.True(t, eval[bool](p, noScroll+`(document.querySelector("#tree-panel"))`), "the tree scrolls sideways")
	require.Equal(t, long, eval[string](p, `[...document.querySelectorAll(".tree-item")].find(a => a.textContent === `+js(long)+`).title`))
	require.Positive(t, eval[int](p, `document.querySelectorAll(".lock").length`), "the demo has a protected note")
	require.True(t, eval[bool](p, `[...document.querySelectorAll(".lock")].every(l => Math.abs(l.getBoundingClientRect().top - l.previousElementSibling.getBoundingClientRect().top) < 6)`), "protected wraps under its note")
}

// With the model down, or answering with an error, the page says so in a
// sentence, without the endpoint's URL.
func TestBrowserModelDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"no such model"}}`, http.StatusBadRequest)
	}))
	t.Cleanup(refusing.Close)
	browser := newBrowser(t)
	for _, tc := range []struct {
		name, host, want string
	}{
		{"down", down, "The model could not be reached. What finished before stays; send your message again once it runs (the server's log has the detail)."},
		{"error", strings.TrimPrefix(refusing.URL, "http://"), "The model's provider refused the request. Ask the site's owner to check the model's settings. What finished before stays."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &site{t: t, dir: t.TempDir(), gate: newGate(), saved: make(chan int64, 16)}
			s.start(chatrun.Endpoint{BaseURL: "http://" + tc.host + "/v1", Model: "m"})
			p := s.open(t, browser, "ana")
			p.say("hello")
			p.until(`!!document.querySelector(".msg.error")`)
			msg := p.text(".msg.error")
			require.Equal(t, tc.want, msg)
			require.NotContains(t, msg, tc.host)
		})
	}
}

// A call that takes its time shows that it runs until it ends: here
// create_note waits for a write the test holds on Ana's database.
func TestBrowserRunningCall(t *testing.T) {
	s := newSite(t)
	p := s.open(t, newBrowser(t), "ana")
	tx, err := s.app.ws["ana"].db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	_, err = tx.Exec(`UPDATE notes SET title = title WHERE noteId = 'projects'`)
	require.NoError(t, err)
	p.send("create a note called Later under Projects")
	p.until(lastCard("create_note") + `?.classList.contains("running")`)
	require.Equal(t, "running…", p.text(`.card[data-tool="create_note"] .status`))
	require.True(t, eval[bool](p, `getComputedStyle(document.querySelector('.card.running .spinner')).animationName !== "none"`), "the card shows a spinner")
	p.screenshot("running.png")
	require.NoError(t, tx.Rollback())
	p.until(lastCard("create_note") + `.classList.contains("ok")`)
	p.idle()
	require.Zero(t, eval[int](p, `document.querySelectorAll(".card .spinner").length`), "the spinner ends with the call")
}
