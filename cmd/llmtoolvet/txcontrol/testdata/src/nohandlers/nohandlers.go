// Package nohandlers commits and rolls back transactions without any
// WriteCtx in sight: nothing to report.
package nohandlers

import "database/sql"

func Migrate(db *sql.DB, stmts []string) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range stmts {
		if _, err := tx.Exec(s); err != nil {
			return err
		}
	}
	return tx.Commit()
}
