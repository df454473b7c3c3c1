// Package tenant keeps the settings that decide, per tenant, which tools a
// registry lets a model call. A tenant is whatever the host's tool calls
// run on behalf of: a workspace, a wiki, a chat; the host names it in the
// call's context (llmtool.WithTenant), and "" is the default tenant.
//
// In every tenant read tools are on and write tools are off, until the host
// turns writes on (SetWrites). One tool can be switched on or off in a
// tenant whatever its writes say (SetTool, ResetTool), and a tenant can
// require a person's approval before chosen writes commit (SetApproval).
// The settings persist in the host's database, in a table llmtool owns
// (llmtool_scope_settings, created by llmtool.NewRegistry), so they
// survive restarts and are shared by every process on the database.
//
// A registry has one handle on them, reached with Registry.Tenants:
//
//	err := reg.Tenants().SetWrites(ctx, "wiki-42", true)
//
// That handle caches what it read (see Options.CacheTTL): changes made
// through it take effect at once, changes other processes make within the
// cache's lifetime. Subscribe reports both, so that the MCP adapter can
// send tools/list_changed.
package tenant

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmtool/llmtool/internal/dbconn"
	"github.com/llmtool/llmtool/internal/toolname"
)

// The tables, created by llmtool's migrations (the root package's
// engine.go): one row per setting, and one row whose version every change
// bumps, so that other processes notice.
const (
	table        = "llmtool_scope_settings"
	versionTable = "llmtool_scope_version"
)

// approvalPrefix prefixes the tool column of an approval setting; tool
// names cannot contain ':', so switches and approval settings never meet.
const approvalPrefix = "approval:"

// defaultCacheTTL is how long a handle trusts the settings it read, unless
// Options.CacheTTL says otherwise.
const defaultCacheTTL = 2 * time.Second

// NoCache, as Options.CacheTTL (llmtool.Options.TenantCacheTTL), reads a
// tenant's settings on every listing and call.
const NoCache time.Duration = -1

// Options configure New. The zero value gives the defaults.
type Options struct {
	// CacheTTL is how long the handle keeps a tenant's settings in memory
	// before reading them again. Changes made through the handle take
	// effect at once whatever the TTL; a change another process makes is
	// seen once the cached copy is older than the TTL, and then reported
	// to subscribers. Zero means two seconds; NoCache reads the settings
	// every time (a primary-key lookup).
	CacheTTL time.Duration
	// Logger receives the reads that failed (writes then stay off) and
	// the subscribers that panicked. Default: slog.Default().
	Logger *slog.Logger
	// Write runs f in a write transaction, committed when f returns nil
	// and rolled back otherwise. A registry passes its own, so that
	// changes queue behind its write calls (SQLite has one writer) and
	// run again, as write calls do, while they lose to other writes
	// (PostgreSQL's serialization failures, SQLite's lock held by another
	// process), until the deadline. Nil runs f in a transaction of the
	// database, once.
	Write func(ctx context.Context, f func(tx *sql.Tx) error) error
}

// Settings is the handle on the tenant settings stored in a database. It
// is safe for concurrent use.
type Settings struct {
	db    *sql.DB
	ttl   time.Duration // 0: no cache
	log   *slog.Logger  // nil: slog.Default()
	write func(ctx context.Context, f func(tx *sql.Tx) error) error

	mu    sync.RWMutex
	cache map[string]*cached

	subMu   sync.Mutex
	subs    map[uint64]func(string)
	nextSub uint64
	stop    chan struct{} // closed by Close: watch returns; nil until the first Subscribe
	closed  bool
}

// cached is a tenant's settings as read at a time.
type cached struct {
	state *State
	at    time.Time
}

// New returns the handle on the tenant settings stored in db. Each
// llmtool.Registry makes one (Registry.Tenants), which hosts use, so that
// its listings and calls see a change at once. db may be nil: every tenant
// then has its writes off, and changes fail.
func New(db *sql.DB, opts *Options) *Settings {
	s := &Settings{db: db, ttl: defaultCacheTTL}
	if opts != nil {
		switch {
		case opts.CacheTTL < 0:
			s.ttl = 0
		case opts.CacheTTL > 0:
			s.ttl = opts.CacheTTL
		}
		s.log, s.write = opts.Logger, opts.Write
	}
	if s.write == nil {
		s.write = s.inTx
	}
	return s
}

// State is a tenant's settings at one time. The handle shares it: do not
// modify it.
type State struct {
	// Writes reports whether write tools are on (SetWrites).
	Writes bool
	// Tools holds the tools switched on or off one by one (SetTool), by
	// name; nil when there are none.
	Tools map[string]bool
	// Approval holds the approval settings (SetApproval) by tool name,
	// with "" for the tenant's Destructive tools; nil when there are none.
	Approval map[string]bool
	// Err is why the settings could not be read, nil when they were: the
	// state is then the default one (writes off), and it is not cached, so
	// the next call reads again.
	Err error
}

// same reports whether the two states let the same tools be called (what
// subscribers are told about).
func (st *State) same(o *State) bool {
	return st.Writes == o.Writes && maps.Equal(st.Tools, o.Tools)
}

// errNoDB is the error of a change, and of List, without a database.
var errNoDB = errors.New("llmtool: the registry has no database")

// SetWrites turns write tools on or off in tenant, persistently, and tells
// subscribers if that changed what the tenant may call. Writes are off in
// a tenant until it turns them on. Tools switched on or off one by one
// (SetTool) keep their setting. The package documentation of llmtool gives
// the order in which a call is admitted.
func (s *Settings) SetWrites(ctx context.Context, tenant string, on bool) error {
	return s.set(ctx, tenant, "", &on)
}

// Writes reports whether write tools are on in tenant, reading the
// database (and refreshing the cached copy). On an error the answer is
// false: write tools stay off.
func (s *Settings) Writes(ctx context.Context, tenant string) (bool, error) {
	if s.db == nil {
		return false, nil
	}
	st, err := s.read(ctx, s.db, tenant)
	if err != nil {
		return false, err
	}
	s.store(tenant, st, time.Now())
	return st.Writes, nil
}

// SetTool switches one tool on or off in tenant, persistently, overriding
// the tenant's write setting for that tool: a write tool switched on runs
// even while the tenant's writes are off, and a read tool switched off is
// neither listed nor callable there. The registry's kill switch
// (Registry.SetEnabled) still wins. ResetTool removes the override.
func (s *Settings) SetTool(ctx context.Context, tenant, tool string, on bool) error {
	if err := toolname.Validate(tool); err != nil {
		return fmt.Errorf("llmtool: SetTool: %w", err)
	}
	return s.set(ctx, tenant, tool, &on)
}

// ResetTool removes a tool's override in tenant (SetTool), so that the
// tenant's write setting decides again.
func (s *Settings) ResetTool(ctx context.Context, tenant, tool string) error {
	if err := toolname.Validate(tool); err != nil {
		return fmt.Errorf("llmtool: ResetTool: %w", err)
	}
	return s.set(ctx, tenant, tool, nil)
}

// SetApproval requires (on) or stops requiring a person's approval in
// tenant, persistently: for the named tool, or with tool "" for every
// Destructive tool. A tool's own setting wins over the tenant's rule for
// destructive tools, which wins over the tool's llmtool.NeedsApproval.
// List shows these settings with Approval set.
func (s *Settings) SetApproval(ctx context.Context, tenant, tool string, on bool) error {
	return s.set(ctx, tenant, approvalPrefix+tool, &on)
}

// Setting is one stored setting: a tenant's write switch (Tool ""), a
// tool's override, or an approval setting.
type Setting struct {
	Tenant string
	// Tool is the tool the setting is for; "" for the tenant's write
	// switch or, with Approval, its Destructive tools.
	Tool string
	// Enabled is the switch's position; for an approval setting, whether
	// approval is required.
	Enabled bool
	// Approval marks an approval setting (SetApproval) rather than a
	// switch.
	Approval bool
	Updated  time.Time
}

// List returns every stored setting, ordered by tenant and tool. Tenants
// that never changed a setting are not listed: their writes are off.
func (s *Settings) List(ctx context.Context) ([]Setting, error) {
	if s.db == nil {
		return nil, errNoDB
	}
	rows, err := s.db.QueryContext(ctx, `SELECT scope, tool, enabled, updated_at FROM `+table+` ORDER BY scope, tool`)
	if err != nil {
		return nil, fmt.Errorf("llmtool: read tenant settings: %w", err)
	}
	defer rows.Close()
	var out []Setting
	for rows.Next() {
		var st Setting
		var at string
		if err := rows.Scan(&st.Tenant, &st.Tool, &st.Enabled, &at); err != nil {
			return nil, fmt.Errorf("llmtool: read tenant settings: %w", err)
		}
		st.Tool, st.Approval = strings.CutPrefix(st.Tool, approvalPrefix)
		st.Updated, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("llmtool: read tenant settings: %w", err)
	}
	return out, nil
}

// Get returns tenant's settings, from the cache while it is fresh (see
// Options.CacheTTL), else from the database. A failed read is logged and
// gives settings with writes off and Err set; it is not cached, so the
// next call reads again (a database that restarts must not leave writes
// off for a whole TTL).
func (s *Settings) Get(ctx context.Context, tenant string) *State {
	now := time.Now()
	if s.ttl != 0 {
		s.mu.RLock()
		c := s.cache[tenant]
		s.mu.RUnlock()
		if c != nil && now.Sub(c.at) < s.ttl {
			return c.state
		}
	}
	if s.db == nil {
		return &State{}
	}
	st, err := s.read(ctx, s.db, tenant)
	if err != nil {
		if ctx.Err() != nil {
			return &State{} // not cached: the caller gave up, the table may be fine
		}
		s.logger().Error("llmtool: cannot read the tenant's tool settings; write tools stay off", "tenant", tenant, "err", err)
		return &State{Err: err}
	}
	s.store(tenant, st, now)
	return st
}

// Expire makes the cached copy of tenant's settings stale, so that the
// next listing or call of the tenant reads them from the database, and
// subscribers hear if they changed: for a host that learns by its own
// means (a message between its replicas) that another process changed
// them before the cache's lifetime (Options.CacheTTL) is over.
func (s *Settings) Expire(tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cache[tenant]; c != nil {
		// Kept, not deleted: store compares the next read with it.
		s.cache[tenant] = &cached{state: c.state}
	}
}

func (s *Settings) logger() *slog.Logger {
	if s.log != nil {
		return s.log
	}
	return slog.Default()
}

// read reads a tenant's settings through q: the database, or the
// transaction that changes them.
func (s *Settings) read(ctx context.Context, q dbconn.Querier, tenant string) (*State, error) {
	rows, err := q.QueryContext(ctx, `SELECT tool, enabled FROM `+table+` WHERE scope = $1`, tenant)
	if err != nil {
		return nil, fmt.Errorf("llmtool: read settings of tenant %q: %w", tenant, err)
	}
	defer rows.Close()
	st := &State{}
	for rows.Next() {
		var tool string
		var on bool
		if err := rows.Scan(&tool, &on); err != nil {
			return nil, fmt.Errorf("llmtool: read settings of tenant %q: %w", tenant, err)
		}
		switch name, approval := strings.CutPrefix(tool, approvalPrefix); {
		case approval:
			if st.Approval == nil {
				st.Approval = make(map[string]bool)
			}
			st.Approval[name] = on
		case tool == "":
			st.Writes = on
		default:
			if st.Tools == nil {
				st.Tools = make(map[string]bool)
			}
			st.Tools[tool] = on
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("llmtool: read settings of tenant %q: %w", tenant, err)
	}
	return st, nil
}

// store caches st, read at at, and tells subscribers when it differs from
// what was cached before (a change made elsewhere).
func (s *Settings) store(tenant string, st *State, at time.Time) {
	old := s.swap(tenant, st, at)
	if old != nil && !old.same(st) {
		s.Notify(tenant)
	}
}

// swap caches st and returns what was cached before, or nil.
func (s *Settings) swap(tenant string, st *State, at time.Time) *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil {
		s.cache = make(map[string]*cached)
	}
	old := s.cache[tenant]
	s.cache[tenant] = &cached{state: st, at: at}
	if old == nil {
		return nil
	}
	return old.state
}

// set writes one setting (on == nil deletes it) and bumps the settings'
// version so that other processes notice (see watch).
func (s *Settings) set(ctx context.Context, tenant, tool string, on *bool) error {
	if s.db == nil {
		return errNoDB
	}
	var before, after *State
	err := s.write(ctx, func(tx *sql.Tx) (err error) {
		if before, err = s.read(ctx, tx, tenant); err != nil {
			return err
		}
		if on == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE scope = $1 AND tool = $2`, tenant, tool)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO `+table+` (scope, tool, enabled, updated_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (scope, tool) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at`,
				tenant, tool, boolInt(*on), time.Now().UTC().Format(time.RFC3339Nano))
		}
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `UPDATE `+versionTable+` SET version = version + 1 WHERE id = 1`); err != nil {
			return err
		}
		after, err = s.read(ctx, tx, tenant)
		return err
	})
	if err != nil {
		what := "writes"
		if tool != "" {
			what = "tool " + tool
		}
		return fmt.Errorf("llmtool: set %s in tenant %q: %w", what, tenant, err)
	}
	old := s.swap(tenant, after, time.Now())
	if !before.same(after) || (old != nil && !old.same(after)) {
		s.Notify(tenant)
	}
	return nil
}

// inTx is the default Options.Write: f in a transaction of the database.
func (s *Settings) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Subscribe registers fn to be called after the set of tools a tenant may
// call changed: with that tenant after SetWrites, SetTool or ResetTool
// changed it (or a refresh of the cache found that another process had),
// or after its registry loaded tools for it on demand or forgot them
// (Registry.UnloadTools), and with "" (meaning every tenant) after the
// registry's kill switch (SetEnabled), Add or a loader resolving changed
// what it serves; see Notify. fn runs synchronously in the goroutine that
// made the change, after the change is visible to listings; keep it short
// (the MCP adapter sends notifications/tools/list_changed). cancel
// unregisters fn.
//
// The first Subscribe starts one goroutine that reads the settings'
// version every CacheTTL (2 seconds by default), so that changes other
// processes or replicas make reach fn within that bound, in that
// goroutine; Close stops it.
func (s *Settings) Subscribe(fn func(tenant string)) (cancel func()) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if s.subs == nil {
		s.subs = make(map[uint64]func(string))
	}
	id := s.nextSub
	s.nextSub++
	s.subs[id] = fn
	if s.db != nil && s.stop == nil && !s.closed {
		s.stop = make(chan struct{})
		go s.watch(s.stop)
	}
	return func() {
		s.subMu.Lock()
		delete(s.subs, id)
		s.subMu.Unlock()
	}
}

// Notify tells subscribers that what tenant may call changed for a reason
// these settings do not hold ("" for every tenant): the registry calls it
// when its tools change, and a host whose Options.Authorize decides on
// data of its own calls it when that data changed, so that MCP clients
// list their tools again.
func (s *Settings) Notify(tenant string) {
	s.subMu.Lock()
	ids := slices.Sorted(maps.Keys(s.subs))
	fns := make([]func(string), 0, len(ids))
	for _, id := range ids {
		fns = append(fns, s.subs[id])
	}
	s.subMu.Unlock()
	for _, fn := range fns {
		func() {
			defer func() {
				if v := recover(); v != nil {
					s.logger().Error("llmtool: subscriber panicked", "tenant", tenant, "panic", fmt.Sprint(v))
				}
			}()
			fn(tenant)
		}()
	}
}

// Close stops the goroutine the first Subscribe started; subscribers then
// hear only of changes made through this handle. The registry's Close
// calls it.
func (s *Settings) Close() {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
	s.closed = true
}

// watch tells subscribers about changes other processes make: every
// CacheTTL (2 seconds by default) it reads the settings' version, which
// every change bumps in its own transaction, and when it moved it reads
// the cached tenants again; store notifies for each one that changed. So a
// change made on one replica reaches the sessions of every replica within
// one interval, however quiet they are.
func (s *Settings) watch(stop chan struct{}) {
	every := s.ttl
	if every <= 0 {
		every = defaultCacheTTL
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
		err := s.db.QueryRowContext(ctx, `SELECT version FROM `+versionTable+` WHERE id = 1`).Scan(&v)
		if err == nil && v != last {
			// The first read sets the baseline, and refreshes too: a
			// change may have come between Subscribe and this read.
			s.refresh(ctx)
		}
		cancel()
		if err == nil {
			last = v
		}
	}
}

// refresh reads every cached tenant again.
func (s *Settings) refresh(ctx context.Context) {
	s.mu.RLock()
	tenants := slices.Collect(maps.Keys(s.cache))
	s.mu.RUnlock()
	for _, tenant := range tenants {
		st, err := s.read(ctx, s.db, tenant)
		if err != nil {
			return // the next change, or the cache's TTL, tries again
		}
		s.store(tenant, st, time.Now())
	}
}
