package llmtool_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompile proves the mistakes that the type system rules out: each
// program under testdata/compile/<case> must fail to build with the
// compiler's message for that mistake, and its corrected program in
// testdata/compile/<case>/fixed must build. The programs live inside this
// module (testdata is skipped by ./... patterns) and import the package as
// a user would.
func TestCompile(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("compile-fail tests need the go command on PATH to run go build: %v", err)
	}
	tests := []struct {
		dir  string
		what string
		// want is matched against the compiler's output, after
		// "file:line:col: ".
		want string
	}{
		{
			dir:  "read_exec",
			what: "a read handler calling Exec",
			want: `^c\.Exec undefined \(type \*llmtool\.ReadCtx has no field or method Exec\)$`,
		},
		{
			dir:  "read_as_write",
			what: "a read handler passed to llmtool.Write",
			want: `^in call to llmtool\.Write, type func\(c \*llmtool\.ReadCtx, in In\) \(Out, error\) of createNote does not match func\(\*llmtool\.WriteCtx, In\) \(Out, error\)`,
		},
		{
			dir:  "read_as_write_explicit",
			what: "a read handler passed to llmtool.Write[In, Out]",
			want: `^cannot use createNote \(value of type func\(c \*llmtool\.ReadCtx, in In\) \(Out, error\)\) as func\(\*llmtool\.WriteCtx, In\) \(Out, error\) value in argument to llmtool\.Write\[In, Out\]$`,
		},
		{
			dir:  "write_as_read",
			what: "a write handler passed to llmtool.Read",
			want: `^in call to llmtool\.Read, type func\(c \*llmtool\.WriteCtx, in In\) \(Out, error\) of createNote does not match func\(\*llmtool\.ReadCtx, In\) \(Out, error\)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			t.Parallel()
			pkg := "./" + filepath.ToSlash(filepath.Join("testdata", "compile", tt.dir))
			bin := filepath.Join(t.TempDir(), "prog")

			out, err := goBuild(goCmd, bin, pkg)
			require.Error(t, err, "%s: %s compiled, but must not", pkg, tt.what)
			msgs := compilerMessages(out)
			require.NotEmpty(t, msgs, "%s: go build failed without a compiler message:\n%s", pkg, out)
			require.Len(t, msgs, 1, "%s: want exactly one compiler error:\n%s", pkg, out)
			require.Regexp(t, regexp.MustCompile(tt.want), msgs[0], "%s: %s", pkg, tt.what)

			out, err = goBuild(goCmd, bin, pkg+"/fixed")
			require.NoError(t, err, "%s/fixed: the corrected program must build:\n%s", pkg, out)
		})
	}
}

// goBuild runs go build on pkg, writing the binary to bin.
func goBuild(goCmd, bin, pkg string) (string, error) {
	cmd := exec.Command(goCmd, "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// compilerMessages returns the messages of go build's "file:line:col: msg"
// lines.
func compilerMessages(out string) []string {
	var msgs []string
	pos := regexp.MustCompile(`^\S+\.go:\d+:\d+: `)
	for line := range strings.SplitSeq(out, "\n") {
		if loc := pos.FindStringIndex(line); loc != nil {
			msgs = append(msgs, line[loc[1]:])
		}
	}
	return msgs
}
