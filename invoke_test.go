package llmtool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/internal/pgtest"
)

type GetItemIn struct {
	ID       int `json:"id" desc:"ID of the item." minimum:"1"`
	MaxChars int `json:"maxChars,omitempty" desc:"Truncate the name to this many characters (default 40)." default:"40" minimum:"1"`
}

type ItemOut struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Qty  int    `json:"qty"`
}

type AddItemIn struct {
	Name string `json:"name" desc:"Name of the item." minLength:"1"`
	Qty  int    `json:"qty,omitempty" desc:"How many (default 1)." default:"1"`
	Fail string `json:"fail,omitempty" desc:"Test hook: error, notfound, panic, cancel, sleep." enum:"error|notfound|denied|conflict|panic|cancel|sleep"`
}

var getItem = llmtool.Read("get_item", "Read an item.",
	func(c *llmtool.ReadCtx, in GetItemIn) (ItemOut, error) {
		var out ItemOut
		err := c.QueryRow(`SELECT id, name, qty FROM items WHERE id = ?`, in.ID).Scan(&out.ID, &out.Name, &out.Qty)
		if errors.Is(err, sql.ErrNoRows) {
			return out, llmtool.NotFound("Item %d not found.", in.ID).Next("Call list_items to see the IDs.")
		}
		if len(out.Name) > in.MaxChars {
			out.Name = out.Name[:in.MaxChars]
		}
		return out, err
	})

// cancelHook lets a test cancel the call's context from inside a handler.
type cancelKey struct{}

var addItem = llmtool.Write("add_item", "Add an item.",
	func(c *llmtool.WriteCtx, in AddItemIn) (ItemOut, error) {
		// RETURNING rather than LastInsertId, which PostgreSQL's driver
		// does not have; ? is rewritten as $1, $2 there.
		var id int64
		if err := c.QueryRow(`INSERT INTO items (name, qty) VALUES (?, ?) RETURNING id`, in.Name, in.Qty).Scan(&id); err != nil {
			return ItemOut{}, err
		}
		switch in.Fail {
		case "error":
			return ItemOut{}, errors.New("disk on fire")
		case "notfound":
			return ItemOut{}, llmtool.NotFound("Shelf not found.").Next("Call list_shelves first.")
		case "denied":
			return ItemOut{}, llmtool.Denied("You may not add items here.")
		case "conflict":
			return ItemOut{}, llmtool.Conflict("An item named %q exists.", in.Name).Next("Pick another name.")
		case "panic":
			panic("boom")
		case "cancel":
			c.Value(cancelKey{}).(context.CancelFunc)()
		case "sleep":
			time.Sleep(50 * time.Millisecond)
		}
		return ItemOut{ID: int(id), Name: in.Name, Qty: in.Qty}, nil
	})

var itemTools = llmtool.DefineTools("items", getItem, addItem)

func TestInvokeReadAndWrite(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg := newRegistry(t, db, itemTools)

	res := invoke(reg, "get_item", `{"id": 1}`)
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"id":1,"name":"apple","qty":3}`, string(res.JSON))
	require.NotContains(t, decodeObj(t, res.JSON), "error")

	res = invoke(reg, "add_item", `{"name": "pear"}`)
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"id":2,"name":"pear","qty":1}`, string(res.JSON), "qty default applied")
	require.NotContains(t, decodeObj(t, res.JSON), "error")
	require.Equal(t, 2, countItems(t, db))
}

func decodeObj(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestRollback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, fail, msg string
		kind            llmtool.Kind
	}{
		{"internal error", "error", "Internal error in add_item; the details were logged. Try again once; if it fails again, tell the user the tool is failing.", llmtool.KindInternal},
		{"not found", "notfound", "Shelf not found. Call list_shelves first.", llmtool.KindNotFound},
		{"denied", "denied", "You may not add items here.", llmtool.KindDenied},
		{"conflict", "conflict", `An item named "x" exists. Pick another name.`, llmtool.KindConflict},
		{"panic", "panic", "Internal error in add_item; the details were logged. Try again once; if it fails again, tell the user the tool is failing.", llmtool.KindInternal},
		{"cancelled context", "cancel", "The call to add_item was cancelled before it finished; nothing was saved. Call it again if it is still needed.", llmtool.KindCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := openDB(t)
			reg := newRegistry(t, db, itemTools)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx = context.WithValue(ctx, cancelKey{}, context.CancelFunc(cancel))
			res := reg.Invoke(ctx, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"x","fail":"` + tc.fail + `"}`)})
			require.True(t, res.IsError)
			require.Equal(t, tc.msg, res.Text())
			require.JSONEq(t, fmt.Sprintf(`{"error":%q}`, tc.msg), string(res.JSON))
			require.Equal(t, tc.kind, llmtool.KindOf(res.Err))
			require.Equal(t, 1, countItems(t, db), "rolled back")
		})
	}
}

func TestPanicError(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t), itemTools)
	res := invoke(reg, "add_item", `{"name":"x","fail":"panic"}`)
	require.EqualError(t, res.Err, "llmtool: tool add_item panicked: boom")
	require.Equal(t, llmtool.KindInternal, llmtool.KindOf(res.Err))
}

func TestReadToolCannotWrite(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	sneaky := llmtool.Read("sneaky_insert", "Try to write from a read tool.",
		func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) {
			_, err := c.Query(`INSERT INTO items (name) VALUES ('x') RETURNING id`)
			return struct{}{}, err
		})
	reg := newRegistry(t, db, llmtool.DefineTools("sneaky", sneaky))
	res := invoke(reg, "sneaky_insert", "")
	require.True(t, res.IsError)
	// SQLite's authorizer refuses it (and the read connection's PRAGMA
	// query_only would), PostgreSQL the READ ONLY transaction (SQLSTATE
	// 25006).
	require.EqualError(t, res.Err, readToolWriteErr("sneaky_insert", "INSERT INTO items (name) VALUES ('x') RETURNING id"))
	require.Equal(t, llmtool.KindInternal, llmtool.KindOf(res.Err))
	require.JSONEq(t, `{"error":"Internal error in sneaky_insert; the details were logged. Try again once; if it fails again, tell the user the tool is failing."}`, string(res.JSON))
	require.Equal(t, 1, countItems(t, db))

	// The connection went back to the pool writable: the host can still write.
	for range 4 {
		_, err := db.Exec(`INSERT INTO items (name) VALUES ('host')`)
		require.NoError(t, err)
	}
}

func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	reg := newRegistry(t, db, itemTools)
	var wg sync.WaitGroup
	var failures atomic.Int32
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				res := invoke(reg, "add_item", fmt.Sprintf(`{"name":"g%d-%d"}`, g, i))
				if res.IsError {
					failures.Add(1)
					t.Errorf("call failed: %v", res.Err)
				}
				if i%20 == 0 {
					if r := invoke(reg, "get_item", `{"id":1}`); r.IsError {
						t.Errorf("read failed: %v", r.Err)
					}
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, failures.Load())
	require.Equal(t, 1601, countItems(t, db), "1 seed row + 8x200")
}

func TestAfterCommit(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	tool := llmtool.Write("hooked_add", "Add with a hook.",
		func(c *llmtool.WriteCtx, in AddItemIn) (struct{}, error) {
			c.AfterCommit(func() { ran.Add(1) })
			c.AfterCommit(func() { panic("hook panics are logged, not fatal") })
			if _, err := c.Exec(`INSERT INTO items (name) VALUES (?)`, in.Name); err != nil {
				return struct{}{}, err
			}
			if in.Fail != "" {
				return struct{}{}, llmtool.Conflict("No.")
			}
			return struct{}{}, nil
		})
	db := openDB(t)
	reg := newRegistry(t, db, llmtool.DefineTools("hooks", tool))
	require.True(t, invoke(reg, "hooked_add", `{"name":"a","fail":"error"}`).IsError)
	require.Zero(t, ran.Load(), "no hook on rollback")
	require.False(t, invoke(reg, "hooked_add", `{"name":"a"}`).IsError)
	require.Equal(t, int32(1), ran.Load())
}

func TestUseAfterReturn(t *testing.T) {
	t.Parallel()
	errc, returned := make(chan error, 4), make(chan struct{})
	leak := llmtool.Write("leaky_add", "Leak the context.",
		func(c *llmtool.WriteCtx, in AddItemIn) (struct{}, error) {
			//llmtoolvet:ignore this test proves late use fails with ErrTxDone and is logged
			go func() {
				<-returned // the call has ended
				_, err := c.Exec(`INSERT INTO items (name) VALUES ('late')`)
				errc <- err
				_, err = c.Query(`SELECT 1`)
				errc <- err
				_, err = c.PrepareContext(c, `SELECT 1`)
				errc <- err
				errc <- c.Err()
			}()
			return struct{}{}, nil
		})
	db := openDB(t)
	logs := &lockedBuffer{}
	reg := newRegistryOpts(t, db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), ValidateOutput: true}, llmtool.DefineTools("leaky", leak))
	require.False(t, invoke(reg, "leaky_add", `{"name":"x"}`).IsError)
	close(returned)
	err := <-errc
	require.ErrorIs(t, err, sql.ErrTxDone)
	require.EqualError(t, err, "llmtool: tool leaky_add: Exec after its handler returned (finish all work before returning; start no goroutine that outlives the handler): sql: transaction has already been committed or rolled back")
	require.ErrorIs(t, <-errc, sql.ErrTxDone)
	require.EqualError(t, <-errc, "llmtool: tool leaky_add: PrepareContext after its handler returned (finish all work before returning; start no goroutine that outlives the handler): sql: transaction has already been committed or rolled back")
	require.ErrorIs(t, <-errc, context.Canceled, "the handler's context is cancelled after it returns")
	require.Equal(t, 3, strings.Count(logs.String(), "llmtool: transaction used after its handler returned"), "each late use is logged")
	require.Equal(t, 1, countItems(t, db))
}

func TestLazyMarshalSeesLiveTx(t *testing.T) {
	t.Parallel()
	tool := llmtool.Read("lazy_count", "Count lazily.",
		func(c *llmtool.ReadCtx, _ struct{}) (lazyOut, error) {
			//llmtoolvet:ignore this test proves a lazy MarshalJSON still runs inside the transaction
			return lazyOut{Count: lazyCount{c}}, nil
		})
	logs := &lockedBuffer{}
	reg := newRegistryOpts(t, openDB(t), &llmtool.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), ValidateOutput: true}, llmtool.DefineTools("lazy", tool))
	res := invoke(reg, "lazy_count", `{}`)
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"count":1}`, string(res.JSON))
	require.NotContains(t, logs.String(), "after its handler returned")
}

type lazyOut struct {
	Count lazyCount `json:"count"`
}

type lazyCount struct{ c *llmtool.ReadCtx }

func (l lazyCount) MarshalJSON() ([]byte, error) {
	var n int
	if err := l.c.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil {
		return nil, err
	}
	return json.Marshal(n)
}

func TestQuirkyArguments(t *testing.T) {
	t.Parallel()
	type echoIn struct {
		Limit int    `json:"limit,omitempty" desc:"How many (default 10)." default:"10"`
		Q     string `json:"q,omitempty" desc:"Query."`
	}
	echo := llmtool.Read("echo", "Echo the arguments.",
		func(c *llmtool.ReadCtx, in echoIn) (echoIn, error) { return in, nil })
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("echo", echo))
	tests := []struct{ name, args, want string }{
		{"missing", ``, `{"limit":10}`},
		{"null", `null`, `{"limit":10}`},
		{"empty string", `""`, `{"limit":10}`},
		{"empty object", `{}`, `{"limit":10}`},
		{"whitespace", "  \n", `{"limit":10}`},
		{"object as string", `"{\"q\":\"hi\",\"limit\":3}"`, `{"limit":3,"q":"hi"}`},
		{"object", `{"q":"hi"}`, `{"limit":10,"q":"hi"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := invoke(reg, "echo", tc.args)
			require.False(t, res.IsError, res.Text())
			require.JSONEq(t, tc.want, string(res.JSON))
		})
	}
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t), itemTools)
	tests := []struct{ name, tool, args, want string }{
		{"missing required", "get_item", `{}`, `Error: /id: missing required parameter "id". Send "id" as an integer of at least 1 (ID of the item).`},
		{"wrong type", "get_item", `{"id":"one"}`, `Error: /id: expected integer, got string. Send an integer of at least 1.`},
		{"below minimum", "get_item", `{"id":0}`, `Error: /id: 0 is below the minimum 1. Send an integer of at least 1.`},
		{"unknown parameter", "get_item", `{"id":1,"ID":2}`, `Error: /ID: unknown parameter "ID". Send only id, maxChars (names are case-sensitive).`},
		{"enum", "add_item", `{"name":"x","fail":"boom"}`, `Error: /fail: "boom" is not an allowed value. Send one of "error", "notfound", "denied", "conflict", "panic", "cancel", "sleep".`},
		{"min length", "add_item", `{"name":""}`, `Error: /name: 0 characters is shorter than the minimum 1. Send a string of at least 1 character.`},
		{"array", "get_item", `[1]`, `Error: arguments: expected a JSON object, got an array. Send one JSON object, such as {"id": 1}.`},
		{"string not object", "get_item", `"1"`, `Error: arguments: expected a JSON object, got a string. Send one JSON object, such as {"id": 1}.`},
		{"bad json", "get_item", `{"id":`, `Error: arguments: not valid JSON (unexpected EOF). Send one JSON object, such as {"id": 1}.`},
		{"overflow", "get_item", `{"id":1e30}`, `Error: /id: number 1e30 does not fit int. Send a value in range for the parameter.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := invoke(reg, tc.tool, tc.args)
			require.True(t, res.IsError)
			require.Equal(t, tc.want, res.Text())
			require.Equal(t, llmtool.KindInvalidArgs, llmtool.KindOf(res.Err))
		})
	}
}

func TestUnknownAndDisabledTools(t *testing.T) {
	t.Parallel()
	off := llmtool.Read("off_tool", "Switched off.", func(c *llmtool.ReadCtx, _ struct{}) (struct{}, error) { return struct{}{}, nil })
	reg := newRegistry(t, openDB(t), itemTools, llmtool.DefineTools("off", off))
	require.NoError(t, reg.SetEnabled("off_tool", false))

	res := invoke(reg, "get_items", `{}`)
	require.Equal(t, `Unknown tool "get_items". Did you mean "get_item"?`, res.Text())
	require.ErrorIs(t, res.Err, llmtool.ErrUnknownTool)

	res = invoke(reg, "off_tool", `{}`)
	require.Equal(t, `Tool "off_tool" is switched off. Use another tool, or ask the user to have an administrator enable it.`, res.Text())
	require.ErrorIs(t, res.Err, llmtool.ErrToolDisabled)
	specs, err := reg.List(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"get_item", "add_item"}, names(specs))

	require.NoError(t, reg.SetEnabled("off_tool", true))
	require.False(t, invoke(reg, "off_tool", `{}`).IsError)
	specs, _ = reg.List(context.Background(), nil)
	require.Equal(t, []string{"get_item", "add_item", "off_tool"}, names(specs))
	require.NoError(t, reg.SetEnabled("add_item", false))
	require.ErrorIs(t, invoke(reg, "add_item", `{"name":"x"}`).Err, llmtool.ErrToolDisabled)
	require.EqualError(t, reg.SetEnabled("nope", true), `llmtool: SetEnabled: unknown tool "nope"`)
}

func names(specs []*llmtool.Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// Suggestions for an unknown name come only from the tools the caller's
// tenant may call: a tenant without writes is not told about write tools.
func TestUnknownToolSuggestsOnlyCallableTools(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t), itemTools)
	ctx := llmtool.WithTenant(context.Background(), "read-only-tenant")
	res := reg.Invoke(ctx, llmtool.Call{Tool: "add_itme"})
	require.Equal(t, `Unknown tool "add_itme". Call one of the tools you were given.`, res.Text())
	res = reg.Invoke(ctx, llmtool.Call{Tool: "get_itme"})
	require.Equal(t, `Unknown tool "get_itme". Did you mean "get_item"?`, res.Text())
	require.NoError(t, reg.Tenants().SetWrites(ctx, "read-only-tenant", true))
	res = reg.Invoke(ctx, llmtool.Call{Tool: "add_itme"})
	require.Equal(t, `Unknown tool "add_itme". Did you mean "add_item"?`, res.Text())
}

// A null for an optional parameter that does not take null means the
// parameter was left out, so its default applies.
func TestNullMeansAbsent(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, openDB(t), itemTools)
	res := invoke(reg, "get_item", `{"id": 1, "maxChars": null}`)
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"id":1,"name":"apple","qty":3}`, string(res.JSON))
	res = invoke(reg, "get_item", `{"id": null}`)
	require.Equal(t, `Error: /id: expected integer, got null. Send an integer of at least 1.`, res.Text(), "a required parameter stays required")
}

func TestInvokeWithoutDatabase(t *testing.T) {
	t.Parallel()
	reg, err := llmtool.NewRegistry(nil, &llmtool.Options{Logger: quietLogger()}, itemTools)
	require.NoError(t, err)
	specs, err := reg.List(context.Background(), &llmtool.ListOptions{All: true})
	require.NoError(t, err)
	require.Equal(t, []string{"man", "get_item", "add_item"}, names(specs), "Specs lists every tool, whatever the tenant allows")
	res := invoke(reg, "get_item", `{"id": 1}`)
	require.True(t, res.IsError)
	require.EqualError(t, res.Err, "llmtool: the registry has no database; pass the host's *sql.DB to NewRegistry to run tools")
}

// Defaults apply to absent (or null) fields at the top level, set on the
// decoded value, and inside nested objects that are present, through the
// JSON.
func TestDefaultsTopLevelAndNested(t *testing.T) {
	t.Parallel()
	type opts struct {
		Limit int    `json:"limit,omitempty" desc:"How many (default 5)." default:"5"`
		Order string `json:"order,omitempty" desc:"Sort order (default asc)." default:"asc" enum:"asc|desc"`
	}
	type flatIn struct {
		Q     string   `json:"q,omitempty" desc:"Query (default all)." default:"all"`
		Tags  []string `json:"tags,omitempty" desc:"Tags (default [\"x\"])." default:"[\"x\"]"`
		Count *int     `json:"count,omitempty" desc:"Count (default 2)." default:"2"`
	}
	type nestedIn struct {
		Q    string `json:"q,omitempty" desc:"Query (default all)." default:"all"`
		Opts *opts  `json:"opts,omitempty"`
	}
	flat := llmtool.Read("flat_defaults", "Echo flat defaults.", func(c *llmtool.ReadCtx, in flatIn) (flatIn, error) { return in, nil })
	nested := llmtool.Read("nested_defaults", "Echo nested defaults.", func(c *llmtool.ReadCtx, in nestedIn) (nestedIn, error) { return in, nil })
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("defaults", flat, nested))
	tests := []struct{ tool, args, want string }{
		{"flat_defaults", `{}`, `{"q":"all","tags":["x"],"count":2}`},
		{"flat_defaults", `{"q":null,"count":null}`, `{"q":"all","tags":["x"]}`}, // count takes null: an explicit null stays
		{"flat_defaults", `{"q":"mine","tags":[],"count":0}`, `{"q":"mine","count":0}`},
		{"nested_defaults", `{}`, `{"q":"all"}`},
		{"nested_defaults", `{"opts":{}}`, `{"q":"all","opts":{"limit":5,"order":"asc"}}`},
		{"nested_defaults", `{"opts":{"order":"desc","limit":null}}`, `{"q":"all","opts":{"limit":5,"order":"desc"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.tool+tc.args, func(t *testing.T) {
			t.Parallel()
			res := invoke(reg, tc.tool, tc.args)
			require.False(t, res.IsError, res.Text())
			require.JSONEq(t, tc.want, string(res.JSON))
		})
	}
}

// A flat In is filled from the decoded arguments without a second JSON
// decode; values that need encoding/json's own handling still get its
// result, so both paths behave alike.
func TestFlatInputMatchesJSONDecoding(t *testing.T) {
	t.Parallel()
	type small struct {
		S  string  `json:"s,omitempty"`
		B  bool    `json:"b,omitempty"`
		I8 int8    `json:"i8,omitempty"`
		U  uint16  `json:"u,omitempty"`
		F  float32 `json:"f,omitempty"`
		N  int64   `json:"n,omitempty"`
	}
	echo := llmtool.Read("echo_small", "Echo.", func(c *llmtool.ReadCtx, in small) (small, error) { return in, nil })
	reg := newRegistry(t, openDB(t), llmtool.DefineTools("small", echo))
	tests := []struct{ args, want string }{
		{`{"s":"x","b":true,"i8":-128,"u":65535,"f":1.5,"n":9007199254740993}`, `{"s":"x","b":true,"i8":-128,"u":65535,"f":1.5,"n":9007199254740993}`},
		{`{"s":null,"i8":null}`, `{}`},
		{`{"i8":300}`, `Error: /i8: number 300 does not fit int8. Send a value in range for the parameter.`},
		{`{"u":70000}`, `Error: /u: number 70000 does not fit uint16. Send a value in range for the parameter.`},
		{`{"f":1e39}`, `Error: /f: number 1e39 does not fit float32. Send a value in range for the parameter.`},
		{`{"i8":1.0}`, `Error: /i8: number 1.0 does not fit int8. Send a value in range for the parameter.`},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			t.Parallel()
			res := invoke(reg, "echo_small", tc.args)
			if strings.HasPrefix(tc.want, "Error: ") {
				require.True(t, res.IsError)
				require.Equal(t, tc.want, res.Text())
				return
			}
			require.False(t, res.IsError, res.Text())
			require.JSONEq(t, tc.want, string(res.JSON))
		})
	}
}

// TestStuckWriteIsAbandoned: a write handler that ignores its context
// past the call's deadline keeps the write path no longer than
// Options.WriteGrace: a write in another tenant goes through while the
// handler is still stuck, the stuck handler's later statements fail with
// sql.ErrTxDone, nothing of its call is saved, and its result says it
// timed out and saved nothing.
func TestStuckWriteIsAbandoned(t *testing.T) {
	t.Parallel()
	if pgtest.FromEnv() {
		// PostgreSQL's writes do not queue behind one another: B's write
		// does not wait for the stuck call, so the order this test
		// asserts (B waits out the deadline and the grace) does not hold.
		t.Skip("SQLite's single write path; on PostgreSQL writes run side by side")
	}
	inserted, release, late := make(chan struct{}), make(chan struct{}), make(chan error, 2)
	stuck := llmtool.Write("stuck_add", "Add an item, then hang.",
		func(c *llmtool.WriteCtx, in AddItemIn) (struct{}, error) {
			if _, err := c.Exec(`INSERT INTO items (name) VALUES (?)`, in.Name); err != nil {
				return struct{}{}, err
			}
			close(inserted)
			<-release // ignores c.Done()
			_, err := c.Exec(`INSERT INTO items (name) VALUES ('after')`)
			late <- err
			_, err = c.ExecContext(context.Background(), `INSERT INTO items (name) VALUES ('after, without the deadline')`)
			late <- err
			return struct{}{}, nil
		})
	db := openDB(t)
	logs := &lockedBuffer{}
	reg := newRegistryOpts(t, db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), WriteGrace: 10 * time.Millisecond},
		itemTools, llmtool.DefineTools("stuck", stuck))
	a, b := llmtool.WithTenant(context.Background(), "A"), llmtool.WithTenant(context.Background(), "B")
	require.NoError(t, reg.Tenants().SetWrites(a, "A", true))
	require.NoError(t, reg.Tenants().SetWrites(b, "B", true))

	// The deadline leaves the handler time to start on a loaded machine;
	// B then waits for the rest of it.
	ctx, cancel := context.WithTimeout(a, 500*time.Millisecond)
	defer cancel()
	done := make(chan llmtool.Result, 1)
	go func() { done <- reg.Invoke(ctx, llmtool.Call{Tool: "stuck_add", Args: []byte(`{"name":"stuck"}`)}) }()
	select {
	case <-inserted:
	case res := <-done:
		t.Fatalf("the stuck call ended before its handler inserted: %s", res.Text())
	}
	// Waits for the write path, which the stuck call holds until its
	// deadline and grace are over.
	res := reg.Invoke(b, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"from B"}`)})
	require.False(t, res.IsError, res.Text())
	select {
	case <-done:
		t.Fatal("the stuck call returned before its handler did")
	default:
	}
	close(release)
	require.ErrorIs(t, <-late, context.DeadlineExceeded, "the stuck handler's later statement, under its context")
	require.ErrorIs(t, <-late, sql.ErrTxDone, "the stuck handler's later statement, under another context")
	res = <-done
	require.True(t, res.IsError)
	require.ErrorIs(t, res.Err, context.DeadlineExceeded)
	require.Equal(t, "The call to stuck_add timed out before it finished; nothing was saved. Call it again, with less work if possible.", res.Text())
	require.ErrorContains(t, res.Err, "llmtool: tool stuck_add: its handler ran on for more than 10ms after the call's context ended, so llmtool stopped the write")

	var names []string
	rows, err := db.Query(`SELECT name FROM items ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Equal(t, []string{"apple", "from B"}, names, "nothing of the stuck call was saved")
	require.Contains(t, logs.String(), `level=ERROR msg="llmtool: write handler ran on after its call's context ended; llmtool rolled its transaction back, closed its connection and let other writes go on (return when the handler's context is done)" tool=stuck_add grace=10ms err="context deadline exceeded"`)

	// The write path works on.
	res = reg.Invoke(a, llmtool.Call{Tool: "add_item", Args: []byte(`{"name":"again"}`)})
	require.False(t, res.IsError, res.Text())
}
