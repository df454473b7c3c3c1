package run

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		body   string
		want   time.Duration
		said   bool
	}{
		{"seconds", http.Header{"Retry-After": {"2"}}, "", 2 * time.Second, true},
		{"zero: now", http.Header{"Retry-After": {"0"}}, "", 0, true},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, "", 1500 * time.Millisecond, true},
		{"milliseconds first", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, "", 250 * time.Millisecond, true},
		{"an HTTP date", http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, "", 30 * time.Second, true},
		{"a date past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, "", 0, true},
		{"Gemini's RetryInfo", nil, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"},` +
			`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`, 37 * time.Second, true},
		{"nothing said", nil, `{"error":{"message":"busy"}}`, 0, false},
		{"not a time", http.Header{"Retry-After": {"soon"}}, "", 0, false},
		{"negative", http.Header{"Retry-After": {"-1"}}, "", 0, false},
	}
	for _, tt := range tests {
		got, said := retryAfter(gemini{}, tt.header, []byte(tt.body), now)
		require.Equal(t, tt.want, got, tt.name)
		require.Equal(t, tt.said, said, tt.name)
	}
	// RetryInfo is Gemini's: another API's body is not read for it.
	_, said := retryAfter(anthropic{}, nil, []byte(tests[6].body), now)
	require.False(t, said, tests[6].name)
}

// retryWait waits as the server asked, or backs off with jitter; it
// gives up on what a retry cannot cure, after the retries, for a wait
// over a minute, and for one past the context's deadline.
func TestRetryWait(t *testing.T) {
	t.Parallel()
	r := &Runner{retries: 3, retryDelay: 100 * time.Millisecond}
	status := func(code int, after time.Duration, said bool) error {
		return fmt.Errorf("wrapped: %w", &HTTPError{StatusCode: code, RetryAfter: after, saidWhen: said})
	}
	told := func(code int, shouldRetry string, final bool) error {
		return &HTTPError{StatusCode: code, shouldRetry: shouldRetry, final: final, saidWhen: true}
	}
	broken := fmt.Errorf("chatadapter: run: %w", &transportError{errors.New("connection reset by peer")})
	tests := []struct {
		name     string
		err      error
		attempt  int
		min, max time.Duration
		retry    bool
	}{
		{"429 with Retry-After", status(429, 2*time.Second, true), 1, 2 * time.Second, 2 * time.Second, true},
		{"529 without: backoff", status(529, 0, false), 1, 50 * time.Millisecond, 100 * time.Millisecond, true},
		{"500, third attempt: doubled twice", status(500, 0, false), 3, 200 * time.Millisecond, 400 * time.Millisecond, true},
		{"503 asked to wait 0", status(503, 0, true), 2, 0, 0, true},
		{"a broken connection", broken, 1, 50 * time.Millisecond, 100 * time.Millisecond, true},
		{"retries spent", status(429, 0, true), 4, 0, 0, false},
		{"400 is the request's fault", status(400, 0, true), 1, 0, 0, false},
		{"401", status(401, 0, false), 1, 0, 0, false},
		{"over a minute", status(429, 2*time.Minute, true), 1, 0, 0, false},
		{"408", status(408, 0, true), 1, 0, 0, true},
		{"409", status(409, 0, true), 1, 0, 0, true},
		{"x-should-retry: false over a 503", told(503, "false", false), 1, 0, 0, false},
		{"x-should-retry: true over a 400", told(400, "true", false), 1, 0, 0, true},
		{"a quota, whatever x-should-retry says", told(429, "true", true), 1, 0, 0, false},
		{"an error after the stream's first words", &streamError{status(529, 0, true)}, 1, 0, 0, false},
		{"the context's error", fmt.Errorf("chatadapter: run: %w", context.Canceled), 1, 0, 0, false},
	}
	for _, tt := range tests {
		wait, retry := r.retryWait(context.Background(), tt.err, tt.attempt)
		require.Equal(t, tt.retry, retry, tt.name)
		require.GreaterOrEqual(t, wait, tt.min, tt.name)
		require.LessOrEqual(t, wait, tt.max, tt.name)
	}

	// A wait the deadline does not leave room for is not waited.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, retry := r.retryWait(ctx, status(429, 5*time.Second, true), 1)
	require.False(t, retry)
	wait, retry := r.retryWait(ctx, status(429, 0, true), 1)
	require.True(t, retry)
	require.Zero(t, wait)
	cancel()
	_, retry = r.retryWait(ctx, status(429, 0, true), 1)
	require.False(t, retry, "ctx is done")

	// The backoff stops doubling at maxBackoff.
	wait, _ = (&Runner{retries: 20, retryDelay: time.Second}).retryWait(context.Background(), status(500, 0, false), 10)
	require.LessOrEqual(t, wait, maxBackoff)
	require.GreaterOrEqual(t, wait, maxBackoff/2)
}

func TestSleep(t *testing.T) {
	t.Parallel()
	require.NoError(t, sleep(context.Background(), 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, sleep(ctx, time.Hour), context.Canceled, "a cancelled wait returns at once")
	require.ErrorIs(t, sleep(ctx, 0), context.Canceled)
}
