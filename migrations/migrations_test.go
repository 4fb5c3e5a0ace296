package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/migrations"
)

func TestMigrator_UpDownUpRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t) // already migrated up
	m, err := migrations.New(db.Pool, db.Schema, testdb.Logger(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })

	st, err := m.Status(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(st), 2)
	for _, s := range st {
		require.True(t, s.Applied, "migration %d (%s) not applied", s.Version, s.Source)
	}
	pending, err := m.Pending(ctx)
	require.NoError(t, err)
	require.False(t, pending)

	tables := func() int {
		return testdb.Count(t, db.Pool, `SELECT count(*) FROM information_schema.tables
			WHERE table_schema = $1 AND table_name IN ('river_job', 'failed_pois', 'pois', 'relationships', 'dead_lettered_items')`, db.Schema)
	}
	require.Equal(t, 5, tables())

	down, err := m.DownTo(ctx, 0)
	require.NoError(t, err)
	require.Len(t, down, len(st))
	require.Equal(t, 0, tables(), "down to 0 must remove River's tables and relay's")

	up, err := m.Up(ctx)
	require.NoError(t, err)
	require.Len(t, up, len(st))
	require.Equal(t, 5, tables())
}
