package readmetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// scratchModule is the module path of the scratch module the snippets are
// written into; README snippets import their own packages under it.
const scratchModule = "example.com/yourapp"

// snippet is one ```go block of the README with its directive.
type snippet struct {
	path    string // where it goes in the scratch module; "" to skip
	prelude string // the directive's lines after the first, written before the block
	// preludeLine and line are the README lines of the prelude's first line
	// and the block's first line.
	preludeLine, line int
	body              string
}

const directive = "<!-- readmetest:"

// parseSnippets returns the ```go blocks of a README, each with the
// directive on the lines just before its fence. A block without one is an
// error, so that a new snippet cannot go untested by accident.
func parseSnippets(readme string) ([]snippet, error) {
	lines := strings.Split(readme, "\n")
	var out []snippet
	var errs []string
	var pending *snippet // the directive just read, waiting for its fence
	pendingEnd := -1     // the line index the directive ended on
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, directive):
			start := i
			head := strings.TrimPrefix(line, directive)
			var rest []string
			if h, ok := strings.CutSuffix(strings.TrimSpace(head), "-->"); ok {
				head = h
			} else {
				for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "-->"; i++ {
					rest = append(rest, lines[i])
				}
				if i == len(lines) {
					return nil, fmt.Errorf("README.md:%d: the readmetest comment is not closed by a line \"-->\"", start+1)
				}
			}
			fields := strings.Fields(head)
			s := &snippet{preludeLine: start + 2}
			switch {
			case len(fields) == 0:
				errs = append(errs, fmt.Sprintf("README.md:%d: readmetest comment without a path (or \"skip <reason>\")", start+1))
			case fields[0] == "skip":
				if len(fields) < 2 {
					errs = append(errs, fmt.Sprintf("README.md:%d: \"readmetest: skip\" needs a reason", start+1))
				}
			case len(fields) > 1:
				errs = append(errs, fmt.Sprintf("README.md:%d: readmetest comment %q: the first line holds only the path; the prelude goes on the lines after it", start+1, line))
			case filepath.IsAbs(fields[0]) || strings.HasPrefix(filepath.Clean(fields[0]), ".."):
				errs = append(errs, fmt.Sprintf("README.md:%d: readmetest path %q must be relative and inside the scratch module", start+1, fields[0]))
			default:
				s.path = filepath.Clean(fields[0])
			}
			if len(rest) > 0 {
				s.prelude = strings.Join(rest, "\n") + "\n"
			}
			pending, pendingEnd = s, i
		case strings.HasPrefix(line, "```"):
			lang := strings.TrimSpace(strings.TrimPrefix(line, "```"))
			start := i
			var body []string
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				body = append(body, lines[i])
			}
			if lang != "go" {
				pending = nil
				continue
			}
			if pending == nil || pendingEnd != start-1 {
				errs = append(errs, fmt.Sprintf("README.md:%d: a ```go block without a readmetest comment on the line before it; add <!-- readmetest: PATH --> (see go doc ./internal/readmetest)", start+1))
				pending = nil
				continue
			}
			pending.line = start + 2
			pending.body = strings.Join(body, "\n") + "\n"
			out = append(out, *pending)
			pending = nil
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

var goDirective = regexp.MustCompile(`(?m)^go\s+(\S+)\s*$`)

// TestREADMESnippets writes the README's Go snippets into a scratch module
// and vets, builds and tests it.
func TestREADMESnippets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command over a scratch module; skipped with -short")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readmePath := filepath.Join(root, "README.md")
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	snippets, err := parseSnippets(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if len(snippets) == 0 {
		t.Fatal("README.md has no ```go blocks; the parser or the README changed")
	}
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := goDirective.FindSubmatch(rootMod)
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}

	dir := t.TempDir()
	files := map[string]*bytes.Buffer{}
	var order []string
	for _, s := range snippets {
		if s.path == "" {
			continue
		}
		b := files[s.path]
		if b == nil {
			b = new(bytes.Buffer)
			files[s.path] = b
			order = append(order, s.path)
		}
		// //line directives make the compiler and vet report README lines.
		if s.prelude != "" {
			fmt.Fprintf(b, "//line %s:%d\n%s", readmePath, s.preludeLine, s.prelude)
		}
		fmt.Fprintf(b, "//line %s:%d\n%s", readmePath, s.line, s.body)
	}
	for _, p := range order {
		write(t, filepath.Join(dir, p), files[p].Bytes())
	}
	write(t, filepath.Join(dir, "go.mod"), fmt.Appendf(nil,
		"module %s\n\ngo %s\n\nrequire github.com/llmtool/llmtool v0.0.0\n\nreplace github.com/llmtool/llmtool => %s\n",
		scratchModule, m[1], root))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), sum)
	t.Logf("%d snippets in %d files: %s", len(snippets), len(order), strings.Join(order, ", "))

	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to compile the snippets: %v", err)
	}
	run := func(args ...string) {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(t.Context(), goCmd, args...)
		cmd.Dir = dir
		// Offline, with the checkout's go.sum, in the caches of the go
		// command running this test (inherited GOMODCACHE and GOCACHE).
		cmd.Env = append(os.Environ(),
			"GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod -buildvcs=false")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the scratch module of README.md's snippets: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("go %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	}
	run("vet", "./...")
	run("build", "./...")
	run("test", "-count=1", "./...")
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseSnippets(t *testing.T) {
	readme := "# T\n\n" +
		"<!-- readmetest: a/a.go -->\n```go\npackage a\n```\n\n" +
		"<!-- readmetest: a/a_test.go\npackage a\n\nimport \"testing\"\n-->\n```go\nfunc TestA(t *testing.T) {}\n```\n\n" +
		"```sh\ngo test ./...\n```\n\n" +
		"<!-- readmetest: skip shows a fragment on purpose -->\n```go\nx := 1\n```\n"
	got, err := parseSnippets(readme)
	if err != nil {
		t.Fatal(err)
	}
	want := []snippet{
		{path: "a/a.go", preludeLine: 4, line: 5, body: "package a\n"},
		{path: "a/a_test.go", prelude: "package a\n\nimport \"testing\"\n", preludeLine: 9, line: 14, body: "func TestA(t *testing.T) {}\n"},
		{preludeLine: 22, line: 23, body: "x := 1\n"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseSnippets:\n got %+v\nwant %+v", got, want)
	}

	for _, bad := range []string{
		"```go\npackage a\n```\n",                                   // no directive
		"<!-- readmetest: a.go -->\n\n```go\npackage a\n```\n",      // not on the line before
		"<!-- readmetest: skip -->\n```go\npackage a\n```\n",        // skip without a reason
		"<!-- readmetest: ../a.go -->\n```go\npackage a\n```\n",     // outside the module
		"<!-- readmetest: a.go\npackage a\n```go\npackage a\n```\n", // not closed
	} {
		if _, err := parseSnippets(bad); err == nil {
			t.Errorf("parseSnippets(%q) gave no error", bad)
		}
	}
}
