package ask_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/sqlite"
)

// echo is a client that answers every request.
type echo struct{}

func (echo) Sample(_ context.Context, req ask.SampleRequest) (ask.SampleResult, error) {
	return ask.SampleResult{Role: "assistant", Content: llmtool.TextContent("re: " + req.Messages[0].Content.Text), Model: "echo"}, nil
}

func (echo) Elicit(_ context.Context, req ask.ElicitRequest) (ask.ElicitResult, error) {
	return ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"name":"Ada"}`)}, nil
}

type answer struct {
	Text string `json:"text"`
}

func newRegistry(t testing.TB, tools ...*llmtool.Tool) *llmtool.Registry {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "ask.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, nil, llmtool.DefineTools("asking", tools...))
	require.NoError(t, err)
	require.NoError(t, reg.Tenants().SetWrites(context.Background(), "", true))
	return reg
}

func TestAsk(t *testing.T) {
	t.Parallel()
	sample := func(c *llmtool.ReadCtx) (answer, error) {
		res, err := ask.Sample(c, ask.SampleRequest{Messages: []ask.SampleMessage{{Role: "user", Content: llmtool.TextContent("hi")}}})
		return answer{Text: res.Content.Text}, err
	}
	var late *llmtool.ReadCtx
	reg := newRegistry(t,
		llmtool.Read("sample", "Ask the model.", func(c *llmtool.ReadCtx, _ struct{}) (answer, error) { return sample(c) }),
		llmtool.Read("elicit", "Ask the user.", func(c *llmtool.ReadCtx, _ struct{}) (answer, error) {
			res, err := ask.Elicit(c, ask.ElicitRequest{Message: "Your name?"})
			return answer{Text: res.Action + " " + string(res.Content)}, err
		}),
		llmtool.Read("keep", "Keep the context.", func(c *llmtool.ReadCtx, _ struct{}) (answer, error) {
			late = c //llmtoolvet:ignore the test proves a late ask fails with ErrTxDone
			return answer{}, nil
		}),
		llmtool.Write("sample_in_write", "Ask inside a write.", func(c *llmtool.WriteCtx, _ struct{}) (answer, error) { return sample(&c.ReadCtx) }),
	)
	withClient := ask.With(context.Background(), echo{})
	call := func(ctx context.Context, tool string) llmtool.Result {
		return reg.Invoke(ctx, llmtool.Call{Tool: tool})
	}

	res := call(withClient, "sample")
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"text":"re: hi"}`, string(res.JSON))
	res = call(withClient, "elicit")
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"text":"accept {\"name\":\"Ada\"}"}`, string(res.JSON))

	res = call(context.Background(), "sample")
	require.ErrorIs(t, res.Err, ask.ErrUnsupported)
	require.EqualError(t, res.Err, "llmtool: tool sample: Sample: the adapter serving this call cannot reach its client: ask: the client cannot answer this request")

	res = call(withClient, "sample_in_write")
	require.ErrorIs(t, res.Err, ask.ErrInWrite)
	require.EqualError(t, res.Err, "llmtool: tool sample_in_write: Sample inside a write tool would hold the database's only writer while the client answers; ask from a read tool first, then call the write tool with the answer: ask: sampling and elicitation are refused inside a write transaction")

	require.False(t, call(withClient, "keep").IsError)
	_, err := ask.Elicit(late, ask.ElicitRequest{Message: "still there?"})
	require.ErrorIs(t, err, sql.ErrTxDone)
	require.ErrorIs(t, err, sql.ErrTxDone)
}

// A read tool asks the client's user, through whatever Asker the adapter
// installed for the call (MCP elicitation, with mcpadapter).
func ExampleElicit() {
	whoami := llmtool.Read("whoami", "Ask the user for their name.",
		func(c *llmtool.ReadCtx, _ struct{}) (answer, error) {
			res, err := ask.Elicit(c, ask.ElicitRequest{
				Message: "What is your name?",
				Schema:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
			})
			if err != nil || res.Action != ask.Accept {
				return answer{}, err
			}
			var who struct{ Name string }
			err = json.Unmarshal(res.Content, &who)
			return answer{Text: "Hello, " + who.Name}, err
		})
	db, _ := sqlite.Open(filepath.Join(exampleDir(), "ask.db"))
	defer db.Close()
	reg, _ := llmtool.NewRegistry(db, nil, llmtool.DefineTools("people", whoami))
	res := reg.Invoke(ask.With(context.Background(), echo{}), llmtool.Call{Tool: "whoami"})
	fmt.Println(string(res.JSON))
	// Output: {"text":"Hello, Ada"}
}

// rerunner answers nothing yet: every question ends the run.
type rerunner struct{ echo }

func (rerunner) Reruns() bool { return true }

func (rerunner) Elicit(context.Context, ask.ElicitRequest) (ask.ElicitResult, error) {
	return ask.ElicitResult{}, fmt.Errorf("asked: %w", ask.ErrInputRequired)
}

// TestRerunner: a write tool may ask through a Rerunner, and a run that
// asked fails, whatever the handler returns, so nothing it wrote commits.
func TestRerunner(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t,
		llmtool.Write("swallow", "Write, ask, and ignore the error.", func(c *llmtool.WriteCtx, _ struct{}) (answer, error) {
			if _, err := c.Exec("CREATE TABLE IF NOT EXISTS t (x)"); err != nil {
				return answer{}, err
			}
			if _, err := c.Exec("INSERT INTO t VALUES (1)"); err != nil {
				return answer{}, err
			}
			_, err := ask.Elicit(&c.ReadCtx, ask.ElicitRequest{Message: "Sure?"})
			return answer{Text: fmt.Sprint(err)}, nil
		}),
		llmtool.Read("count", "Count the rows.", func(c *llmtool.ReadCtx, _ struct{}) (answer, error) {
			var n int
			err := c.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 't'").Scan(&n)
			return answer{Text: fmt.Sprint(n)}, err
		}),
	)
	ctx := ask.With(context.Background(), rerunner{})
	res := reg.Invoke(ctx, llmtool.Call{Tool: "swallow"})
	require.True(t, res.IsError)
	require.ErrorIs(t, res.Err, ask.ErrInputRequired)
	require.EqualError(t, res.Err, "llmtool: tool swallow: elicitation: asked: ask: the call ends here and runs again once the client answered")
	res = reg.Invoke(ctx, llmtool.Call{Tool: "count"})
	require.JSONEq(t, `{"text":"0"}`, string(res.JSON), "the run that asked committed")

	// A Sample that succeeds in a write tool: a Rerunner is not refused.
	reg = newRegistry(t, llmtool.Write("sample_in_write", "Ask the model inside a write.", func(c *llmtool.WriteCtx, _ struct{}) (answer, error) {
		res, err := ask.Sample(&c.ReadCtx, ask.SampleRequest{Messages: []ask.SampleMessage{{Role: "user", Content: llmtool.TextContent("hi")}}})
		return answer{Text: res.Content.Text}, err
	}))
	res = reg.Invoke(ctx, llmtool.Call{Tool: "sample_in_write"})
	require.False(t, res.IsError, res.Text())
	require.JSONEq(t, `{"text":"re: hi"}`, string(res.JSON))
}
