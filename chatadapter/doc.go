// Package chatadapter projects an llmtool registry into what an
// application's own chat feature needs to let a model call its tools: the
// tool definitions in each provider's wire format, a dispatcher for the
// model's tool calls, each result in the provider's message format, and
// the pauses where a call waits for the person. Its package run holds the
// conversation with the model itself, over net/http.
//
// It translates only. Every call goes through llmtool.Registry.Invoke, so a
// tool behaves in chat exactly as it does over MCP: same validation, same
// transaction, same error text, same result bytes.
//
// It is used in one of two ways. A host that drives its provider with
// the SDK it already uses imports chatadapter only, the projection:
//
//	a := chatadapter.New(reg, nil) // nil: the default Options
//	ctx = llmtool.WithTenant(llmtool.WithPrincipal(ctx, user), workspaceID)
//
//	set, err := a.Tools(ctx, chatadapter.Anthropic) // the "tools" field of the request
//	// ... send the request with set.JSON, receive the model's message ...
//	reply, err := a.Dispatch(ctx, chatadapter.Anthropic, assistantMessage)
//	// ... append reply.Messages to the conversation and send it again ...
//
// A host with no SDK at all imports package run too, whose Run holds the
// conversation over net/http with any of the four APIs, with the
// adapter's tools (see Run below):
//
//	tr, err := run.Run(ctx, a, run.Endpoint{Shape: chatadapter.Anthropic, BaseURL: "https://api.anthropic.com/v1", APIKey: key, Model: model}, messages, nil)
//	// ... tr.Answer, tr.Messages to keep, tr.Pending to ask the person ...
//
// # Formats
//
// A Shape names a provider format. Tool sets exist for OpenAI Chat
// Completions (with a strict-mode variant), OpenAI Responses (also with a
// strict variant), Anthropic Messages and Gemini. Each tool's definition is
// built once per registry and format and reused for every request; a tool
// whose schema a format cannot express (a map for Gemini, say) is left out
// of that format's set and reported by Tools as an *UnsupportedError.
//
// # Order of calls in one turn
//
// A model may ask for several calls in one turn. Dispatch runs them as if
// one after another in the model's order, except that adjacent read tools
// run concurrently (at most Options.MaxParallel at once): a write tool starts only
// after every call before it has finished, and calls after it start only
// once it has committed. So each read sees exactly the writes the model
// asked for before it, writes commit in the model's order, and the results,
// returned in the model's order, are the same on every run.
//
// # Asking the person: approvals and questions
//
// A call may need the person in two ways, and both pause the turn at it:
//
//   - a write tool that needs approval (llmtool.NeedsApproval, or
//     Registry.Tenants().SetApproval for the tenant) does not commit when
//     the model calls it: the registry runs it, records what it would
//     change (a Preview), rolls back and asks;
//   - a tool that asks a question through package ask (ask.Elicit: a
//     choice, a confirmation, a form), as it would ask an MCP client:
//     Dispatch gives every call an Asker that ends the call to ask, so
//     nothing is held while the person thinks (a write tool's run rolls
//     back), and runs it again, from the start, with the answer.
//
// The reply's Pending carries the call, its friendly name and the line
// to show (Prompt), with the preview for an approval or the Question and
// its form, and its Messages stay empty, because the providers take the
// next request only once every call of the turn has its result. The host
// shows it and resumes with the person's answer, Pending.Resume with an
// ask.ElicitResult (ask.Accept approves, or gives the filled form;
// ask.Decline denies):
//
//	reply, err := a.Dispatch(ctx, shape, assistantMessage)
//	for err == nil && reply.Pending != nil {
//		reply, err = reply.Pending.Resume(ctx, askThePerson(reply.Pending)) // an ask.ElicitResult
//	}
//	// ... append reply.Messages to the conversation and send it again ...
//
// The turn keeps the model's order across the pause: the calls before
// the pending one have run, and none after it runs before the person has
// answered, since a later call may read or build on what the pending one
// changes (reads that ran beside an asking read keep their results). An
// approved call commits if its preview is unchanged; if the data changed
// meanwhile, nothing is saved and the same call is pending again with its
// new preview. A denied call saves nothing, and the model reads "The user
// denied this change. Nothing was saved. Ask the user what to do
// instead."; like any failed call, it does not stop the calls after it.
// A declined question is the tool's to handle: its ask.Elicit returns the
// decline.
//
// A Pending call is the one pause of a turn, whether Dispatch or package
// run paused it, and it is plain data: json.Marshal saves it with its
// turn, and Adapter.Restore reads it back (run's Runner.Restore, for a
// run's transcript that holds it), in this process or another, so a web
// host keeps it with the conversation and resumes it from the request
// that brings the answer (Pending.Expires bounds an approval's wait;
// resume with ask.Decline when the person leaves, so that every call gets
// its result). Adapter.Restore says what a saved
// turn holds. It comes in two forms. Plain, the default, it is not
// signed: keep it where the server keeps its own data, with the
// conversation. Sealed (Options.SealKey), it is signed, and Restore
// refuses it if it was changed in any byte, and refuses a paused turn
// saved plain: keep that form in any store not trusted as the server
// itself, such as a cookie or the browser.
//
// # Run: the loop over net/http
//
// Package run holds a turn with a model over OpenAI Chat Completions (and
// compatible servers), OpenAI Responses, Anthropic Messages or Gemini: it
// sends the conversation with the tool set, runs the calls of each answer
// with Dispatch, and sends again until the model answers without calls.
// It pauses where Dispatch pauses (its Transcript holds the Pending call,
// and Runner.Resume goes on after it), retries what waiting can cure,
// counts tokens (Usage), and reports its requests as events of this
// package (ModelRequest, ModelRetry, ModelReply, TextDelta,
// ReasoningDelta, CallInputDelta, TurnEnded) through Adapter.Emit, which a host that drives its provider
// itself can use to report its own requests the same way.
//
// # Events and locales
//
// WithEvents reports a turn as it happens: each request to the model
// (ModelRequest, ModelRetry, ModelReply with its text and usage), the
// text as the model writes it (TextDelta, with run.Options.Stream), each
// call once (CallStarted with its arguments, CallProgress, CallPaused
// with what it waits for, CallFinished with its Result), and the turn's
// end (TurnEnded, with the line of a stop or a failure). Every line a host shows comes
// from the catalog (Options.Messages, package i18n) in the context's
// locale (WithLocale, else Options.Locale): Event.Label, Pending.Prompt
// and Summary, the tools' friendly names, and a tool's question by its key
// (see Pending.Question). The English is embedded in package i18n; a host adds
// its locales under the same keys ("llm.chat.…").
//
// # A chat page
//
// A host's chat page shows a turn as it happens and keeps the
// conversation in the host's database. run.Options.Stream has Run ask the
// endpoint, of any of the four APIs, to stream its answers, so the page shows
// the words as they come (TextDelta), the model's reasoning apart
// (ReasoningDelta), and each call as it forms (CallInputDelta); each call
// is a card, started with
// its friendly name and arguments, paused with the preview of the rows
// it would change (Event.Pending), finished with what the model reads
// (Event.Result.Text()) and, for a write, the rows it changed with the
// changeset ID the tool undo_changes takes to undo them
// (Event.Result.Changeset). WithConversation names the conversation, so
// every call's changes are recorded with it and undo_changes without an
// id undoes its last one. Cancelling the context (the person pressed
// Stop, or closed the page, and the request's context ended) ends the
// turn with nothing half-written: a write in progress rolls back, and the
// transcript stays whole. run's Runner.Run shows the events in use;
// examples/notes-web is a whole page, tested in a browser.
//
// # Prompts
//
// The prompts a module defines (llmtool.Prompt) are for the person, not
// the model: a host's chat lists those the tenant may use with
// Registry.List (ListOptions.Prompts), and Prompt renders the one picked
// into the provider's message shape, to start the conversation with:
//
//	prompts, err := reg.List(ctx, &llmtool.ListOptions{Prompts: true}) // name, friendly name, arguments
//	msgs, err := a.Prompt(ctx, chatadapter.Anthropic, "summarize_note", json.RawMessage(`{"noteId":"roadmap"}`))
//
// # Large catalogs
//
// A registry whose tools load on demand (llmtool.Options.OnDemand) lists
// a tenant's loaded tools and find_tools, and so does Tools: after the
// model calls find_tools (Dispatch runs it like any tool), the tenant's
// next set has the tools it found. With Options.ToolSearch, Anthropic
// Messages and OpenAI Responses get every tool instead, the unloaded ones
// marked "defer_loading": true, and the provider's own search tool (see
// ToolSet.Deferred).
//
// # Errors
//
// An unknown tool, malformed arguments, a refused or failing call: each is
// a result with {"error": "..."} for the model to correct, never a Go error.
// Go errors are for what the host must act on: a turn that cannot be read
// or is in another format than its shape (an error wrapping ErrShape that names both),
// a context that ended (Dispatch still gives a result for every call), an
// answer that cannot be the form's (and in package run, a request that
// failed for good, or a response the provider cut at its output limit).
// Prompt, whose caller is the person who picked the prompt rather than a
// model, returns the registry's refusal as its error.
//
// Package run/chattest serves scripted models in each API's wire format,
// for testing a host's chat without a provider.
package chatadapter
