package llmtooltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The checks every call ends with: leaked goroutines, uses of a handler's
// context after it returned (read from the registry's log), and the log
// handler that sees them.

// finish reports late uses that happened after the last call, once the
// test is over.
func (h *Harness) finish() {
	h.checkLate("")
	h.mu.Lock()
	h.closed = true // a TB's output may not be written once the test ended
	h.mu.Unlock()
}

// checkLate reports uses of a handler's ctx or transaction after it
// returned that were not reported yet: the registry logs each one, and
// logHandler collects them. tool is the tool just called, or "" at the end
// of the test.
func (h *Harness) checkLate(tool string) {
	h.t.Helper()
	h.mu.Lock()
	names := slices.Clone(h.late[h.lateReport:])
	h.lateReport = len(h.late)
	h.mu.Unlock()
	if len(names) == 0 {
		return
	}
	when := "after the call to " + tool
	if tool == "" {
		when = "after the test's last call"
	}
	h.t.Errorf("llmtooltest: %s of a handler's ctx or transaction after the handler returned by %s, seen %s: such uses fail with sql.ErrTxDone; finish all work before returning and start no goroutine that outlives the handler",
		plural(len(names), "use", "uses"), strings.Join(names, ", "), when)
}

// leaked waits, up to the harness's grace period, for the goroutines
// labelled with label to finish, and returns the stacks of those still
// running, grouped by stack, and how many they are. It returns at once
// when none is running.
func (h *Harness) leaked(label string) ([]string, int) {
	leaks, n := labelled(label)
	if n == 0 {
		return nil, 0
	}
	deadline := time.Now().Add(h.grace)
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		left := time.Until(deadline)
		if left <= 0 {
			return leaks, n
		}
		runtime.Gosched()
		time.Sleep(min(wait, left))
		if leaks, n = labelled(label); n == 0 {
			return nil, 0
		}
	}
}

// labelled returns the stacks of the running goroutines whose pprof label
// is label, one per group of goroutines with the same stack, and how many
// they are, leaving out database/sql's, the drivers' and the runtime's own.
func labelled(label string) (out []string, n int) {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return nil, 0
	}
	// The debug=1 profile starts with a "goroutine profile: total N" line,
	// then groups goroutines by stack: a "N @ pcs" line, an optional
	// "# labels: {...}" line, then one "#\tpc\tfunc+off\tfile:line" line
	// per frame, innermost first; groups are separated by blank lines.
	// The first group follows the header line directly.
	profile := buf.String()
	if header, rest, ok := strings.Cut(profile, "\n"); ok && strings.HasPrefix(header, "goroutine profile:") {
		profile = rest
	}
	for group := range strings.SplitSeq(profile, "\n\n") {
		lines := strings.Split(strings.TrimSpace(group), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "# labels: ") {
			continue
		}
		var labels map[string]string
		if json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "# labels: ")), &labels) != nil || labels[pprofLabel] != label {
			continue
		}
		var frames []string
		for _, l := range lines[2:] {
			f := strings.Fields(strings.TrimPrefix(l, "#"))
			if len(f) >= 3 {
				fn := f[1]
				if i := strings.LastIndex(fn, "+0x"); i > 0 {
					fn = fn[:i]
				}
				frames = append(frames, fn+" "+f[2])
			}
		}
		if len(frames) == 0 || ignored(frames[len(frames)-1]) {
			continue
		}
		count, _, _ := strings.Cut(lines[0], " @")
		c, err := strconv.Atoi(count)
		if err != nil {
			c = 1
		}
		n += c
		out = append(out, fmt.Sprintf("%s × goroutine:\n\t%s", count, strings.Join(frames, "\n\t")))
	}
	return out, n
}

// ignored reports whether a goroutine whose outermost frame is frame
// belongs to database/sql's, a driver's or the runtime's own machinery,
// such as the watcher database/sql starts for each transaction, or the
// one pgx starts to cancel a query whose context ended. A handler cannot
// start a goroutine there: one it starts has its own function outermost.
func ignored(frame string) bool {
	fn, _, _ := strings.Cut(frame, " ")
	for _, pkg := range driverPackages {
		if strings.HasPrefix(fn, pkg) {
			return true
		}
	}
	if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "runtime/") {
		return true
	}
	if rest, ok := strings.CutPrefix(fn, "database/sql."); ok {
		// Unexported functions and methods: (*Tx).awaitDone,
		// (*DB).connectionOpener and the like.
		if i := strings.LastIndex(rest, "."); i >= 0 {
			rest = rest[i+1:]
		}
		return rest != "" && rest[0] >= 'a' && rest[0] <= 'z'
	}
	return false
}

// driverPackages are the import paths, with a trailing separator, of the
// drivers the harness opens databases with.
var driverPackages = []string{
	"modernc.org/sqlite.", "modernc.org/sqlite/",
	"github.com/jackc/pgx/v5.", "github.com/jackc/pgx/v5/", "github.com/jackc/puddle/v2.",
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// logHandler passes the registry's log to the test's output and notes each
// use of a handler's ctx or transaction after it returned, which the
// registry logs at level Error with the tool and the operation (op).
type logHandler struct {
	h     *Harness
	next  slog.Handler
	attrs []slog.Attr
}

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelError || l.next.Enabled(ctx, level)
}

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == lateUseMessage {
		var tool, op string
		visit := func(a slog.Attr) bool {
			switch a.Key {
			case "tool":
				tool = a.Value.String()
			case "op":
				op = a.Value.String()
			}
			return true
		}
		for _, a := range l.attrs {
			visit(a)
		}
		r.Attrs(visit)
		l.h.mu.Lock()
		l.h.late = append(l.h.late, fmt.Sprintf("%s (%s)", tool, op))
		l.h.mu.Unlock()
	}
	if !l.next.Enabled(ctx, r.Level) {
		return nil
	}
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	if l.h.closed {
		return nil
	}
	return l.next.Handle(ctx, r)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{h: l.h, next: l.next.WithAttrs(attrs), attrs: append(slices.Clone(l.attrs), attrs...)}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{h: l.h, next: l.next.WithGroup(name), attrs: l.attrs}
}
