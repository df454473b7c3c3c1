package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/cost"
	"github.com/llmtool/llmtool/examples/notes"
)

// notesReport is the report the command should print, made with the cost
// package directly.
func notesReport(t *testing.T, opts *cost.Options) *cost.Catalog {
	t.Helper()
	reg, err := llmtool.NewRegistry(nil, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)}, notes.Tools)
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	c, err := cost.Report(context.Background(), reg, opts)
	require.NoError(t, err)
	return c
}

func text(t *testing.T, c *cost.Catalog) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, c.WriteText(&b))
	return b.String()
}

func TestRun(t *testing.T) {
	t.Parallel()
	all := notesReport(t, &cost.Options{AllTools: true})
	two := notesReport(t, &cost.Options{AllTools: true, Shapes: []string{"anthropic", "mcp"}, Encoding: "cl100k_base", EstimateFactor: 1.2})
	overTotal := all.Check(cost.Budget{Total: 2000})
	overTool := two.Check(cost.Budget{Tool: 500})
	require.Error(t, overTotal)
	require.Error(t, overTool)
	usage := "usage: llmtoolcost [flags]\n\nReports the tokens of the example notes module's tool definitions per provider format and checks them against a budget.\n\n"

	for _, tt := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"the table", nil, 0, text(t, all), ""},
		{"within budget", []string{"-budget", "100000", "-tool-budget", "10000"}, 0, text(t, all), ""},
		{"shapes, encoding and factor", []string{"-shape", "anthropic, mcp", "-encoding", "cl100k_base", "-factor", "1.2"}, 0, text(t, two), ""},
		{"over the total", []string{"-budget", "2000"}, 1, text(t, all), overTotal.Error() + "\n"},
		{"a tool over", []string{"-shape", "anthropic,mcp", "-encoding", "cl100k_base", "-factor", "1.2", "-tool-budget", "500"}, 1, text(t, two), overTool.Error() + "\n"},
		{"unknown shape", []string{"-shape", "openai"}, 2, "",
			`llmtoolcost: cost: unknown shape "openai"; use one of openai-chat, openai-chat-strict, openai-responses, openai-responses-strict, anthropic, gemini, mcp` + "\n"},
		{"unknown encoding", []string{"-encoding", "p50k_base"}, 2, "", `llmtoolcost: cost: unknown encoding "p50k_base"; use o200k_base or cl100k_base` + "\n"},
		{"an argument", []string{"books"}, 2, "", `llmtoolcost: unexpected argument "books"; it takes flags only (see -help)` + "\n"},
		{"an unknown flag", []string{"-tenant", "x"}, 2, "", "flag provided but not defined: -tenant\n" + usage},
		{"help", []string{"-help"}, 0, "", usage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			require.Equal(t, tt.code, code, stderr.String())
			require.Equal(t, tt.stdout, stdout.String())
			if tt.name == "an unknown flag" || tt.name == "help" {
				require.True(t, strings.HasPrefix(stderr.String(), tt.stderr), stderr.String())
				require.Contains(t, stderr.String(), "-budget int\n")
				return
			}
			require.Equal(t, tt.stderr, stderr.String())
		})
	}

	// The over-budget messages name the shape, the excess and the tools.
	require.True(t, strings.HasPrefix(overTotal.Error(), "cost: over budget: the catalog costs "), overTotal.Error())
	require.Contains(t, overTotal.Error(), "over the budget of 2000; the largest tools, together ")
}

func TestRunJSON(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"-json", "-shape", "openai-chat,gemini"}, &stdout, &stderr), stderr.String())
	require.Empty(t, stderr.String())
	var got cost.Catalog
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	want := notesReport(t, &cost.Options{AllTools: true, Shapes: []string{"openai-chat", "gemini"}})
	want.Unsupported = nil // not in the JSON
	require.Equal(t, want, &got)
	require.True(t, got.AllTools)
	require.Contains(t, got.Tools, "search_notes")
}

// The command as CI runs it: a built binary, its exit status and output.
func TestBinary(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "llmtoolcost")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))

	chat := notesReport(t, &cost.Options{AllTools: true, Shapes: []string{"openai-chat"}})
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "-shape", "openai-chat", "-budget", "1000")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, 1, exit.ExitCode())
	require.Equal(t, text(t, chat), stdout.String())
	require.Equal(t, chat.Check(cost.Budget{Total: 1000}).Error()+"\n", stderr.String())

	stdout.Reset()
	stderr.Reset()
	cmd = exec.Command(bin, "-shape", "openai-chat", "-budget", "100000")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run())
	require.Equal(t, text(t, chat), stdout.String())
	require.Empty(t, stderr.String())
}
