package chatadapter

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/llmtool/llmtool/approval"
	"github.com/llmtool/llmtool/i18n"
)

// The lines a host shows the person come from the catalog
// (Options.Messages), in the context's locale; package i18n embeds them
// in English. Their keys, which a host's translations use:
const (
	keyStarted       = "llm.chat.call.started"       // {tool}
	keyProgress      = "llm.chat.call.progress"      // {tool}, {progress}: "3/10 copying"
	keyDone          = "llm.chat.call.done"          // {tool}
	keyFailed        = "llm.chat.call.failed"        // {tool}
	keyNeedsApproval = "llm.chat.call.needsApproval" // {tool}
	keyNotApproved   = "llm.chat.call.notApproved"   // {tool}
	keyAsks          = "llm.chat.call.asks"          // {tool}
	keyModelRequest  = "llm.chat.model.request"      //
	keyModelAgain    = "llm.chat.model.again"        // {attempt}
	keyModelRetry    = "llm.chat.model.retry"        // {status}, {wait}
	keyNoAnswer      = "llm.chat.model.noAnswer"     // the {status} of a request that got no response
	keyTooMany       = "llm.chat.model.tooMany"      // {code}: the {status} of a 429
	keyUnavailable   = "llm.chat.model.unavailable"  // {code}: of a 503
	keyOverloaded    = "llm.chat.model.overloaded"   // {code}: of a 529, Anthropic's "overloaded"
	keyServerError   = "llm.chat.model.serverError"  // {code}: of another 5xx
	keyTimedOut      = "llm.chat.model.timedOut"     // {code}: of a 408, 409 or 504
	keyApproval      = "llm.chat.approval.prompt"    // {tool}, {summary}
	keyQuestion      = "llm.chat.question.prompt"    // {tool}, {question}
	keyPreview       = "llm.chat.preview"            // {summary}, {changes}
	keyPreviewTable  = "llm.chat.preview.table"      // {table}, {counts}
	keyInserted      = "llm.chat.preview.inserted"   // {n}
	keyUpdated       = "llm.chat.preview.updated"    // {n}
	keyDeleted       = "llm.chat.preview.deleted"    // {n}
	keyNoChanges     = "llm.chat.preview.none"       //
)

// finishKeys are the lines of a turn that ended without the answer the
// person asked for, by run.Transcript.Finish: "llm.chat.finish.…".
var finishKeys = map[string]string{
	"length":         "llm.chat.finish.length",
	"content_filter": "llm.chat.finish.contentFilter",
	"refusal":        "llm.chat.finish.refusal",
	"malformed_call": "llm.chat.finish.malformedCall",
	"pause":          "llm.chat.finish.pause",
	"other":          "llm.chat.finish.other",
}

// retryStatus is the {status} of a retry in locale: code, the status
// the endpoint answered, or that of the error it sent in its stream, in
// the catalog's words ("429 (too many requests)"); "no answer" for 0, a
// request that got no response.
func retryStatus(msgs *i18n.Catalog, locale string, code int) string {
	key := keyServerError
	switch code {
	case 0:
		return msgs.Message(keyNoAnswer, locale)
	case http.StatusTooManyRequests:
		key = keyTooMany
	case http.StatusServiceUnavailable:
		key = keyUnavailable
	case 529:
		key = keyOverloaded
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusGatewayTimeout:
		key = keyTimedOut
	}
	return msgs.Message(key, locale, "code", strconv.Itoa(code))
}

// previewLine is p in one line in locale: in English exactly
// p.String(), "Delete note "Plans". (notes: 3 deleted)".
func previewLine(msgs *i18n.Catalog, locale string, p approval.Preview) string {
	tables := p.Counted() // a table in the host's words shows its rows instead
	if len(tables) == 0 && len(p.Tables) > 0 {
		if p.Summary != "" {
			return p.Summary
		}
		tables = p.Tables
	}
	var lines []string
	for _, c := range tables {
		var counts []string
		for _, x := range []struct {
			n   int64
			key string
		}{{c.Inserted, keyInserted}, {c.Updated, keyUpdated}, {c.Deleted, keyDeleted}} {
			if x.n > 0 {
				counts = append(counts, msgs.Message(x.key, locale, "n", strconv.FormatInt(x.n, 10)))
			}
		}
		if len(counts) > 0 {
			lines = append(lines, msgs.Message(keyPreviewTable, locale, "table", c.Table, "counts", strings.Join(counts, ", ")))
		}
	}
	changes := msgs.Message(keyNoChanges, locale)
	if len(lines) > 0 {
		changes = strings.Join(lines, "; ")
	}
	if p.Summary == "" {
		return changes
	}
	return msgs.Message(keyPreview, locale, "summary", p.Summary, "changes", changes)
}

// questionKey is the catalog key of a tool's question in the person's
// language: "llm.tools.<tool>.ask.<key>". A host that translates it
// replaces the tool's own words, which may carry values the translation
// cannot (such as a count).
func questionKey(tool, key string) string { return i18n.ToolKey(tool) + ".ask." + key }
