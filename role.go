package llmtool

import (
	"context"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
)

// useRole applies Options.Role: on PostgreSQL, tools' SQL runs as that
// role (internal/dbconn/pgsession.go has the statements). NewRegistry
// checks the role once, after llmtool's tables exist; a registry without
// a database (lint only) runs nothing and checks nothing.
//
// The call path honours it in three places: each write call enters the
// role after BEGIN and leaves it before llmtool's own statements in its
// transaction (roleHooks), and llmtool's built-in tools (man,
// find_tools) read the tenant settings outside the call's transaction
// (tenantSettings), since the role may not read llmtool's tables. Read
// connections switch to the role when the registry takes them for reads
// (dbconn's pgReadOn).
func (r *Registry) useRole(opts *Options) error {
	if opts == nil || opts.Role == "" || r.tx.DB == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return r.tx.UseRole(ctx, opts.Role)
}

// roleHooks plug the role into the write path (hooks.go), on PostgreSQL:
// at begin the run's statements take the role, and the capture of the
// tracked tables turns on, in one statement (dbconn.Pool.StartCall: the
// two ride one round trip); before commit llmtool's own statements run as
// the connecting user again.
func (r *Registry) roleHooks() writeHooks {
	var h writeHooks
	if r.tx.Engine != engine.Postgres || r.tx.DB == nil {
		return h
	}
	if r.tx.Role != "" || r.tracked != nil {
		h.begin = append(h.begin, func(ctx context.Context, cs *callState) error {
			return r.tx.StartCall(ctx, cs.wtx)
		})
	}
	if r.tx.Role != "" {
		h.beforeCommit = append(h.beforeCommit, func(ctx context.Context, cs *callState) error {
			return r.tx.LeaveRole(ctx, cs.wtx.Tx)
		})
	}
	return h
}
