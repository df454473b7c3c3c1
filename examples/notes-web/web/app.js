// The page: the tree, the open note, and the chat panel. Plain JavaScript,
// no build step. A turn streams as server-sent events over the response of
// a POST (fetch); the tree and the note follow /api/events.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const state = { conv: null, note: null, pending: null, turn: null };

// The chat's own words. The page speaks English; a host that serves
// other languages gives chatadapter the person's locale (WithLocale) and
// the page its words in that language, all of them.
const words = { cut: "stopped here", thinking: "thinking", writing: "writing the call…", notSent: "not sent: stopped" };
const say = (key) => words[key];

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-") || k.startsWith("aria-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) e.append(c);
  return e;
}

async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  const data = await res.json();
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

// ---- The tree and the note

async function loadTree() {
  const root = await api("GET", "/api/tree");
  const ul = $("#tree");
  ul.replaceChildren(...(root.children || []).map(treeItem));
  document.body.dataset.treeLoaded = String(Number(document.body.dataset.treeLoaded || 0) + 1);
}

function treeItem(n) {
  const a = el("a", { href: "#", class: "tree-item", "data-id": n.noteId, text: n.title, title: n.title });
  if (n.noteId === state.note) a.classList.add("open");
  a.addEventListener("click", (e) => { e.preventDefault(); openNote(n.noteId); });
  const row = el("div", { class: "tree-row" }, a);
  if (n.isProtected) row.append(el("span", { class: "lock", text: "protected" }));
  const li = el("li", {}, row);
  if (n.children && n.children.length) li.append(el("ul", {}, ...n.children.map(treeItem)));
  return li;
}

async function openNote(id) {
  state.note = id;
  for (const a of document.querySelectorAll(".tree-item")) a.classList.toggle("open", a.dataset.id === id);
  try {
    const n = await api("GET", "/api/notes/" + encodeURIComponent(id));
    $("#note-title").textContent = n.title;
    $("#note-meta").textContent = (n.parents.length ? "in " + n.parents.join(", ") + " · " : "") + n.type + " · changed " + n.modified;
    $("#note-content").textContent = n.isProtected ? "This note is protected: its content is not shown, and the chat cannot read or change it." : n.text;
    $("#note").dataset.noteId = id;
  } catch (err) {
    $("#note-title").textContent = "This note is gone";
    $("#note-meta").textContent = "";
    $("#note-content").textContent = err.message;
    $("#note").dataset.noteId = "";
  }
}

function toast(text) {
  const t = $("#toast");
  t.textContent = text;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 6000);
}

function listen() {
  const es = new EventSource("/api/events");
  es.addEventListener("ready", () => { document.body.dataset.live = "1"; });
  es.addEventListener("changed", (e) => {
    const c = JSON.parse(e.data);
    if (c.via === "mcp") toast("An MCP client changed the notes (" + c.tool + ")");
    loadTree();
    if (state.note) openNote(state.note);
  });
}

// ---- Conversations

async function loadConversations(select) {
  let list = await api("GET", "/api/conversations");
  if (!list.length) list = [await api("POST", "/api/conversations", {})];
  const sel = $("#conversations");
  sel.replaceChildren(...list.map((c) => el("option", { value: c.id, text: c.title, title: c.title })));
  const id = select || Number(localStorage.getItem("conv:" + document.body.dataset.user)) || list[0].id;
  sel.value = String(list.some((c) => c.id === id) ? id : list[0].id);
  await loadConversation(Number(sel.value));
}

async function loadConversation(id) {
  state.conv = id;
  localStorage.setItem("conv:" + document.body.dataset.user, String(id));
  const c = await api("GET", "/api/conversations/" + id);
  $("#chat-log").replaceChildren();
  for (const it of c.log) render(it);
  setPending(c.pending);
  document.body.dataset.conversation = String(id);
}

// ---- Drawing the log

const log = () => $("#chat-log");

function scroll() { log().scrollTop = log().scrollHeight; }

function card(id) {
  const all = log().querySelectorAll(".card");
  for (let i = all.length - 1; i >= 0; i--) if (all[i].dataset.call === id) return all[i];
  return null;
}

function render(it) {
  switch (it.type) {
    case "user":
      log().append(el("div", { class: "msg user", text: it.text }));
      break;
    case "text": {
      const last = log().lastElementChild;
      if (last && last.classList.contains("assistant") && last.dataset.step === String(it.step)) last.textContent += it.text;
      else log().append(el("div", { class: "msg assistant", "data-step": String(it.step), text: it.text }));
      break;
    }
    case "thinking": {
      // The model's reasoning: one folded line a step, never the answer.
      const last = log().lastElementChild;
      if (last && last.classList.contains("thinking") && last.dataset.step === String(it.step)) $("p", last).textContent += it.text;
      else log().append(el("details", { class: "thinking", "data-step": String(it.step) }, el("summary", { text: say("thinking") }), el("p", { text: it.text })));
      break;
    }
    case "forming": {
      // A call the model is writing: its card as soon as its name is
      // known, its arguments as they come; "call" takes the card over.
      let c = forming(it.step, it.index);
      if (!c) {
        c = el("div", { class: "card forming" + (it.write ? " write" : ""), "data-forming": it.tool, "data-step": String(it.step), "data-index": String(it.index) },
          el("div", { class: "card-head" }, el("span", { class: "name", text: it.name || it.tool }),
            el("span", {}, el("span", { class: "spinner", "aria-hidden": "true" }), el("span", { class: "status", text: say("writing") }))),
          el("pre", { class: "args-forming", text: "" }));
        log().append(c);
      }
      $(".args-forming", c).textContent += it.text;
      break;
    }
    case "call": {
      const args = el("details", { class: "args" }, el("summary", { text: "arguments" }), el("pre", { text: JSON.stringify(it.args, null, 1) }));
      const c = el("div", { class: "card running" + (it.write ? " write" : ""), "data-call": it.id, "data-tool": it.tool },
        el("div", { class: "card-head" }, el("span", { class: "name", text: it.name }),
          el("span", {}, el("span", { class: "spinner", "aria-hidden": "true" }), el("span", { class: "status", text: "running…" }))), args);
      const f = forming(null, it.index);
      if (f) f.replaceWith(c);
      else log().append(c);
      break;
    }
    case "approval":
    case "question":
      pendingCard(it);
      break;
    case "done":
      doneCard(it);
      break;
    case "undone": {
      const b = log().querySelector('.undo[data-changeset="' + it.changeset + '"]');
      if (b) {
        b.disabled = true;
        b.textContent = "Undone";
        b.closest(".card").classList.add("undone");
      }
      break;
    }
    case "status":
      if (it.retry) { // the attempt's thinking and forming calls give way to the next attempt's
        for (const e of log().querySelectorAll('.thinking[data-step="' + it.retry + '"], .card.forming[data-step="' + it.retry + '"]')) e.remove();
      }
      log().append(el("div", { class: "msg status", text: it.text }));
      break;
    case "end":
      for (const s of log().querySelectorAll(".spinner")) s.remove(); // nothing runs after the turn
      for (const f of log().querySelectorAll(".card.forming")) { // calls the model did not finish writing
        f.classList.replace("forming", "unsent");
        $(".status", f).textContent = say("notSent");
      }
      if (it.cut) markCut();
      if (it.error) log().append(el("div", { class: "msg " + (it.stopped ? "stopped" : "error"), text: it.error }));
      if (it.pending) setPending(it.pending);
      break;
  }
  scroll();
}

// forming is the card of call index the model is writing in step (any
// step for null), the latest.
function forming(step, index) {
  const all = log().querySelectorAll(".card.forming");
  for (let i = all.length - 1; i >= 0; i--) {
    if (all[i].dataset.index === String(index) && (step === null || all[i].dataset.step === String(step))) return all[i];
  }
  return null;
}

// streamingText reports whether the model was writing its text when the
// turn ended: its last words come after any card but the calls it was
// still writing (the server keeps them cut, Transcript.Cut).
function streamingText() {
  for (let e = log().lastElementChild; e; e = e.previousElementSibling) {
    if (e.classList.contains("forming") || e.classList.contains("thinking")) continue;
    return e.classList.contains("assistant");
  }
  return false;
}

// markCut marks the last answer as cut where the person stopped it.
function markCut() {
  const all = log().querySelectorAll(".msg.assistant");
  const m = all[all.length - 1];
  if (!m || m.classList.contains("cut")) return;
  m.classList.add("cut");
  m.append(el("span", { class: "cut-mark", text: " … " + say("cut") }));
}

function pendingCard(it) {
  const c = card(it.id);
  if (!c) return;
  $(".spinner", c)?.remove();
  c.classList.remove("running");
  c.classList.add("waiting");
  $(".status", c).textContent = it.type === "approval" ? "needs your approval" : "asks you";
  const box = el("div", { class: "pending" }, el("p", { class: "prompt", text: it.type === "approval" ? it.summary : it.prompt }));
  if (it.type === "approval") {
    box.append(changeList("preview", it.rows));
    box.append(button("Approve", "approve", () => answer({ approve: true })), button("Deny", "deny", () => answer({ approve: false })));
  } else {
    for (const ch of it.choices || []) box.append(button(ch.label, "choice", () => answer({ property: ch.property, value: ch.value })));
    box.append(button("Skip", "skip", () => answer({})));
  }
  for (const b of box.querySelectorAll("button")) b.disabled = true;
  c.append(box);
}

// changeList shows a change one row a line, as the host words it
// (llmtool.Entity.NameColumn): `Delete note "Ideas"`.
function changeList(cls, rows) {
  return el("ul", { class: cls }, ...(rows || []).map(r => el("li", { text: r })));
}

function button(text, cls, onclick) {
  const b = el("button", { type: "button", class: cls, text });
  b.addEventListener("click", onclick);
  return b;
}

function doneCard(it) {
  const c = card(it.id);
  if (!c) return;
  $(".spinner", c)?.remove();
  c.classList.remove("running", "waiting");
  c.classList.add(it.ok ? "ok" : "failed");
  $(".status", c).textContent = it.ok ? "done" : (it.denied ? "not approved" : "failed");
  const p = $(".pending", c);
  if (p) {
    // The person answered: the buttons give way to the answer.
    for (const b of p.querySelectorAll("button")) b.remove();
    p.classList.add("answered");
    p.append(el("p", { class: "answer", text: it.denied ? "You denied this change." : (it.ok ? "You approved this change." : "") }));
  }
  if (it.error) c.append(el("p", { class: "error", text: it.error }));
  if (it.changeset) {
    c.dataset.changeset = String(it.changeset);
    // An approved change's rows are on the card already, as approved.
    c.append(el("p", { class: "summary", text: p && it.worded ? "Saved as approved." : "Changed: " + it.summary }));
    // Rows without the store's words unfold from the table counts.
    if (!p && !it.worded) c.append(el("details", { class: "changes" }, el("summary", { text: "what changed" }), changeList("rows", it.rows)));
    if (it.undoable) {
      const b = button("Undo", "undo", () => undo(it.changeset, c, b));
      b.dataset.changeset = String(it.changeset);
      c.append(b);
    }
  }
}

function setPending(id) {
  state.pending = id || null;
  for (const b of log().querySelectorAll(".pending:not(.answered) button")) b.disabled = !id || b.closest(".card").dataset.call !== id;
  $("#chat-input").disabled = !!id;
  $("#send").disabled = !!id || !!state.turn;
}

// ---- Turns

function busy(on) {
  document.body.dataset.busy = on ? "1" : "";
  $("#send").disabled = on || !!state.pending;
  $("#stop").disabled = !on;
}

// stream posts body to the conversation's path and draws the items the
// response streams, until it ends or the person presses Stop.
async function stream(path, body) {
  const ctl = new AbortController();
  state.turn = ctl;
  busy(true);
  try {
    const res = await fetch("/api/conversations/" + state.conv + path, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal: ctl.signal,
    });
    if (!res.ok) {
      const data = await res.json();
      render({ type: "end", error: data.error });
      return;
    }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = ev.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
        if (data) render(JSON.parse(data));
      }
    }
  } catch (err) {
    if (err.name === "AbortError") render({ type: "end", stopped: true, cut: streamingText(), error: "Stopped. What finished before stays; nothing else was saved." });
    else render({ type: "end", error: err.message });
  } finally {
    state.turn = null;
    busy(false);
    setPending(state.pending);
    refreshTitle();
  }
}

async function refreshTitle() {
  const list = await api("GET", "/api/conversations");
  const sel = $("#conversations");
  for (const o of sel.options) {
    const c = list.find((x) => String(x.id) === o.value);
    if (c) o.textContent = o.title = c.title;
  }
}

function send(text) {
  setPending(null);
  return stream("/send", { text });
}

function answer(body) {
  for (const b of log().querySelectorAll(".pending button")) b.disabled = true;
  state.pending = null;
  return stream("/answer", body);
}

async function undo(changeset, c, b) {
  b.disabled = true;
  try {
    const res = await api("POST", "/api/conversations/" + state.conv + "/undo", { changeset });
    if (res.ok) render(res.item);
    else {
      b.disabled = false;
      c.append(el("p", { class: "error undo-error", text: res.error }));
    }
  } catch (err) {
    b.disabled = false;
    c.append(el("p", { class: "error undo-error", text: err.message }));
  }
}

// ---- Wiring

document.addEventListener("DOMContentLoaded", () => {
  $("#chat-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = $("#chat-input");
    const text = input.value.trim();
    if (!text || state.turn) return;
    input.value = "";
    send(text);
  });
  $("#stop").addEventListener("click", () => { if (state.turn) state.turn.abort(); });
  $("#new-conversation").addEventListener("click", async () => {
    const c = await api("POST", "/api/conversations", {});
    await loadConversations(c.id);
  });
  $("#conversations").addEventListener("change", (e) => loadConversation(Number(e.target.value)));
  for (const p of document.querySelectorAll(".phrase")) {
    p.addEventListener("click", () => { $("#chat-input").value = p.textContent; $("#chat-input").focus(); });
  }
  listen();
  loadTree();
  loadConversations().then(() => { document.body.dataset.ready = "1"; });
});
