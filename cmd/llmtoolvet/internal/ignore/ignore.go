// Package ignore reads the //llmtoolvet:ignore comments that silence a
// finding of any llmtoolvet analyzer.
//
// The comment goes on the reported line or on the line above it, followed
// by the reason:
//
//	//llmtoolvet:ignore this test proves the registry refuses it at run time
//
// One directive serves every analyzer of the command, so a reader meets a
// single spelling whatever was reported.
package ignore

import (
	"go/token"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Directive, in a comment on the reported line or the line above it,
// silences a finding. Follow it with the reason.
const Directive = "//llmtoolvet:ignore"

// Lines holds the lines of a package that directives silence, by file name.
type Lines map[string]map[int]bool

// Collect returns the lines silenced in the files of pass: the line of each
// directive and the line after it.
func Collect(pass *analysis.Pass) Lines {
	m := make(Lines)
	for _, f := range pass.Files {
		for _, cg := range f.Comments {
			for _, cm := range cg.List {
				if !strings.HasPrefix(cm.Text, Directive) {
					continue
				}
				if rest := cm.Text[len(Directive):]; rest != "" && rest[0] != ' ' && rest[0] != '\t' {
					continue // //llmtoolvet:ignoreX is another word
				}
				p := pass.Fset.Position(cm.Slash)
				if m[p.Filename] == nil {
					m[p.Filename] = make(map[int]bool)
				}
				m[p.Filename][p.Line] = true
				m[p.Filename][p.Line+1] = true
			}
		}
	}
	return m
}

// Silenced reports whether a finding at pos is silenced.
func (l Lines) Silenced(fset *token.FileSet, pos token.Pos) bool {
	p := fset.Position(pos)
	return l[p.Filename][p.Line]
}
