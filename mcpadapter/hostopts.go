package mcpadapter

import (
	"reflect"

	"github.com/mark3labs/mcp-go/server"
)

// newMCPServer makes the mcp-go server with the adapter's options, then
// the host's (Options.ServerOptions). The adapter's hooks must run: if a
// host option replaced them with server.WithHooks, they are put in front
// of the host's hooks, in the host's *server.Hooks, so hooks the host adds
// to it later run too.
func newMCPServer(cfg config, ours *server.Hooks, opts []server.ServerOption) *server.MCPServer {
	m := server.NewMCPServer(cfg.name, cfg.version, append(opts, cfg.serverOptions...)...)
	if theirs := m.GetHooks(); theirs != ours {
		if theirs == nil {
			theirs = &server.Hooks{}
		}
		prependHooks(theirs, ours)
		server.WithHooks(theirs)(m)
	}
	return m
}

// prependHooks puts every hook of first in front of dst's of the same
// kind. server.Hooks holds one slice per kind of hook; reflection keeps
// this right as mcp-go adds kinds.
func prependHooks(dst, first *server.Hooks) {
	d, f := reflect.ValueOf(dst).Elem(), reflect.ValueOf(first).Elem()
	for i := range d.NumField() {
		df, ff := d.Field(i), f.Field(i)
		if df.Kind() != reflect.Slice || !df.CanSet() || ff.Len() == 0 {
			continue
		}
		merged := reflect.MakeSlice(df.Type(), 0, ff.Len()+df.Len())
		merged = reflect.AppendSlice(merged, ff)
		df.Set(reflect.AppendSlice(merged, df))
	}
}
