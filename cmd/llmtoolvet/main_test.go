package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGoVet builds llmtoolvet and runs it the way CI does, through
// go vet -vettool, on a package with a finding and on the corrected
// version.
func TestGoVet(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("needs the go command on PATH to build llmtoolvet and run go vet: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "llmtoolvet")
	build := exec.Command(goCmd, "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)

	vet := func(pkg string) (string, error) {
		cmd := exec.Command(goCmd, "vet", "-vettool="+bin, pkg)
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out2, err := vet("./testdata/leaky")
	require.Error(t, err, "go vet must fail on a finding:\n%s", out2)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Contains(t, out2, `leaky.go:18:4: goroutine uses the ctx or transaction of the handler of tool "touch_note" (c): it is dead once the handler returns (sql.ErrTxDone)`)

	out2, err = vet("./testdata/clean")
	require.NoError(t, err, "go vet must pass the corrected package:\n%s", out2)
	require.Empty(t, out2)
}
