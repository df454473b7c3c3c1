package pgtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool/internal/pgtest"
)

func TestOpenGivesAFreshDatabase(t *testing.T) {
	t.Parallel()
	a, b := pgtest.Open(t), pgtest.Open(t)
	_, err := a.Exec("CREATE TABLE t (x int)")
	require.NoError(t, err)
	var n int
	require.NoError(t, b.QueryRow("SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n))
	require.Equal(t, 0, n, "each test gets its own database")
}
