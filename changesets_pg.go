package llmtool

import (
	"errors"

	"github.com/llmtool/llmtool/changeset"
)

// errPGChangesets refuses tracked tables on PostgreSQL until its capture
// (row triggers) exists.
var errPGChangesets = errors.New("llmtool: Options.Changesets: tracking tables on PostgreSQL is not available yet; it needs SQLite")

// pgIs is undoer.is on PostgreSQL.
func (u *undoer) pgIs(table string, key, values changeset.Values) (bool, error) {
	return false, errPGChangesets
}

// pgRestore is undoer.restore on PostgreSQL.
func (u *undoer) pgRestore(table string, key, values changeset.Values) error {
	return errPGChangesets
}
