package llmtool_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

func TestDuplicateNamesAcrossModules(t *testing.T) {
	t.Parallel()
	other := llmtool.DefineTools("other", getItem)
	_, err := llmtool.NewRegistry(openDB(t), nil, itemTools, other)
	require.EqualError(t, err, `llmtool: tool "get_item" is defined by both module "items" and module "other"; rename one of them`)

	reg := newRegistry(t, openDB(t), itemTools)
	require.EqualError(t, reg.Add(other), `llmtool: tool "get_item" is defined by both module "items" and module "other"; rename one of them`)
}

func TestLoaderResolvedOnce(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg := newRegistry(t, db, itemTools)
	var runs atomic.Int32
	release := make(chan struct{})
	reg.AddLoader("lazy", func(ctx context.Context) (*llmtool.Module, error) {
		runs.Add(1)
		<-release // hold every first caller in the one resolution
		tool := llmtool.Read("lazy_tool", "Loaded lazily.", func(c *llmtool.ReadCtx, _ struct{}) (ItemOut, error) {
			return ItemOut{ID: 7}, nil
		})
		return llmtool.DefineTools("lazy", tool), nil
	})
	require.Zero(t, runs.Load(), "not loaded at start-up")
	require.False(t, invoke(reg, "get_item", `{"id":1}`).IsError, "known tools do not wait for loaders")
	require.Zero(t, runs.Load())

	var wg sync.WaitGroup
	results := make([]llmtool.Result, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = invoke(reg, "lazy_tool", `{}`)
		}()
	}
	close(release)
	wg.Wait()
	require.Equal(t, int32(1), runs.Load())
	for _, res := range results {
		require.False(t, res.IsError, res.Text())
		require.JSONEq(t, `{"id":7,"name":"","qty":0}`, string(res.JSON))
	}
	spec, ok := reg.Tool(context.Background(), "lazy_tool")
	require.True(t, ok)
	require.Equal(t, "lazy", spec.Module)
}

func TestLoaderFailureReported(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t), itemTools)
	var runs atomic.Int32
	reg.AddLoader("broken", func(ctx context.Context) (*llmtool.Module, error) {
		runs.Add(1)
		return nil, errors.New("plugin file missing")
	})
	reg.AddLoader("panicky", func(ctx context.Context) (*llmtool.Module, error) { panic("bad plugin") })
	reg.AddLoader("clash", func(ctx context.Context) (*llmtool.Module, error) {
		return llmtool.DefineTools("clash", getItem), nil
	})

	specs, err := reg.List(context.Background(), nil)
	const want = "llmtool: loader \"broken\": plugin file missing\nllmtool: loader \"panicky\" panicked: bad plugin\n" +
		"llmtool: loader \"clash\": llmtool: tool \"get_item\" is defined by both module \"items\" and module \"clash\"; rename one of them"
	require.EqualError(t, err, want)
	require.Equal(t, []string{"get_item", "add_item"}, names(specs)[:2], "the tools that did load are still listed")

	res := invoke(reg, "from_broken_plugin", `{}`)
	require.True(t, res.IsError)
	require.EqualError(t, res.Err, want)
	require.Equal(t, "Internal error in from_broken_plugin; the details were logged. Try again once; if it fails again, tell the user the tool is failing.", res.Text())
	_, err = reg.List(context.Background(), nil)
	require.EqualError(t, err, want, "reported every time")
	require.Equal(t, int32(1), runs.Load(), "not retried")
}

func TestLoaderWaitHonoursContext(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t))
	block := make(chan struct{})
	defer close(block)
	reg.AddLoader("slow", func(ctx context.Context) (*llmtool.Module, error) {
		<-block
		return llmtool.DefineTools("slow"), nil
	})
	started := make(chan struct{})
	go func() {
		close(started)
		reg.List(context.Background(), nil) // the first caller runs the loader
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := reg.List(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	cause := errors.New("row 7 missing")
	tests := []struct {
		name string
		err  error
		want string
		kind llmtool.Kind
	}{
		{"invalid args", llmtool.InvalidArgs("/limit: must be positive."), "Error: /limit: must be positive.", llmtool.KindInvalidArgs},
		{"invalid args with next", llmtool.InvalidArgs("/limit: must be positive").Next("Send 1 or more."), "Error: /limit: must be positive. Send 1 or more.", llmtool.KindInvalidArgs},
		{"not found", llmtool.NotFound("Note %q not found.", "abc").Next("Call search_notes to find the ID."), `Note "abc" not found. Call search_notes to find the ID.`, llmtool.KindNotFound},
		{"denied", llmtool.Denied("Note is protected."), "Note is protected.", llmtool.KindDenied},
		{"conflict", llmtool.Conflict("Title taken").Next("Pick another title."), "Title taken. Pick another title.", llmtool.KindConflict},
		{"wrapped cause", llmtool.NotFound("Note not found: %w", cause), "Note not found: row 7 missing", llmtool.KindNotFound},
		{"context", context.DeadlineExceeded, "context deadline exceeded", llmtool.KindCancelled},
		{"plain", errors.New("disk"), "disk", llmtool.KindInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.EqualError(t, tc.err, tc.want)
			require.Equal(t, tc.kind, llmtool.KindOf(tc.err))
		})
	}
	wrapped := llmtool.NotFound("Note not found: %w", cause)
	require.ErrorIs(t, wrapped, cause)
	require.Equal(t, llmtool.KindNotFound, llmtool.KindOf(wrapped))
	require.Equal(t, "not_found", llmtool.KindNotFound.String())
}
