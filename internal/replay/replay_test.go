package replay

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/callinfo"
	"github.com/llmtool/llmtool/internal/token"
)

// question is one Ask of a test: its key (empty for the default), its
// content, and the answer the test expects ("" when it is asked).
type question struct {
	prefix, key, content string
	want                 string
	wantKey              string
	wantErr              error
}

// TestAsk: which questions get which answers.
func TestAsk(t *testing.T) {
	t.Parallel()
	answer := func(key, content, value string) Answer {
		return Answer{Key: key, Digest: token.Digest([]byte(content)), Value: json.RawMessage(value)}
	}
	for _, tc := range []struct {
		name    string
		answers []Answer
		asks    []question
	}{
		{name: "the answer to the question asked", answers: []Answer{answer("confirm", "Sure?", `"yes"`)},
			asks: []question{{prefix: "elicit", key: "confirm", content: "Sure?", want: `"yes"`, wantKey: "confirm"}}},
		{name: "the question changed since", answers: []Answer{answer("confirm", "Delete 2 notes?", `"yes"`)},
			asks: []question{{prefix: "elicit", key: "confirm", content: "Delete 3 notes?", wantKey: "confirm"}}},
		{name: "another key", answers: []Answer{answer("other", "Sure?", `"yes"`)},
			asks: []question{{prefix: "elicit", key: "confirm", content: "Sure?", wantKey: "confirm"}}},
		{name: "the latest answer wins", answers: []Answer{answer("confirm", "Sure?", `"no"`), answer("confirm", "Sure?", `"yes"`)},
			asks: []question{{prefix: "elicit", key: "confirm", content: "Sure?", want: `"yes"`, wantKey: "confirm"}}},
		{name: "an answer without a digest answers its key", answers: []Answer{{Key: "confirm", Value: json.RawMessage(`"yes"`)}},
			asks: []question{{prefix: "elicit", key: "confirm", content: "anything", want: `"yes"`, wantKey: "confirm"}}},
		{name: "an answer use refuses is asked again", answers: []Answer{answer("confirm", "Sure?", `12345`)},
			asks: []question{{prefix: "elicit", key: "confirm", content: "Sure?", wantKey: "confirm"}}},
		{name: "default keys count per prefix",
			answers: []Answer{answer("elicit-2", "b", `"B"`), answer("sample-1", "c", `"C"`)},
			asks: []question{
				{prefix: "elicit", content: "a", wantKey: "elicit-1"},
				{prefix: "elicit", content: "b", want: `"B"`, wantKey: "elicit-2"},
				{prefix: "sample", content: "c", want: `"C"`, wantKey: "sample-1"},
			}},
		{name: "two questions under one key",
			asks: []question{
				{prefix: "elicit", key: "k", content: "a", wantKey: "k"},
				{prefix: "elicit", key: "k", content: "b", wantKey: "k", wantErr: ErrDuplicate},
			}},
		{name: "the adapter's key", asks: []question{{prefix: "elicit", key: "mine", content: "a", wantKey: "mine", wantErr: ErrReserved}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := New[string](tc.answers, "mine")
			var wantAsked []string
			var wantUsed int
			for _, q := range tc.asks {
				var got json.RawMessage
				key, answered, err := b.Ask(context.Background(), q.prefix, q.key, q.content, func(v json.RawMessage) bool {
					var s string
					if json.Unmarshal(v, &s) != nil {
						return false
					}
					got = v
					return true
				}, []byte(q.content))
				require.Equal(t, q.wantKey, key)
				if q.wantErr != nil {
					require.ErrorIs(t, err, q.wantErr)
					continue
				}
				require.NoError(t, err)
				require.Equal(t, q.want != "", answered)
				if answered {
					require.JSONEq(t, q.want, string(got))
					wantUsed++
				} else {
					wantAsked = append(wantAsked, q.content)
				}
			}
			asked, used := b.Asked()
			var gotAsked []string
			for _, a := range asked {
				gotAsked = append(gotAsked, a.Request)
				require.Equal(t, token.Digest([]byte(a.Request)), a.Digest)
			}
			require.Equal(t, wantAsked, gotAsked)
			require.Len(t, used, wantUsed)
			for _, u := range used {
				require.NotEmpty(t, u.Digest, "a used answer names the question it answered")
			}
		})
	}
}

// TestRunsStartAgain: each run of the handler counts its questions from
// one and asks anew; an answer the adapter added is found by Answer.
func TestRunsStartAgain(t *testing.T) {
	t.Parallel()
	b := New[string]([]Answer{{Key: "mine", Digest: "d", Value: json.RawMessage(`true`)}, {Key: "undigested", Value: json.RawMessage(`1`)}}, "mine")
	run := func(r int) context.Context {
		return context.WithValue(context.Background(), callinfo.Key{}, callinfo.Info{Run: &r})
	}
	use := func(json.RawMessage) bool { return true }
	first, second := run(1), run(2)
	key, _, err := b.Ask(first, "elicit", "", "a", use, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "elicit-1", key)
	b.Add(Asked[string]{Question: Question{Key: "mine", Digest: "x"}, Request: "approve?"})
	asked, _ := b.Asked()
	require.Len(t, asked, 2)

	key, _, err = b.Ask(second, "elicit", "", "a", use, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "elicit-1", key, "a new run counts from one")
	asked, _ = b.Asked()
	require.Len(t, asked, 1, "a new run forgets the last run's questions")

	a, ok := b.Answer("mine")
	require.True(t, ok)
	require.JSONEq(t, `true`, string(a.Value))
	_, ok = b.Answer("undigested")
	require.False(t, ok, "an answer to no question a state asked")
}
