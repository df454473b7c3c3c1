package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
	"github.com/llmtool/llmtool/i18n"
)

// Endpoint is a model's API: where Run sends its requests, in which
// format, and with which credentials.
type Endpoint struct {
	// Shape is the API's format: chatadapter.OpenAIChat (the zero value's), for
	// OpenAI Chat Completions and every compatible server (llama.cpp,
	// Ollama, vLLM), OpenAIResponses, Anthropic or Gemini. A strict shape
	// (OpenAIChatStrict, OpenAIResponsesStrict) sends the strict-mode tool
	// set, for models that support OpenAI's structured outputs: the one way
	// to ask for strict schemas.
	Shape chatadapter.Shape
	// BaseURL is the API root including its version. Run posts to
	//
	//   - OpenAI Chat Completions: BaseURL + "/chat/completions", such as
	//     "https://api.openai.com/v1" or "http://localhost:11434/v1";
	//   - OpenAI Responses: BaseURL + "/responses";
	//   - Anthropic: BaseURL + "/messages", "https://api.anthropic.com/v1";
	//   - Gemini: BaseURL + "/models/" + Model + ":generateContent",
	//     "https://generativelanguage.googleapis.com/v1beta".
	//
	// Azure OpenAI's deployments are BaseURL
	// "https://NAME.openai.azure.com/openai/deployments/DEPLOYMENT", with
	// Query's api-version and Header's api-key.
	BaseURL string
	// APIKey is sent as the API expects it: "Authorization: Bearer" for
	// OpenAI's, "x-api-key" for Anthropic, "x-goog-api-key" for Gemini.
	// Leave it empty for a server that needs none, or to send a key of
	// another kind in Header.
	APIKey string
	// Model is the request's model (for Gemini, part of the URL).
	Model string
	// Header is added to every request after Run's own headers, which a
	// value here replaces: Azure's "api-key", "OpenAI-Organization", a
	// newer "anthropic-version" than Run's 2023-06-01.
	Header http.Header
	// Query is added to every request's URL, such as Azure's
	// "api-version".
	Query url.Values
	// HTTPClient sends the requests; nil means http.DefaultClient. Set its
	// Timeout, or give Run a context with a deadline, to bound a request.
	HTTPClient *http.Client
}

// HTTPError is Run's error for a response whose status is not 2xx, or
// an error the endpoint sent inside its stream, once its retries
// (Options.MaxRetries) are spent or when a retry cannot help. A host
// switches on Class, the same words for every provider; Type, Code and
// Message are the provider's own:
//
//	var he *run.HTTPError
//	if errors.As(err, &he) && he.Class == "quota" { // tell the owner to top up the account
//	}
type HTTPError struct {
	URL        string // the URL posted to
	StatusCode int    // such as 500; for an error in a stream, the status the API gives it unstreamed
	Status     string // such as "500 Internal Server Error"; "" for an error in a stream, or a Responses response whose status is "failed"
	Body       string // the start of the response body (or of the stream's error event), on one line
	// RetryAfter is how long the server asked to wait before trying
	// again (Retry-After, retry-after-ms, or Gemini's RetryInfo), 0 if it
	// did not say.
	RetryAfter time.Duration

	// Type, Code and Message are the error as the provider's API
	// documents it, "" where it says nothing: OpenAI's error.type and
	// error.code ("insufficient_quota", "rate_limit_exceeded",
	// "context_length_exceeded", "invalid_api_key"; in a Responses
	// stream, the error event's or the failed response's code);
	// Anthropic's error.type ("rate_limit_error", "overloaded_error",
	// "authentication_error", "invalid_request_error", ...); Gemini's
	// error.status ("RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", ...) with,
	// as Code, its QuotaFailure's quotaId or its ErrorInfo's reason.
	Type, Code, Message string
	// Class is the kind of error, for every provider alike: "rate_limit"
	// (retried), "quota" (a quota, spend limit or credit used up: not
	// retried, waiting does not cure it), "context_length" (the
	// conversation is too long for the model), "auth" (the key is
	// missing or refused, or may not do this), "bad_request",
	// "overloaded" (503, 529), "server" (another 5xx) or "timeout" (408,
	// 409, 504); "" if neither the body nor the status says. Line gives
	// it in the person's words.
	Class string
	// Stream says the endpoint sent the error in its stream, before the
	// model's first words (then Run tries again as it would the status)
	// or after them (then the turn fails: the person read those words).
	Stream bool

	saidWhen    bool   // the server said when to retry (RetryAfter may be 0)
	shouldRetry string // the x-should-retry header, "" if none
	final       bool   // the body's class rules out a retry
	what        string // for an error in a stream, what Error says after the URL
}

// Error gives the URL, the status and the start of the body, which is
// where servers say what was wrong with the request; for an error in a
// stream, the error the stream sent.
func (e *HTTPError) Error() string {
	if e.what != "" {
		return fmt.Sprintf("chatadapter: POST %s: %s", e.URL, e.what)
	}
	return fmt.Sprintf("chatadapter: POST %s: %s: %s", e.URL, e.Status, e.Body)
}

// Retries: what they cure and how long they wait.
const (
	// defaultMaxRetries is how many times Run tries a request again unless
	// Options.MaxRetries says otherwise.
	defaultMaxRetries = 3
	// defaultRetryDelay is the first pause before a retry unless
	// Options.RetryDelay says otherwise; each retry doubles it, up to
	// maxBackoff.
	defaultRetryDelay = 500 * time.Millisecond

	maxBackoff = 8 * time.Second
	// maxRetryAfter is the longest wait a server may ask for: a longer
	// one is an outage, better told to the host than slept through.
	maxRetryAfter = time.Minute
)

// post sends body and returns the response body, retrying what waiting
// may cure (retryWait) as Options says, within ctx.
func (r *Runner) post(ctx context.Context, body []byte, header http.Header, step int) ([]byte, error) {
	for attempt := 1; ; attempt++ {
		r.a.Emit(ctx, chatadapter.Event{Kind: chatadapter.ModelRequest, Step: step, Attempt: attempt})
		var b []byte
		var err error
		if r.stream {
			b, err = r.postStream(ctx, body, header, step) // stream.go
		} else {
			b, err = r.postOnce(ctx, body, header)
		}
		if err == nil {
			return b, nil
		}
		wait, ok := r.retryWait(ctx, err, attempt)
		if !ok {
			return nil, err
		}
		r.a.Emit(ctx, chatadapter.Event{Kind: chatadapter.ModelRetry, Step: step, Attempt: attempt, Wait: wait, Err: &attemptError{err}})
		if err := sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("chatadapter: run: %w", err)
		}
	}
}

// retryWait says whether err may be cured by trying again after the
// returned wait: an error HTTPError.retried says so of (after the wait
// the server asked for, if any), or a connection that failed; not once ctx is done, nor when the
// wait would outlast its deadline.
func (r *Runner) retryWait(ctx context.Context, err error, attempt int) (time.Duration, bool) {
	if attempt > r.retries || ctx.Err() != nil {
		return 0, false
	}
	backoff := min(r.retryDelay<<(attempt-1), maxBackoff)
	wait := backoff/2 + rand.N(backoff/2+1) // jitter, so clients do not come back together
	var he *HTTPError
	var se *streamError
	var te *transportError
	switch {
	case errors.As(err, &se): // a stream sent wrong, or broken or failed after the first words
		return 0, false
	case errors.As(err, &he):
		if !he.retried() {
			return 0, false
		}
		if he.saidWhen {
			wait = he.RetryAfter
		}
	case !errors.As(err, &te):
		return 0, false
	}
	if wait > maxRetryAfter {
		return 0, false
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		return 0, false
	}
	return wait, true
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attemptError is a failed attempt Run tries again, as its ModelRetry
// event carries it.
type attemptError struct{ err error }

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// StatusCode is the status the endpoint answered, or that of the error
// it sent in its stream; 0 when the request got no answer. chatadapter
// puts it in the ModelRetry event's line.
func (e *attemptError) StatusCode() int {
	var he *HTTPError
	if errors.As(e.err, &he) {
		return he.StatusCode
	}
	return 0
}

// transportError is a request that got no response.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// Line is the line for the person of a turn that failed without an
// answer from the provider, which chatadapter gives its TurnEnded event.
func (e *transportError) Line(msgs *i18n.Catalog, locale string) string {
	return msgs.Message(keyUnreachable, locale)
}

// maxResponse bounds a response body Run reads.
const maxResponse = 64 << 20

// postOnce sends one request and returns the body of its 2xx response.
func (r *Runner) postOnce(ctx context.Context, body []byte, header http.Header) ([]byte, error) {
	resp, err := r.do(ctx, body, header)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return r.readBody(ctx, io.LimitReader(resp.Body, maxResponse))
}

// do sends one request and returns its 2xx response, whose body the
// caller closes; a response of another status is an *HTTPError.
func (r *Runner) do(ctx context.Context, body []byte, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("chatadapter: run: %w", err)
	}
	req.Header = header.Clone()
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("chatadapter: run: %w", ctx.Err())
		}
		return nil, fmt.Errorf("chatadapter: run: %w", &transportError{err})
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		he := r.api.failure(resp.StatusCode, b)
		he.URL, he.Status, he.Body = r.url, resp.Status, ordered.Excerpt(b, 512)
		he.RetryAfter, he.saidWhen = retryAfter(r.api, resp.Header, b, time.Now())
		if v := strings.ToLower(strings.TrimSpace(resp.Header.Get("X-Should-Retry"))); v == "true" || v == "false" {
			he.shouldRetry = v // the SDKs' rule: it overrides the status either way
		}
		return nil, he
	}
	return resp, nil
}

// retryAfter reads when the server asked to be tried again: the
// retry-after-ms header (OpenAI's, Anthropic's), Retry-After in seconds
// or as an HTTP date, or what the API says in its error body (p's
// retryHint, such as Gemini's google.rpc.RetryInfo).
func retryAfter(p api, h http.Header, body []byte, now time.Time) (time.Duration, bool) {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond)), true
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return time.Duration(s * float64(time.Second)), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	return p.retryHint(body)
}
