package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter"
	chatrun "github.com/llmtool/llmtool/chatadapter/run"
	"github.com/llmtool/llmtool/examples/notes"
)

// BenchmarkStream measures what chatadapter's streaming costs over reading
// the same stream directly: the scripted model streams the same answer
// (39 words, a chunk each) to the same request body, read by a bare HTTP
// client that parses the SSE lines, and by a Runner with
// run.Options.Stream reporting TextDelta events; each round runs both, in
// alternating order, so the machine's noise falls on both alike. Reported
// as medians: the time from sending to the first word (ttft), from the
// first word to the end (rest), and what chatadapter adds to each, the
// latter per event.
//
//	go test -C examples/notes-web -run '^$' -bench Stream -benchtime 2000x -count 3
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
	capture := ep
	capture.HTTPClient = &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		return http.DefaultTransport.RoundTrip(r)
	})}
	runner, err := chatrun.New(chatadapter.New(reg, nil), capture, &chatrun.Options{Stream: true, System: systemPrompt})
	require.NoError(b, err)
	msgs := []json.RawMessage{chatrun.UserMessage("hello")}
	_, err = runner.Run(context.Background(), msgs)
	require.NoError(b, err)
	runner, err = chatrun.New(chatadapter.New(reg, nil), ep, &chatrun.Options{Stream: true, System: systemPrompt})
	require.NoError(b, err)

	var first time.Time
	events := 0
	ctx := chatadapter.WithEvents(context.Background(), func(e chatadapter.Event) {
		if e.Kind == chatadapter.TextDelta {
			if first.IsZero() {
				first = time.Now()
			}
			events++
		}
	})
	viaAdapter := func() (ttft, rest time.Duration) {
		first = time.Time{}
		start := time.Now()
		tr, err := runner.Run(ctx, msgs)
		if err != nil || tr.Answer == "" {
			b.Fatal(err)
		}
		return first.Sub(start), time.Since(first)
	}
	direct := func() (ttft, rest time.Duration) {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodPost, ep.BaseURL+"/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
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
			if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" && first.IsZero() {
				first = time.Now()
			}
		}
		return first.Sub(start), time.Since(first)
	}

	var dTTFT, dRest, aTTFT, aRest []time.Duration
	round := 0
	for b.Loop() {
		runs := []func(){
			func() { t, r := direct(); dTTFT, dRest = append(dTTFT, t), append(dRest, r) },
			func() { t, r := viaAdapter(); aTTFT, aRest = append(aTTFT, t), append(aRest, r) },
		}
		if round%2 == 1 {
			runs[0], runs[1] = runs[1], runs[0]
		}
		runs[0]()
		runs[1]()
		round++
	}
	perAnswer := float64(events) / float64(len(aRest))
	b.ReportMetric(float64(median(dTTFT)), "direct-ttft-ns")
	b.ReportMetric(float64(median(aTTFT)), "adapter-ttft-ns")
	b.ReportMetric(float64(median(aTTFT)-median(dTTFT)), "added-ttft-ns")
	b.ReportMetric(float64(median(aRest)-median(dRest))/perAnswer, "added-ns/event")
	b.ReportMetric(perAnswer, "events")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
