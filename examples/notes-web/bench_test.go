package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/examples/notes"
)

// BenchmarkStream measures what chatadapter's streaming costs over reading
// the same stream directly: the scripted model streams the same answer
// (about 60 words, each a chunk) to the same request body, read once by a
// bare HTTP client that parses the SSE lines, and once by a Runner with
// RunOptions.Stream reporting TextDelta events. Reported per answer:
// ttft-ns (from sending to the first piece of text), rest-ns (from the
// first piece to the end) and events (pieces of text). The per-event
// overhead is the difference of rest-ns divided by events.
//
//	go test -C examples/notes-web -run '^$' -bench Stream -benchtime 2000x
func BenchmarkStream(b *testing.B) {
	ep, stop, err := startScripted(&scripted{})
	require.NoError(b, err)
	defer stop()
	db, err := notes.Open(context.Background(), filepath.Join(b.TempDir(), "notes.db"))
	require.NoError(b, err)
	defer db.Close()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger(), Changesets: notes.Changesets}, notes.Tools)
	require.NoError(b, err)
	defer reg.Close()

	// The request the Runner sends, captured once for the direct client.
	var body []byte
	rec := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		return http.DefaultTransport.RoundTrip(r)
	})}
	capture := ep
	capture.HTTPClient = rec
	runner, err := chatadapter.NewRunner(chatadapter.New(reg, nil), capture, &chatadapter.RunOptions{Stream: true, System: systemPrompt})
	require.NoError(b, err)
	msgs := []json.RawMessage{chatadapter.UserMessage("hello")}
	_, err = runner.Run(context.Background(), msgs)
	require.NoError(b, err)
	runner, err = chatadapter.NewRunner(chatadapter.New(reg, nil), ep, &chatadapter.RunOptions{Stream: true, System: systemPrompt})
	require.NoError(b, err)

	report := func(b *testing.B, ttft, rest time.Duration, events int) {
		n := float64(b.N)
		b.ReportMetric(float64(ttft.Nanoseconds())/n, "ttft-ns")
		b.ReportMetric(float64(rest.Nanoseconds())/n, "rest-ns")
		b.ReportMetric(float64(events)/n, "events")
	}

	b.Run("direct", func(b *testing.B) {
		var ttft, rest time.Duration
		events := 0
		for b.Loop() {
			start := time.Now()
			req, _ := http.NewRequest(http.MethodPost, ep.BaseURL+"/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var first time.Time
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				if data == "[DONE]" {
					break
				}
				var c struct {
					Choices []struct {
						Delta struct {
							Content string `json:"content"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if err := json.Unmarshal([]byte(data), &c); err != nil {
					b.Fatal(err)
				}
				if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
					if first.IsZero() {
						first = time.Now()
					}
					events++
				}
			}
			res.Body.Close()
			ttft += first.Sub(start)
			rest += time.Since(first)
		}
		report(b, ttft, rest, events)
	})

	b.Run("chatadapter", func(b *testing.B) {
		var ttft, rest time.Duration
		events := 0
		var first time.Time
		ctx := chatadapter.WithEvents(context.Background(), func(e chatadapter.Event) {
			if e.Kind == chatadapter.TextDelta {
				if first.IsZero() {
					first = time.Now()
				}
				events++
			}
		})
		for b.Loop() {
			first = time.Time{}
			start := time.Now()
			tr, err := runner.Run(ctx, msgs)
			if err != nil || tr.Answer == "" {
				b.Fatal(err)
			}
			ttft += first.Sub(start)
			rest += time.Since(first)
		}
		report(b, ttft, rest, events)
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
