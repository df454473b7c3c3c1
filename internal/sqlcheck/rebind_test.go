package sqlcheck

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRebind(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string // want "" is in, unchanged
	}{
		{"none", "SELECT 1", ""},
		{"bare", "SELECT * FROM notes WHERE id = ? AND owner = ?", "SELECT * FROM notes WHERE id = $1 AND owner = $2"},
		{"no spaces", "UPDATE t SET a=?,b=? WHERE c=?", "UPDATE t SET a=$1,b=$2 WHERE c=$3"},
		{"numbered", "SELECT ?2, ?1, ?2", "SELECT $2, $1, $2"},
		{"bare after numbered", "SELECT ?, ?5, ?", "SELECT $1, $5, $6"},
		{"numbered then smaller", "SELECT ?3, ?1, ?", "SELECT $3, $1, $4"},
		{"bare then numbered", "SELECT ?, ?1", "SELECT $1, $1"},
		{"leading zeros kept", "SELECT ?01, ?", "SELECT $01, $2"},
		{"cast", "SELECT ?::int, ?2::text", "SELECT $1::int, $2::text"},
		{"in list", "SELECT * FROM t WHERE id IN (?,?,?)", "SELECT * FROM t WHERE id IN ($1,$2,$3)"},
		{"concat", "SELECT '%'||?||'%'", "SELECT '%'||$1||'%'"},
		{"after keyword", "SELECT CASE WHEN a THEN?ELSE?END", "SELECT CASE WHEN a THEN $1 ELSE $2 END"},
		{"before identifier", "SELECT ?1abc", "SELECT $1 abc"},
		{"after number", "SELECT 1?", "SELECT 1 $1"},
		{"adjacent", "SELECT ??1", "SELECT ?1"},
		{"adjacent numbered", "SELECT ?1?2", "SELECT $1 $2"},
		{"string", "SELECT '?', ? FROM t WHERE a = 'it''s ?'", "SELECT '?', $1 FROM t WHERE a = 'it''s ?'"},
		{"string only", "SELECT 'why?'", ""},
		{"E string", `SELECT E'\'?', ?`, `SELECT E'\'?', $1`},
		{"E string backslash", `SELECT e'\\', ?, '?'`, `SELECT e'\\', $1, '?'`},
		{"E string after ?", `SELECT ?E'\'?'`, `SELECT $1 E'\'?'`},
		{"plain string is not E", `SELECT x'\' , ?`, `SELECT x'\' , $1`},
		{"dollar quote", "SELECT $$?$$, ?", "SELECT $$?$$, $1"},
		{"tagged dollar quote", "SELECT $fn$ ? $x$ ? $fn$, ?", "SELECT $fn$ ? $x$ ? $fn$, $1"},
		{"identifier", `SELECT "a?" FROM "t?" WHERE b = ?`, `SELECT "a?" FROM "t?" WHERE b = $1`},
		{"identifier with quote", `SELECT "a""?" , ?`, `SELECT "a""?" , $1`},
		{"unicode identifier", `SELECT U&"?" , ?`, `SELECT U&"?" , $1`},
		{"line comment", "SELECT ? -- why?\n, ?", "SELECT $1 -- why?\n, $2"},
		{"line comment at end", "SELECT ? -- why?", "SELECT $1 -- why?"},
		{"block comment", "SELECT /* ? */ ?", "SELECT /* ? */ $1"},
		{"nested comment", "SELECT /* a /* ? */ ? */ ?", "SELECT /* a /* ? */ ? */ $1"},
		{"unterminated comment", "SELECT ? /* ?", "SELECT $1 /* ?"},
		{"unterminated string", "SELECT ?, '?", "SELECT $1, '?"},
		{"escaped jsonb", "SELECT body ?? 'k' FROM t WHERE id = ?", "SELECT body ? 'k' FROM t WHERE id = $1"},
		{"escaped jsonb any", "SELECT body ??| array['a'], body ??& array[?]", "SELECT body ?| array['a'], body ?& array[$1]"},
		{"escape then placeholder", "SELECT body ???", "SELECT body ?$1"},
		{"statements", "INSERT INTO t VALUES (?, ?); UPDATE u SET a = ?", "INSERT INTO t VALUES ($1, $2); UPDATE u SET a = $1"},
		{"semicolon in string", "SELECT ';', ?, ?", "SELECT ';', $1, $2"},
		{"dollar placeholders", "SELECT $1, ?", ""},
		{"dollar placeholder later", "SELECT ?, $1", ""},
		{"jsonb with dollar placeholders", "SELECT body ? 'k', body ?| $1 FROM t WHERE id = $2", ""},
		{"dollar after operator", "SELECT @$1, ?", ""},
		{"dollar in identifier", "SELECT a$1, ?", "SELECT a$1, $1"},
		{"dollar in string", "SELECT '$1', ?", "SELECT '$1', $1"},
		{"dollar in comment", "SELECT ? /* $1 */", "SELECT $1 /* $1 */"},
		{"named left alone", "SELECT :a, @b, ?", "SELECT :a, @b, $1"},
	}
	for _, c := range cases {
		got, changed := Rebind(c.in)
		want := c.want
		if want == "" {
			want = c.in
		}
		require.Equal(t, want, got, c.name)
		require.Equal(t, c.want != "", changed, c.name)
	}
}

func TestRebindAllocatesNothingWithoutChange(t *testing.T) {
	for _, q := range []string{benchQuery, "SELECT $1, ? FROM t", "SELECT 'why?'"} {
		require.Zero(t, testing.AllocsPerRun(100, func() { Rebind(q) }), q)
	}
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { Rebind(benchQueryQ) }))
}

func TestCacheCheckRebind(t *testing.T) {
	t.Parallel()
	var c Cache
	text, r := c.CheckRebind(Postgres, "SELECT * FROM t WHERE a = ? AND b = ?")
	require.Nil(t, r)
	require.Equal(t, "SELECT * FROM t WHERE a = $1 AND b = $2", text)
	text, r = c.CheckRebind(Postgres, "SELECT * FROM t WHERE a = ? AND b = ?")
	require.Nil(t, r)
	require.Equal(t, "SELECT * FROM t WHERE a = $1 AND b = $2", text, "from the cache")
	text, r = c.CheckRebind(SQLite, "SELECT * FROM t WHERE a = ? AND b = ?")
	require.Nil(t, r)
	require.Equal(t, "SELECT * FROM t WHERE a = ? AND b = ?", text, "each dialect its own")
	text, r = c.CheckRebind(Postgres, "SELECT ?; COMMIT")
	require.NotNil(t, r)
	require.Empty(t, text)
	require.Nil(t, c.Check(Postgres, "SELECT 1"))
	text, r = c.CheckRebind(Postgres, "SELECT 1")
	require.Nil(t, r)
	require.Equal(t, "SELECT 1", text)
	require.Equal(t, int32(3), c.n.Load())
	// SET is refused on PostgreSQL, and the cached SQLite answer does not
	// leak into it.
	require.Nil(t, c.Check(SQLite, "VALUES (1)"))
	require.NotNil(t, c.Check(Postgres, "SET search_path = x"))
}

// lexical returns the literals, quoted identifiers and comments of s by
// PostgreSQL's rules, in order; in Rebind's input (in), ?? and ?NNN are
// read as Rebind reads them.
func lexical(s string, in bool) []string {
	var out []string
	sc := scanner{s: s, d: Postgres}
	for {
		from := sc.i
		sc.skip()
		gap := scanner{s: s[:sc.i], i: from, d: Postgres}
		for gap.i < len(gap.s) {
			if isSpace(gap.s[gap.i]) {
				gap.i++
				continue
			}
			c := gap.i
			if strings.HasPrefix(gap.s[c:], "--") {
				if j := strings.IndexByte(gap.s[c:], '\n'); j >= 0 {
					gap.i += j + 1
				} else {
					gap.i = len(gap.s)
				}
			} else {
				gap.blockComment()
			}
			out = append(out, gap.s[c:gap.i])
		}
		if in && strings.HasPrefix(s[sc.i:], "??") {
			sc.i += 2
			continue
		}
		if in && sc.i < len(s) && s[sc.i] == '?' { // ?NNN as Rebind reads it
			for sc.i++; sc.i < len(s) && s[sc.i] >= '0' && s[sc.i] <= '9'; sc.i++ {
			}
			continue
		}
		tok := sc.next()
		switch tok.kind {
		case tEOF:
			return out
		case tString, tQuoted:
			out = append(out, tok.text)
		}
	}
}

// placeholders counts the $N and the ? of s outside its literals. In
// Rebind's input (in) a ? takes its digits with it and ?? is counted
// apart, in escapes; in its output each ? is one.
func placeholders(s string, in bool) (dollars, questions, escapes int) {
	sc := scanner{s: s, d: Postgres}
	for {
		sc.skip()
		if sc.i >= len(s) {
			return
		}
		switch c := s[sc.i]; {
		case c == '$' && sc.i+1 < len(s) && s[sc.i+1] >= '0' && s[sc.i+1] <= '9':
			dollars++
		case c == '?' && in && sc.i+1 < len(s) && s[sc.i+1] == '?':
			escapes++
			sc.i += 2
			continue
		case c == '?' && in:
			questions++
			for sc.i++; sc.i < len(s) && s[sc.i] >= '0' && s[sc.i] <= '9'; sc.i++ {
			}
			continue
		case c == '?':
			questions++
		}
		sc.next()
	}
}

// FuzzRebind checks, for any text, that Rebind changes no literal, quoted
// identifier or comment, that every ? it leaves is one it was asked to
// keep, and that it turns every ? into a $N when it changes anything.
func FuzzRebind(f *testing.F) {
	for _, s := range []string{
		"SELECT ?, ?5, ?", "SELECT '?' , \"?\", ? -- ?\n /* ? /* ? */ ? */ ?", "a ?? 'k' AND id = ?",
		"THEN?1abc", "$1 ?", `E'\'?' ?`, "$$?$$ ?", "?::int", "x=?;y=?", `U&"?" UESCAPE '!' ?`,
		"$a$ ? $a$ ?", "?E'\\''?'", "1$a$?$a$?", "?$a$?$a$", "a$?", "-?-", "/?*", "???", "?-- x", "'?'?'?'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		out, changed := Rebind(q)
		if !changed {
			if out != q {
				t.Fatalf("Rebind(%q) = %q, reported unchanged", q, out)
			}
			return
		}
		if a, b := lexical(q, true), lexical(out, false); strings.Join(a, "\x00") != strings.Join(b, "\x00") {
			t.Fatalf("Rebind(%q) = %q changed literals or comments:\n%q\n%q", q, out, a, b)
		}
		d0, q0, e0 := placeholders(q, true)
		d1, q1, _ := placeholders(out, false)
		if d0 != 0 {
			t.Fatalf("Rebind(%q) = %q rewrote a text with $N placeholders", q, out)
		}
		if d1 != q0 || q1 != e0 {
			t.Fatalf("Rebind(%q) = %q: %d ? became %d $N; %d ?? left %d ?", q, out, q0, d1, e0, q1)
		}
	})
}

const (
	benchQuery  = `SELECT n.note_id, n.title, n.type, n.mime, n.is_protected, n.date_modified FROM notes n WHERE n.note_id = $1 AND n.is_deleted = 0`
	benchQueryQ = `SELECT n.note_id, n.title, n.type, n.mime, n.is_protected, n.date_modified FROM notes n WHERE n.note_id = ? AND n.is_deleted = 0 AND n.title <> 'why?' LIMIT ?`
)

func BenchmarkRebindNoQuestionMark(b *testing.B) {
	for b.Loop() {
		Rebind(benchQuery)
	}
}

func BenchmarkRebind(b *testing.B) {
	for b.Loop() {
		Rebind(benchQueryQ)
	}
}

func BenchmarkCheckPostgres(b *testing.B) {
	for b.Loop() {
		if Check(Postgres, benchQueryQ) != nil {
			b.Fatal("refused")
		}
	}
}

func BenchmarkCacheCheckRebindHit(b *testing.B) {
	var c Cache
	for b.Loop() {
		if _, r := c.CheckRebind(Postgres, benchQueryQ); r != nil {
			b.Fatal("refused")
		}
	}
}
