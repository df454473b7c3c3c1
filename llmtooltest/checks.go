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
// running. It returns at once when none is running.
func (h *Harness) leaked(label string) []string {
	leaks := labelled(label)
	if len(leaks) == 0 {
		return nil
	}
	deadline := time.Now().Add(h.grace)
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		left := time.Until(deadline)
		if left <= 0 {
			return leaks
		}
		runtime.Gosched()
		time.Sleep(min(wait, left))
		if leaks = labelled(label); len(leaks) == 0 {
			return nil
		}
	}
}

// labelled returns the stacks of the running goroutines whose pprof label
// is label, leaving out database/sql's and the runtime's own.
func labelled(label string) []string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return nil
	}
	var out []string
	// The debug=1 profile groups goroutines by stack: a "N @ pcs" line, an
	// optional "# labels: {...}" line, then one "#\tpc\tfunc+off\tfile:line"
	// line per frame, innermost first; groups are separated by blank lines.
	for group := range strings.SplitSeq(buf.String(), "\n\n") {
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
		out = append(out, fmt.Sprintf("%s × goroutine:\n\t%s", count, strings.Join(frames, "\n\t")))
	}
	return out
}

// ignored reports whether a goroutine whose outermost frame is frame
// belongs to database/sql's or the runtime's own machinery, such as the
// watcher database/sql starts for each transaction.
func ignored(frame string) bool {
	fn, _, _ := strings.Cut(frame, " ")
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
