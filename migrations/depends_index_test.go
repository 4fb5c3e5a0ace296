package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
)

// The index on poi_references.depends is read by every changer and written
// by every batch with derived references: it keeps no pending list, which
// each read would scan in full.
func TestDependsIndex_KeepsNoPendingList(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	var opts []string
	require.NoError(t, db.Pool.QueryRow(context.Background(), `
		SELECT coalesce(c.reloptions, '{}') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname = 'poi_references_depends_idx' AND n.nspname = $1`, db.Schema).Scan(&opts))
	require.Contains(t, opts, "fastupdate=off")
}
