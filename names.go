package llmtool

// Names in messages: the closest names to one the model got wrong.

import (
	"sort"
	"strings"
)

// closest returns up to n of names nearest to name by edit distance, for
// "did you mean" suggestions; names farther than a third of name's length are
// left out.
func closest(name string, names []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, c := range names {
		d := editDistance(name, c)
		if d <= max(2, len(name)/3) || strings.Contains(c, name) || strings.Contains(name, c) {
			cs = append(cs, cand{c, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
