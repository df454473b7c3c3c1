package mcpadapter

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadBodyMatchesReadAll holds Server.readBody, which reads into a
// pooled buffer and returns an exact copy, to the reference it replaced,
// io.ReadAll of an http.MaxBytesReader: the same bytes (a non-nil slice for
// an empty body), the same error, over a real server, at sizes around the
// buffer's growth and the pool's bound, one request after another so that
// pooled buffers are reused.
func TestReadBodyMatchesReadAll(t *testing.T) {
	t.Parallel()
	const limit = 200 << 10
	s := &Server{cfg: config{maxBody: limit}}
	type got struct {
		body []byte
		err  error
	}
	results := make(chan [2]got, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var out [2]got
		r.Body = io.NopCloser(bytes.NewReader(raw))
		rec := httptest.NewRecorder()
		out[0].body, out[0].err = s.readBody(rec, r)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		ref := httptest.NewRecorder()
		out[1].body, out[1].err = io.ReadAll(http.MaxBytesReader(ref, r.Body, limit))
		results <- out
	}))
	t.Cleanup(ts.Close)
	for _, n := range []int{0, 1, 7, 511, 512, 513, 4096, maxPooledBody - 1, maxPooledBody + 1, limit, limit + 1, limit + 5000, 10} {
		resp, err := http.Post(ts.URL, "application/json", strings.NewReader(strings.Repeat("x", n)))
		require.NoError(t, err)
		resp.Body.Close()
		out := <-results
		mine, ref := out[0], out[1]
		if n > limit {
			var tooLarge *http.MaxBytesError
			require.True(t, errors.As(mine.err, &tooLarge), "size %d: %v", n, mine.err)
			require.Equal(t, ref.err.Error(), mine.err.Error())
			continue
		}
		require.NoError(t, mine.err, "size %d", n)
		require.NoError(t, ref.err)
		require.NotNil(t, mine.body, "size %d: io.ReadAll returns a non-nil slice", n)
		require.Equal(t, ref.body, mine.body, "size %d", n)
		require.Equal(t, len(mine.body), cap(mine.body), "size %d: the copy is the body's size", n)
	}
}
