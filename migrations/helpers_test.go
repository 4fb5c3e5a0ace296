package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/migrations"
)

// newMigrator returns a test database of its own, migrated to the latest
// version, and a Migrator on it, closed when the test ends.
func newMigrator(t *testing.T) (*testdb.DB, *migrations.Migrator) {
	t.Helper()
	db := testdb.New(t)
	m, err := migrations.New(db.Pool, db.Schema, testdb.Logger(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return db, m
}

// migratedTo is newMigrator with every migration after version rolled
// back.
func migratedTo(t *testing.T, version int64) (*testdb.DB, *migrations.Migrator) {
	t.Helper()
	db, m := newMigrator(t)
	_, err := m.DownTo(context.Background(), version)
	require.NoError(t, err)
	return db, m
}
