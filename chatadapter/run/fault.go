package run

import (
	"net/http"
	"strings"

	"github.com/llmtool/llmtool/i18n"
)

// Provider errors: each API's file reads its error body (and the error
// events of its stream) into an *HTTPError with the provider's type, code
// and message (its api's failure), and names its class, the same words
// for every provider. Whether Run tries the request again follows the
// official SDKs (retried), with one rule more: what waiting cannot cure
// (a quota, a spend limit, a context too long, a key refused, a request
// the provider calls bad) is never sent again.

// The values of HTTPError.Class.
const (
	classRateLimit  = "rate_limit"     // too many requests or tokens for now: waiting cures it
	classQuota      = "quota"          // a quota, a spend limit or credit used up: waiting does not
	classContext    = "context_length" // the conversation (or the request) is too long for the model
	classAuth       = "auth"           // the key is missing, wrong, or may not do this
	classBadRequest = "bad_request"    // the request is wrong: a model not found, a parameter refused
	classOverloaded = "overloaded"     // the provider is overloaded (503, Anthropic's 529)
	classServer     = "server"         // the provider failed (another 5xx)
	classTimeout    = "timeout"        // the request timed out at the provider (408, 409, 504)
)

// statusClass is the class of an error of status whose body does not
// say.
func statusClass(status int) string {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return classAuth
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status == http.StatusGatewayTimeout:
		return classTimeout // 409: OpenAI's lock timeout, which its SDK retries
	case status == http.StatusRequestEntityTooLarge:
		return classContext
	case status == http.StatusTooManyRequests:
		return classRateLimit
	case status == http.StatusServiceUnavailable || status == 529:
		return classOverloaded
	case status >= 500:
		return classServer
	case status >= 400:
		return classBadRequest
	}
	return ""
}

// failure is the *HTTPError of an error the provider described: its
// type, code and message, and class, "" if the body does not say, when
// the status's. A class the body gives that waiting cannot cure is final:
// no retry, whatever x-should-retry says. status is 0 for an error sent
// in a stream: the status the API gives it unstreamed, by its type or
// code (statusOf), stands for it.
func failure(status int, typ, code, message, class string) *HTTPError {
	if status == 0 {
		status = errorStatus(typ, code)
		if status == 0 && class != "" {
			status = classStatus[class]
		}
	}
	he := &HTTPError{StatusCode: status, Type: typ, Code: code, Message: message, Class: class}
	switch class {
	case classQuota, classContext, classAuth, classBadRequest:
		he.final = true
	case "":
		he.Class = statusClass(status)
	}
	return he
}

// retried reports whether Run tries e's request again, as the official
// SDKs do: never what e's body calls final; else as x-should-retry says,
// if it does; else a 408, 409, 429 or 5xx (Anthropic's 529 among them).
func (e *HTTPError) retried() bool {
	switch {
	case e.final:
		return false
	case e.shouldRetry != "":
		return e.shouldRetry == "true"
	}
	s := e.StatusCode
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// contains reports whether s contains one of the phrases, in any case:
// how a class that a provider gives only in its message's words is read.
func contains(s string, phrases ...string) bool {
	s = strings.ToLower(s)
	for _, p := range phrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// Line is the error's line for the person in locale, by its class ("The
// model's provider limits how often it may be asked. Try again in a
// minute."), with the next thing to do; chatadapter gives the TurnEnded
// event of a turn that failed with e its Label.
func (e *HTTPError) Line(msgs *i18n.Catalog, locale string) string {
	key, ok := classKey[e.Class]
	if !ok {
		key = keyErrorOther
	}
	return msgs.Message(key, locale)
}

// The keys of the person's lines of a failed request (see chatadapter's
// Options.Messages), one per class.
const (
	keyErrorOther  = "llm.chat.error.other"
	keyUnreachable = "llm.chat.error.unreachable" // no answer at all: a transport error
)

var classKey = map[string]string{
	classRateLimit:  "llm.chat.error.rateLimit",
	classQuota:      "llm.chat.error.quota",
	classContext:    "llm.chat.error.contextLength",
	classAuth:       "llm.chat.error.auth",
	classBadRequest: "llm.chat.error.badRequest",
	classOverloaded: "llm.chat.error.overloaded",
	classServer:     "llm.chat.error.server",
	classTimeout:    "llm.chat.error.timeout",
}

// classStatus is the status an error of a class stands for when neither
// its status nor its type says (an error a stream sent).
var classStatus = map[string]int{
	classRateLimit: http.StatusTooManyRequests, classQuota: http.StatusTooManyRequests, classContext: http.StatusBadRequest,
	classAuth: http.StatusUnauthorized, classBadRequest: http.StatusBadRequest, classOverloaded: http.StatusServiceUnavailable,
	classServer: http.StatusInternalServerError, classTimeout: http.StatusGatewayTimeout,
}

// statusOf is the HTTP status each API documents for an error kind it
// may also send inside a stream: Anthropic's error types, OpenAI's
// types and codes, Gemini's statuses.
var statusOf = map[string]int{
	"invalid_request_error": http.StatusBadRequest, "INVALID_ARGUMENT": http.StatusBadRequest, "FAILED_PRECONDITION": http.StatusBadRequest,
	"context_length_exceeded": http.StatusBadRequest, "invalid_prompt": http.StatusBadRequest,
	"authentication_error": http.StatusUnauthorized, "UNAUTHENTICATED": http.StatusUnauthorized, "invalid_api_key": http.StatusUnauthorized,
	"billing_error": http.StatusPaymentRequired, "insufficient_quota": http.StatusTooManyRequests,
	"permission_error": http.StatusForbidden, "PERMISSION_DENIED": http.StatusForbidden,
	"not_found_error": http.StatusNotFound, "NOT_FOUND": http.StatusNotFound,
	"request_too_large": http.StatusRequestEntityTooLarge,
	"rate_limit_error":  http.StatusTooManyRequests, "rate_limit_exceeded": http.StatusTooManyRequests, "RESOURCE_EXHAUSTED": http.StatusTooManyRequests,
	"api_error": http.StatusInternalServerError, "server_error": http.StatusInternalServerError, "INTERNAL": http.StatusInternalServerError,
	"UNAVAILABLE": http.StatusServiceUnavailable, "timeout_error": http.StatusGatewayTimeout, "DEADLINE_EXCEEDED": http.StatusGatewayTimeout,
	"overloaded_error": 529, // Anthropic's "overloaded", which its unstreamed answers carry as status 529
}

// errorStatus is the status of an error of type kind or code, 0 if
// neither is known.
func errorStatus(kind, code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return statusOf[kind]
}
