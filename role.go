package llmtool

import (
	"context"
	"time"
)

// useRole applies Options.Role: on PostgreSQL, tools' SQL runs as that
// role (internal/dbconn/pgsession.go has the statements). NewRegistry
// checks the role once, after llmtool's tables exist; a registry without
// a database (lint only) runs nothing and checks nothing.
//
// The call path honours it in three places: each write call enters the
// role after BEGIN (execWrite) and leaves it before llmtool's own
// statements in its transaction (run), and llmtool's built-in tools (man,
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
