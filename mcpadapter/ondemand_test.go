package mcpadapter_test

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
)

// Tools loaded on demand: the listing leaves them out until find_tools
// loads them, and the client then gets tools/list_changed and lists them.
// An unloaded tool called by its exact name runs.
func TestOnDemandListChanged(t *testing.T) {
	onDemand := map[string]bool{"web_lookup": true, "picture": true}
	reads := []string{"ask_model", "ask_name", "ask_twice", "crash", "find_tools", "get_note", "man", "slow_count", "whoami"}
	for _, conn := range connectors {
		t.Run(conn.name, func(t *testing.T) {
			if conn.parallel {
				t.Parallel()
			}
			f := newFixtureReg(t, &llmtool.Options{OnDemand: func(s *llmtool.Spec) bool { return onDemand[s.Name] }}, nil)
			c := conn.connect(t, f)
			notes := collect(c)
			require.Equal(t, reads, toolNames(t, c))

			res := call(t, c, "picture", nil) // not listed, yet callable by name
			require.False(t, res.IsError)

			res = call(t, c, "find_tools", map[string]any{"query": "look a word up on the web"})
			require.False(t, res.IsError, text(t, res))
			require.Equal(t, "Loaded 1 tool for \"look a word up on the web\"; call them like any other tool:\n"+
				"  web_lookup  Look a word up on the web. [General]\n"+
				"For a tool's options and examples, call man with {\"name\": \"<tool>\"}.\n", text(t, res))
			notes.next(t, string(mcp.MethodNotificationToolsListChanged))
			require.Equal(t, []string{"ask_model", "ask_name", "ask_twice", "crash", "find_tools", "get_note", "man", "slow_count", "web_lookup", "whoami"}, toolNames(t, c))

			res = call(t, c, "find_tools", map[string]any{"query": "weather"})
			require.True(t, res.IsError)
			require.Equal(t, `No tools match "weather". Try other words, or call man for the catalog.`, text(t, res))

			f.reg.UnloadTools("")
			notes.next(t, string(mcp.MethodNotificationToolsListChanged))
			require.Equal(t, reads, toolNames(t, c))
		})
	}
}
