package cli_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// On plain PostgreSQL, relay migrate distribute refuses, says why, and
// changes nothing: relay migrate up is all plain PostgreSQL needs.
func TestMigrateDistribute_RefusesWithoutCitus(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := run(t, db, "", nil, "migrate", "distribute")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stderr, "the database has no citus extension: relay migrate distribute runs on a Citus coordinator")
	require.Empty(t, r.stdout)
	require.Equal(t, 7, testdb.Count(t, db.Pool, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = ANY('{files,pois,poi_references,link_queue,publish_queue,failed_pois,rejected_analyses}')
		AND c.relkind = 'r'`, db.Schema), "the tables are plain tables still")
}
