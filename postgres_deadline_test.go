package llmtool_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/pgtest"
)

// silentListener accepts connections on 127.0.0.1 and never answers on
// them: a server that takes the connection and then says nothing, so
// that a dial ends only when the caller's context does. It returns the
// listener's address.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan net.Conn, 64)
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestPostgresDialDeadline: a call whose deadline passes while pgx dials
// a new connection ran out of time; the database is not down. The pool
// dials the real server for NewRegistry, and then, its connections gone,
// a listener that never answers. The model hears that a read timed out
// (a write's BEGIN that ran out of time is told as other writes' doing,
// by retry.go), that a call whose context was cancelled during the dial
// was cancelled, and never that the database cannot be reached; the
// engine's classification of pgx's own errors agrees.
func TestPostgresDialDeadline(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	silent := silentListener(t)
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	var mute atomic.Bool
	dialer := &net.Dialer{}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !mute.Load() {
			return dialer.DialContext(ctx, network, addr)
		}
		if dialing, ok := ctx.Value(dialKey{}).(chan struct{}); ok {
			// A dial still under way when the context ends (pgx dials
			// twice: with TLS, then without).
			select {
			case <-dialing:
			default:
				close(dialing)
			}
			<-ctx.Done()
		}
		return dialer.DialContext(ctx, "tcp", silent)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(2) // the registry reserves no connection for reads
	_, err = db.Exec(`CREATE TABLE items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()}, securityTools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	require.NoError(t, reg.Tenants().SetWrites(context.Background(), "", true))
	db.SetMaxIdleConns(0) // every call dials, and from now on reaches the silent listener
	mute.Store(true)

	for _, tt := range []struct{ tool, end, text string }{
		{"query_sql", "deadline", "The call to query_sql timed out before it finished; nothing was saved. Call it again, with less work if possible."},
		// The write path (retry.go) tells a BEGIN that ran out of time as
		// a database busy with other writes: not down, at least.
		{"run_sql", "deadline", "The database is busy, so run_sql could not finish and changed nothing. Try again in a few seconds; if it is still busy, tell the user."},
		{"query_sql", "cancel", "The call to query_sql was cancelled before it finished; nothing was saved. Call it again if it is still needed."},
		{"run_sql", "cancel", "The call to run_sql was cancelled before it finished; nothing was saved. Call it again if it is still needed."},
	} {
		ctx, cancel := dialEnds(tt.end)
		res := reg.Invoke(ctx, llmtool.Call{Tool: tt.tool, Args: mustJSON(t, modelSQL{SQL: `SELECT 'x'`})})
		cancel()
		require.True(t, res.IsError, "%s, %s", tt.tool, tt.end)
		require.Equal(t, tt.text, res.Text(), "%s, %s: %v", tt.tool, tt.end, res.Err)
		require.False(t, engine.Unavailable(res.Err), "%s, %s: %v", tt.tool, tt.end, res.Err)
	}

	// The engine's view of pgx's own errors, from a dial the deadline
	// ended and from one a cancellation ended.
	for _, end := range []string{"deadline", "cancel"} {
		ctx, cancel := dialEnds(end)
		err := db.PingContext(ctx)
		cancel()
		require.Error(t, err, end)
		require.False(t, engine.Unavailable(err), "%s: %v", end, err)
		require.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled), "%s: %v", end, err)
	}
}

// dialEnds returns a context that a deadline ends soon ("deadline"), or
// that is cancelled while pgx dials ("cancel").
func dialEnds(end string) (context.Context, context.CancelFunc) {
	if end == "deadline" {
		return context.WithTimeout(context.Background(), 200*time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dialing := make(chan struct{})
	go func() {
		select {
		case <-dialing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return context.WithValue(ctx, dialKey{}, dialing), cancel
}

type dialKey struct{}
