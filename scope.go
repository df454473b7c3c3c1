package llmtool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/toolname"
)

// defaultScopeCacheTTL is how long a registry trusts the scope settings it
// read, unless Options.ScopeCacheTTL says otherwise.
const defaultScopeCacheTTL = 2 * time.Second

// SetWrites turns write tools on or off in scope (a tenant, workspace,
// wiki or chat; "" is the default scope), persistently, and tells
// subscribers if that changed what the scope may call. Writes are off in
// a scope until it turns them on. Tools switched on or off for the scope
// one by one (SetScopeTool) keep their setting. The setting lives in the
// host's database, in a table llmtool owns (llmtool_scope_settings),
// created on first use; if it cannot be read, write tools stay off. The
// package documentation's Policy section gives the order in which a call
// is admitted.
func (r *Registry) SetWrites(ctx context.Context, scope string, on bool) error {
	return r.setScope(ctx, scope, "", &on)
}

// WritesEnabled reports whether write tools are on in scope, reading the
// database (and refreshing the registry's cached copy). On an error the
// answer is false: write tools stay off.
func (r *Registry) WritesEnabled(ctx context.Context, scope string) (bool, error) {
	st, err := r.readScope(ctx, nil, scope)
	if err != nil {
		return false, err
	}
	st.at = time.Now()
	r.storeScope(scope, st)
	return st.writes, nil
}

// SetScopeTool switches one tool on or off in scope, persistently,
// overriding the scope's write setting for that tool: a write tool switched
// on runs even while the scope's writes are off, and a read tool switched
// off is neither listed nor callable there. The global kill switch still
// wins. ResetScopeTool removes the override.
func (r *Registry) SetScopeTool(ctx context.Context, scope, tool string, on bool) error {
	if err := toolname.Validate(tool); err != nil {
		return fmt.Errorf("llmtool: SetScopeTool: %w", err)
	}
	return r.setScope(ctx, scope, tool, &on)
}

// ResetScopeTool removes a tool's override in scope, so the scope's write
// setting decides again.
func (r *Registry) ResetScopeTool(ctx context.Context, scope, tool string) error {
	if err := toolname.Validate(tool); err != nil {
		return fmt.Errorf("llmtool: ResetScopeTool: %w", err)
	}
	return r.setScope(ctx, scope, tool, nil)
}

// ScopeSetting is one stored setting: a scope's write switch (Tool "") or a
// per-tool override.
type ScopeSetting struct {
	Scope   string
	Tool    string // "" for the scope's write switch (or, with Approval, its destructive tools)
	Enabled bool   // on; for an approval setting, approval is required
	// Approval marks an approval setting (SetApproval) rather than a
	// switch.
	Approval bool
	Updated  time.Time
}

// ScopeSettings lists every stored setting, ordered by scope and tool.
// Scopes that never changed a setting are not listed: their writes are off.
func (r *Registry) ScopeSettings(ctx context.Context) ([]ScopeSetting, error) {
	db := r.tx.DB
	if db == nil {
		return nil, errNoDB
	}
	rows, err := db.QueryContext(ctx, `SELECT scope, tool, enabled, updated_at FROM `+scopeTable+` ORDER BY scope, tool`)
	if err != nil {
		return nil, fmt.Errorf("llmtool: read scope settings: %w", err)
	}
	defer rows.Close()
	var out []ScopeSetting
	for rows.Next() {
		var s ScopeSetting
		var at string
		if err := rows.Scan(&s.Scope, &s.Tool, &s.Enabled, &at); err != nil {
			return nil, fmt.Errorf("llmtool: read scope settings: %w", err)
		}
		s.Tool, s.Approval = strings.CutPrefix(s.Tool, approvalKey)
		s.Updated, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("llmtool: read scope settings: %w", err)
	}
	return out, nil
}

// Subscribe registers fn to be called after the set of tools a scope may
// call changed: with that scope after SetWrites, SetScopeTool or
// ResetScopeTool changed it (or a refresh of the cache found another
// process had), or after find_tools loaded tools for it or UnloadTools
// forgot them (what it lists changed; see Options.OnDemand), and with ""
// (meaning every scope) after SetEnabled, Add or a loader resolving. fn runs synchronously in the goroutine that
// made the change, after the change is visible to List; keep it short (the
// MCP adapter sends notifications/tools/list_changed). cancel unregisters
// fn.
//
// The first Subscribe starts one goroutine that reads the settings'
// version every ScopeCacheTTL (2 seconds by default), so changes other
// processes or replicas make reach fn within that bound, in that
// goroutine; Close stops it.
func (r *Registry) Subscribe(fn func(scope string)) (cancel func()) {
	p := &r.pol
	p.subMu.Lock()
	defer p.subMu.Unlock()
	if p.subs == nil {
		p.subs = make(map[uint64]func(string))
	}
	id := p.nextSub
	p.nextSub++
	p.subs[id] = fn
	if r.tx.DB != nil {
		p.watch.Do(func() {
			p.stop = make(chan struct{})
			go r.watchScopes(p.stop)
		})
	}
	return func() {
		p.subMu.Lock()
		delete(p.subs, id)
		p.subMu.Unlock()
	}
}

func (r *Registry) notify(scope string) {
	p := &r.pol
	p.subMu.Lock()
	ids := make([]uint64, 0, len(p.subs))
	for id := range p.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fns := make([]func(string), 0, len(ids))
	for _, id := range ids {
		fns = append(fns, p.subs[id])
	}
	p.subMu.Unlock()
	for _, fn := range fns {
		func() {
			defer func() {
				if v := recover(); v != nil {
					r.logger().Error("llmtool: subscriber panicked", "scope", scope, "panic", fmt.Sprint(v))
				}
			}()
			fn(scope)
		}()
	}
}

// policy is a registry's policy state.
type policy struct {
	requirePrincipal atomic.Bool
	authz            atomic.Pointer[func(ctx context.Context, p *Principal, tool *Spec) error]
	ttl              atomic.Int64 // time.Duration
	writesOffNext    atomic.Pointer[string]

	mu     sync.RWMutex
	scopes map[string]*scopeState

	subMu   sync.Mutex
	subs    map[uint64]func(string)
	nextSub uint64
	watch   sync.Once     // starts watchScopes with the first subscriber
	stop    chan struct{} // closed by Close: watchScopes returns

	reads atomic.Pointer[readSpecs] // read-only subset of the listing
}

// scopeState is a scope's settings as read at a time. It is immutable once
// stored.
type scopeState struct {
	writes             bool
	tools              map[string]bool // per-tool overrides
	approveDestructive bool            // SetApproval(scope, "", true)
	approvals          map[string]bool // per-tool approval settings (SetApproval)
	at                 time.Time
}

// same reports whether the two states let the same tools be called (what
// subscribers are told about).
func (s *scopeState) same(o *scopeState) bool {
	return s.writes == o.writes && maps.Equal(s.tools, o.tools)
}

// readSpecs caches the read-only subset of a listing.
type readSpecs struct {
	src   *[]*Spec
	reads []*Spec
}

const (
	scopeTable   = "llmtool_scope_settings"
	scopeVersion = "llmtool_scope_version" // one row, bumped by every change
)

var errNoDB = errors.New("llmtool: the registry has no database")

// readScope reads a scope's settings through q, or through the database
// (creating the table if needed) when q is nil.
func (r *Registry) readScope(ctx context.Context, q querier, scope string) (*scopeState, error) {
	if q == nil {
		db := r.tx.DB
		if db == nil {
			return &scopeState{}, nil
		}
		q = db
	}
	rows, err := q.QueryContext(ctx, `SELECT tool, enabled FROM `+scopeTable+` WHERE scope = $1`, scope)
	if err != nil {
		return nil, fmt.Errorf("llmtool: read settings of scope %q: %w", scope, err)
	}
	defer rows.Close()
	st := &scopeState{}
	for rows.Next() {
		var tool string
		var on bool
		if err := rows.Scan(&tool, &on); err != nil {
			return nil, fmt.Errorf("llmtool: read settings of scope %q: %w", scope, err)
		}
		if tool == "" {
			st.writes = on
			continue
		}
		if name, ok := strings.CutPrefix(tool, approvalKey); ok {
			if name == "" {
				st.approveDestructive = on
				continue
			}
			if st.approvals == nil {
				st.approvals = make(map[string]bool)
			}
			st.approvals[name] = on
			continue
		}
		if st.tools == nil {
			st.tools = make(map[string]bool)
		}
		st.tools[tool] = on
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("llmtool: read settings of scope %q: %w", scope, err)
	}
	return st, nil
}

// scopeSettings returns the scope's settings, from the cache while fresh.
// A failed read leaves write tools off and is logged. q, if not nil, is the
// call's own transaction, so a handler (man) need not take a second
// connection.
func (r *Registry) scopeSettings(ctx context.Context, q querier, scope string) *scopeState {
	if r.tx.Role != "" {
		q = nil // role.go: the call's transaction runs as the role, which may not read llmtool's tables
	}
	p := &r.pol
	now := time.Now()
	ttl := time.Duration(p.ttl.Load())
	if ttl != 0 {
		p.mu.RLock()
		s := p.scopes[scope]
		p.mu.RUnlock()
		if s != nil && (ttl < 0 || now.Sub(s.at) < ttl) {
			return s
		}
	}
	st, err := r.readScope(ctx, q, scope)
	if err != nil {
		if ctx.Err() == nil {
			r.logger().Error("llmtool: cannot read the scope's tool settings; write tools stay off", "scope", scope, "err", err)
		}
		st = &scopeState{at: now}
		if ctx.Err() != nil {
			return st // not cached: the caller gave up, the table may be fine
		}
	}
	st.at = now
	r.storeScope(scope, st)
	return st
}

// storeScope caches st and tells subscribers when it differs from what was
// cached before (a change made elsewhere).
func (r *Registry) storeScope(scope string, st *scopeState) {
	p := &r.pol
	p.mu.Lock()
	if p.scopes == nil {
		p.scopes = make(map[string]*scopeState)
	}
	old := p.scopes[scope]
	p.scopes[scope] = st
	p.mu.Unlock()
	if old != nil && !old.same(st) {
		r.notify(scope)
	}
}

// setScope writes one setting (on == nil deletes it) in a transaction
// serialized with the registry's write calls, and bumps the settings'
// version so other replicas notice (see watchScopes).
func (r *Registry) setScope(ctx context.Context, scope, tool string, on *bool) (err error) {
	if r.tx.DB == nil {
		return errNoDB
	}
	what := "writes"
	if tool != "" {
		what = "tool " + tool
	}
	var before, after *scopeState
	for attempt := 1; ; attempt++ {
		before, after, err = r.writeScope(ctx, scope, tool, on)
		if err == nil || !engine.Retryable(err) || attempt == maxAttempts {
			break
		}
		if err := retryPause(ctx, attempt); err != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("llmtool: set %s in scope %q: %w", what, scope, err)
	}
	after.at = time.Now()
	r.pol.mu.Lock()
	if r.pol.scopes == nil {
		r.pol.scopes = make(map[string]*scopeState)
	}
	old := r.pol.scopes[scope]
	r.pol.scopes[scope] = after
	r.pol.mu.Unlock()
	if !before.same(after) || (old != nil && !old.same(after)) {
		r.notify(scope)
	}
	return nil
}

// writeScope is one attempt of setScope: the scope's settings before and
// after the change, committed.
func (r *Registry) writeScope(ctx context.Context, scope, tool string, on *bool) (before, after *scopeState, err error) {
	wt, err := r.tx.BeginWrite(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer r.tx.EndWrite(wt, false)
	tx := wt.Tx
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if before, err = r.readScope(ctx, tx, scope); err != nil {
		return nil, nil, err
	}
	if on == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM `+scopeTable+` WHERE scope = $1 AND tool = $2`, scope, tool)
	} else {
		_, err = tx.ExecContext(ctx, `INSERT INTO `+scopeTable+` (scope, tool, enabled, updated_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (scope, tool) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at`,
			scope, tool, boolInt(*on), time.Now().UTC().Format(time.RFC3339Nano))
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err = tx.ExecContext(ctx, `UPDATE `+scopeVersion+` SET version = version + 1 WHERE id = 1`); err != nil {
		return nil, nil, err
	}
	if after, err = r.readScope(ctx, tx, scope); err != nil {
		return nil, nil, err
	}
	if err = tx.Commit(); err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// watchScopes tells subscribers about changes other processes make: every
// ScopeCacheTTL (2 seconds by default) it reads the settings' version,
// which every change bumps in its own transaction, and when it moved it
// reads the cached scopes again; storeScope notifies for each one that
// changed. So a change made on one replica reaches the sessions of every
// replica within one interval, however quiet they are.
func (r *Registry) watchScopes(stop chan struct{}) {
	every := time.Duration(r.pol.ttl.Load())
	if every <= 0 {
		every = defaultScopeCacheTTL
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := int64(-1)
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		var v int64
		err := r.tx.DB.QueryRowContext(ctx, `SELECT version FROM `+scopeVersion+` WHERE id = 1`).Scan(&v)
		if err == nil && v != last {
			// The first read sets the baseline, and refreshes too: a
			// change may have come between Subscribe and this read.
			r.refreshScopes(ctx)
		}
		cancel()
		if err == nil {
			last = v
		}
	}
}

// refreshScopes reads every cached scope again.
func (r *Registry) refreshScopes(ctx context.Context) {
	r.pol.mu.RLock()
	scopes := slices.Collect(maps.Keys(r.pol.scopes))
	r.pol.mu.RUnlock()
	for _, scope := range scopes {
		st, err := r.readScope(ctx, nil, scope)
		if err != nil {
			return // the next change, or the cache's TTL, tries again
		}
		st.at = time.Now()
		r.storeScope(scope, st)
	}
}

func describeScope(scope string) string {
	if scope == "" {
		return "the default scope"
	}
	return fmt.Sprintf("scope %q", scope)
}
