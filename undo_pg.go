package llmtool

import (
	"encoding/json"
	"strings"

	"github.com/llmtool/llmtool/changeset"
	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/sqlcheck"
)

// Undo on PostgreSQL. A changeset's values are each column's to_jsonb,
// so the undo hands them back to the server as JSON and lets it convert
// them to the columns' types: jsonb_populate_record(NULL::t, $1) is a row
// of t with those values, exactly as they were (a bytea's "\\x6869", a
// timestamp's ISO text, a double precision's shortest exact digits). Rows
// are compared as jsonb text, which is canonical: equal values, equal
// text. The statements run as the undo tool's own, through its WriteCtx,
// so the statement check passes them, Options.Role applies to them, and
// the capture triggers record them as the undo's changeset.

// pgColumns are the columns of a table an undo writes back.
type pgColumns struct {
	insert map[string]bool // the columns an INSERT may set: all but generated ones
	update map[string]bool // those an UPDATE may set: not GENERATED ALWAYS AS IDENTITY either
}

// pgColumnsOf reads table's columns, once per undo: a schema change
// since the registry started (a column added, one made generated) is
// seen.
func (u *undoer) pgColumnsOf(table string) (*pgColumns, error) {
	if c, ok := u.pgCols[table]; ok {
		return c, nil
	}
	rows, err := u.c.QueryContext(u.c, `SELECT a.attname::text, a.attgenerated <> '', a.attidentity = 'a'
FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, sqlcheck.QuoteIdent(table))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	c := &pgColumns{insert: make(map[string]bool), update: make(map[string]bool)}
	for rows.Next() {
		var name string
		var generated, always bool
		if err := rows.Scan(&name, &generated, &always); err != nil {
			return nil, err
		}
		c.insert[name] = !generated
		c.update[name] = !generated && !always
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if u.pgCols == nil {
		u.pgCols = make(map[string]*pgColumns)
	}
	u.pgCols[table] = c
	return c, nil
}

// pgKeyMatch is the condition that the row cur has the key of rec, the
// record pgRecord makes of the values in $1.
func pgKeyMatch(key changeset.Values) string {
	conds := make([]string, 0, len(key))
	for _, col := range sortedCols(key) {
		q := sqlcheck.QuoteIdent(col)
		conds = append(conds, "cur."+q+" = rec."+q)
	}
	return strings.Join(conds, " AND ")
}

func pgRecord(table string) string {
	return `jsonb_populate_record(NULL::` + sqlcheck.QuoteIdent(table) + `, $1::jsonb) AS rec`
}

func jsonArg(v changeset.Values) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// pgIs is undoer.is on PostgreSQL.
func (u *undoer) pgIs(table string, key, values changeset.Values) (bool, error) {
	k, err := jsonArg(key)
	if err != nil {
		return false, err
	}
	q := `SELECT count(*) FROM ` + sqlcheck.QuoteIdent(table) + ` AS cur, ` + pgRecord(table) + ` WHERE ` + pgKeyMatch(key)
	args := []any{k}
	if values != nil {
		v, err := jsonArg(values)
		if err != nil {
			return false, err
		}
		q += ` AND NOT EXISTS (SELECT 1 FROM jsonb_each($2::jsonb) AS v WHERE (to_jsonb(cur.*) -> v.key)::text IS DISTINCT FROM v.value::text)`
		args = append(args, v)
	}
	var n int
	if err := u.c.QueryRowContext(u.c, q, args...).Scan(&n); err != nil {
		return false, err
	}
	return (n > 0) == (values != nil), nil
}

// pgRestore is undoer.restore on PostgreSQL.
func (u *undoer) pgRestore(table string, key, values changeset.Values) error {
	t := sqlcheck.QuoteIdent(table)
	if values == nil {
		k, err := jsonArg(key)
		if err != nil {
			return err
		}
		return u.pgExec(`DELETE FROM `+t+` AS cur USING `+pgRecord(table)+` WHERE `+pgKeyMatch(key), k)
	}
	cols, err := u.pgColumnsOf(table)
	if err != nil {
		return err
	}
	v, err := jsonArg(values)
	if err != nil {
		return err
	}
	gone, err := u.pgIs(table, key, nil)
	if err != nil {
		return err
	}
	var names []string
	for _, col := range sortedCols(values) {
		if gone && cols.insert[col] || !gone && cols.update[col] && key[col] == nil {
			names = append(names, sqlcheck.QuoteIdent(col))
		}
	}
	if gone {
		list := strings.Join(names, ", ")
		// OVERRIDING SYSTEM VALUE: an identity column gets its value back.
		return u.pgExec(`INSERT INTO `+t+` (`+list+`) OVERRIDING SYSTEM VALUE SELECT `+list+` FROM jsonb_populate_record(NULL::`+t+`, $1::jsonb)`, v)
	}
	if len(names) == 0 {
		return nil // the key is the whole row
	}
	sets := make([]string, len(names))
	for i, q := range names {
		sets[i] = q + " = rec." + q
	}
	return u.pgExec(`UPDATE `+t+` AS cur SET `+strings.Join(sets, ", ")+` FROM `+pgRecord(table)+` WHERE `+pgKeyMatch(key), v)
}

// pgExec runs a restore's statement inside a savepoint: if a foreign key
// refuses it (see restoreRows), the transaction goes on without it and
// the row is held for later.
func (u *undoer) pgExec(query string, arg string) error {
	cs := u.c.call
	if err := cs.ownExec(u.c, `SAVEPOINT llmtool_undo`); err != nil {
		return err
	}
	_, err := u.c.ExecContext(u.c, query, arg)
	if err != nil {
		if !engine.ForeignKeyViolation(err) {
			return err
		}
		if rerr := cs.ownExec(u.c, `ROLLBACK TO SAVEPOINT llmtool_undo`); rerr != nil {
			return rerr
		}
		err = &heldError{err}
	}
	if rerr := cs.ownExec(u.c, `RELEASE SAVEPOINT llmtool_undo`); rerr != nil {
		return rerr
	}
	return err
}
