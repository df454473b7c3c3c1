package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/audit"
)

type auditRow struct {
	At, Tool, Module, Principal, Tenant, Outcome string
	DurationUS                                   int64
	Committed                                    bool
}

func auditRows(t testing.TB, db *sql.DB, table string) []auditRow {
	t.Helper()
	rows, err := db.Query(`SELECT at, tool, module, principal, scope, outcome, duration_us, committed FROM ` + table)
	require.NoError(t, err)
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		require.NoError(t, rows.Scan(&r.At, &r.Tool, &r.Module, &r.Principal, &r.Tenant, &r.Outcome, &r.DurationUS, &r.Committed))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestTable(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ctx := alice(context.Background())
	table, err := audit.NewTable(ctx, db, "")
	require.NoError(t, err)
	rec := &recorder{}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	reg := newReg(t, db, &llmtool.Options{
		ValidateOutput: true,
		Logger:         logger,
		Audit:          []audit.Sink{audit.Slog(logger), table, rec},
	})
	require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))

	start := time.Now()
	res := reg.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"secret-pear"}`)})
	require.False(t, res.IsError, res.Text())
	rows := auditRows(t, db, "llmtool_audit")
	require.Len(t, rows, 1, "the committed write has its row")
	at, err := time.Parse(time.RFC3339Nano, rows[0].At)
	require.NoError(t, err)
	require.WithinRange(t, at, start.Add(-time.Second), time.Now())
	rows[0].At, rows[0].DurationUS = "", 0
	require.Equal(t, auditRow{Tool: "add_item", Module: "items", Principal: "alice", Tenant: "", Outcome: "ok", Committed: true}, rows[0])
	r := rec.last()
	require.Equal(t, "ok", r.Outcome)
	require.True(t, r.Write)
	require.True(t, r.Committed)
	require.Equal(t, "alice", r.Principal)

	tests := []struct {
		name, tool, args, outcome string
		tenant                    string
		write                     bool
	}{
		{"rolled back by an error", "add_item", `{"name":"secret-fig","fail":"conflict"}`, "conflict", "", true},
		{"rolled back by a panic", "add_item", `{"name":"secret-fig","fail":"panic"}`, "panic", "", true},
		{"internal error", "add_item", `{"name":"secret-fig","fail":"error"}`, "internal", "", true},
		{"invalid arguments", "add_item", `{"name":""}`, "invalid_args", "", true},
		{"refused by the tenant", "add_item", `{"name":"secret-fig"}`, "refused", "read-only", true},
		{"read", "get_item", `{"id":1}`, "ok", "", false},
		{"read not found", "get_item", `{"id":99}`, "not_found", "", false},
		{"unknown tool", "get_itemz", `{}`, "not_found", "", false},
	}
	for _, tc := range tests {
		res := reg.Invoke(llmtool.WithTenant(ctx, tc.tenant), llmtool.Call{Tool: tc.tool, Args: []byte(tc.args)})
		require.Equal(t, tc.outcome == "ok", !res.IsError, "%s: %s", tc.name, res.Text())
		r := rec.last()
		require.Equal(t, tc.outcome, r.Outcome, tc.name)
		require.Equal(t, tc.tool, r.Tool, tc.name)
		require.Equal(t, tc.write, r.Write, tc.name)
		require.False(t, r.Committed, tc.name)
		require.Equal(t, tc.tenant, r.Tenant, tc.name)
	}
	require.Len(t, auditRows(t, db, "llmtool_audit"), 1, "no row for reads, refusals or rolled-back writes")
	require.Equal(t, 2, countItems(t, db))

	// The logger sink recorded every call, the failed ones too, and never
	// the arguments.
	out := logs.String()
	require.Contains(t, out, `msg="llmtool call" tool=add_item module=items principal=alice tenant="" outcome=ok duration=`)
	require.Contains(t, out, `msg="llmtool call" tool=add_item module=items principal=alice tenant="" outcome=conflict duration=`)
	require.Contains(t, out, `msg="llmtool call" tool=add_item module=items principal=alice tenant=read-only outcome=refused duration=`)
	require.NotContains(t, out, "secret")
}

func TestTableFailureRollsBackTheWrite(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ctx := context.Background()
	table, err := audit.NewTable(ctx, db, "audit_calls")
	require.NoError(t, err)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	reg := newReg(t, db, &llmtool.Options{
		ValidateOutput: true,
		Logger:         logger,
		Audit:          []audit.Sink{audit.Slog(logger), table},
	})
	require.NoError(t, reg.Tenants().SetWrites(ctx, "", true))
	_, err = db.Exec(`DROP TABLE audit_calls`)
	require.NoError(t, err)

	res := invoke(reg, "add_item", `{"name":"pear"}`)
	require.Equal(t, "Internal error in add_item; the details were logged. Try again once; if it fails again, tell the user the tool is failing.", res.Text())
	require.ErrorContains(t, res.Err, "llmtool: audit record in the call's transaction: SQL logic error: no such table: audit_calls")
	require.Equal(t, 1, countItems(t, db), "no write without its audit row")
	require.Contains(t, logs.String(), "outcome=internal")

	_, err = audit.NewTable(ctx, db, "audit; DROP TABLE items")
	require.EqualError(t, err, `llmtool: audit table name "audit; DROP TABLE items": use letters, digits and underscores, such as "llmtool_audit"`)
	_, err = audit.NewTable(ctx, nil, "")
	require.EqualError(t, err, `llmtool: audit table: no database; pass the registry's *sql.DB`)
}

func TestSlog(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	var buf bytes.Buffer
	reg := newReg(t, db, &llmtool.Options{
		ValidateOutput: true,
		Logger:         logger,
		Audit:          []audit.Sink{audit.Slog(slog.New(slog.NewTextHandler(&buf, nil)))},
	})
	require.False(t, invoke(reg, "get_item", `{"id":1}`).IsError)
	require.Contains(t, buf.String(), `msg="llmtool call" tool=get_item module=items principal="" tenant="" outcome=ok`)

	require.NotContains(t, logs.String(), "llmtool call", "the logger is no sink while Audit is set")
}

// Slog writes the line of the registry's default sink, so a host that
// lists it beside its own sinks keeps the log as it was.
func TestSlogMatchesDefault(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	// Time and duration differ from call to call.
	noClock := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == "duration" {
			return slog.Attr{}
		}
		return a
	}
	var def, own bytes.Buffer
	reg := newReg(t, db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(&def, &slog.HandlerOptions{ReplaceAttr: noClock}))})
	require.False(t, invoke(reg, "get_item", `{"id":1}`).IsError)
	reg = newReg(t, db, &llmtool.Options{Audit: []audit.Sink{
		audit.Slog(slog.New(slog.NewTextHandler(&own, &slog.HandlerOptions{ReplaceAttr: noClock})))}})
	require.False(t, invoke(reg, "get_item", `{"id":1}`).IsError)
	require.Equal(t, `level=INFO msg="llmtool call" tool=get_item module=items principal="" tenant="" outcome=ok write=false committed=false`+"\n", def.String())
	require.Equal(t, def.String(), own.String())
}

// TestSlogRetries: a write run again shows its runs and the time they
// lost; a call run once shows neither.
func TestSlogRetries(t *testing.T) {
	t.Parallel()
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	for _, tc := range []struct {
		name string
		rec  audit.Record
		want string
	}{
		{"run once", audit.Record{Tool: "bump", Outcome: audit.OutcomeOK, Duration: 2 * time.Millisecond, Write: true, Committed: true, Attempts: 1},
			`level=INFO msg="llmtool call" tool=bump module="" principal="" tenant="" outcome=ok duration=2ms write=true committed=true` + "\n"},
		{"run again", audit.Record{Tool: "bump", Outcome: audit.OutcomeOK, Duration: 40 * time.Millisecond, Write: true, Committed: true, Attempts: 4, RetryWait: 31 * time.Millisecond},
			`level=INFO msg="llmtool call" tool=bump module="" principal="" tenant="" outcome=ok duration=40ms write=true committed=true attempts=4 retry_wait=31ms` + "\n"},
		{"out of time", audit.Record{Tool: "bump", Outcome: "internal", Duration: 10 * time.Second, Write: true, Attempts: 90, RetryWait: 9900 * time.Millisecond},
			`level=INFO msg="llmtool call" tool=bump module="" principal="" tenant="" outcome=internal duration=10s write=true committed=false attempts=90 retry_wait=9.9s` + "\n"},
	} {
		var buf bytes.Buffer
		audit.Slog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: noTime}))).Audit(context.Background(), tc.rec)
		require.Equal(t, tc.want, buf.String(), tc.name)
	}
}
