package sqlcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOwnTables(t *testing.T) {
	t.Parallel()
	const why = "changes a table llmtool keeps for itself (llmtool_*)"
	tests := []struct {
		query   string
		d       Dialect
		refused bool
	}{
		{query: `DELETE FROM llmtool_approvals`, refused: true},
		{query: `update LLMTOOL_SCOPE_SETTINGS set enabled = 1`, refused: true},
		{query: `INSERT INTO "llmtool_scope_settings" VALUES ('', '', 1, '')`, refused: true},
		{query: `WITH x AS (DELETE FROM llmtool_approvals RETURNING 1) SELECT * FROM x`, d: Postgres, refused: true},
		{query: `CREATE TRIGGER t AFTER INSERT ON notes BEGIN DELETE FROM llmtool_approvals; END`, refused: true},
		{query: `DROP TABLE main.llmtool_audit`, refused: true},
		{query: `SELECT tool, outcome FROM llmtool_audit ORDER BY at DESC LIMIT 10`},
		{query: `SELECT count(*) FROM notes WHERE title = 'llmtool_approvals deleted'`},
		{query: `DELETE FROM notes WHERE id = ?`},
	}
	for _, tt := range tests {
		r := Check(tt.d, tt.query)
		if !tt.refused {
			require.Nil(t, r, tt.query)
			continue
		}
		require.NotNil(t, r, tt.query)
		require.Equal(t, why, r.Reason, tt.query)
		require.Equal(t, "change llmtool's settings through the Registry (Tenants().SetWrites, SetApproval, ...), never in a tool's SQL.", r.Instead)
	}
}
