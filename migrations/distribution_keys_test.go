package migrations_test

import (
	"context"
	"maps"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/citus"
	"github.com/relay-dev/relay/internal/testdb"
)

// The tables relay migrate distribute distributes by repository, and the indexes of
// theirs that do not begin with the repository: each serves a lookup across
// repositories by design (docs/scaling.md lists them).
var (
	distributedTables  = citus.Tables
	acrossRepositories = map[string]bool{
		// Operators' listings of every repository's rows, by time,
		// signature, status and class.
		"failed_pois_failed_at_idx":           true,
		"failed_pois_manual_review_idx":       true,
		"failed_pois_signature_failed_at_idx": true,
		"failed_pois_status_class_idx":        true,
		"failed_pois_status_failed_at_idx":    true,
		"failed_pois_status_file_id_idx":      true,
		// A linker lane's rows in job order, read across repositories.
		"link_queue_lane_job_id_idx": true,
		// Supplied references by symbol, which may cross repositories, and
		// the references into a deleted POI of another repository.
		"pois_symbol_idx":                  true,
		"poi_references_symbol_key_idx":    true,
		"poi_references_target_poi_id_idx": true,
		// Derived references by the names they depend on (GIN).
		"poi_references_depends_idx": true,
		// The SQL API's queue drained in commit order; rejected analyses
		// retried by id.
		"publish_queue_seq_idx":    true,
		"rejected_analyses_id_idx": true,
	}
)

// Every primary key and unique constraint of a distributed table begins
// with the repository (a distributed table's unique keys must hold its
// distribution column), and so does every other index but the listed ones:
// a new index must either begin with the repository or be a lookup across
// repositories on purpose.
func TestSchema_KeysBeginWithTheRepository(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	type index struct {
		Table, Name string
		Unique      bool
		First       *string // NULL for an index on an expression
	}
	rows, err := db.Pool.Query(context.Background(), `
		SELECT c.relname, i.relname, x.indisunique, a.attname
		FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_class c ON c.oid = x.indrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = x.indkey[0]
		WHERE n.nspname = $1 AND c.relname = ANY($2)
		ORDER BY 1, 2`, db.Schema, distributedTables)
	require.NoError(t, err)
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[index])
	require.NoError(t, err)
	seen, unmatched := map[string]bool{}, maps.Clone(acrossRepositories)
	for _, ix := range indexes {
		seen[ix.Table] = true
		leads := ix.First != nil && *ix.First == "repository"
		if ix.Unique {
			require.True(t, leads, "unique index %s of %s does not begin with the repository", ix.Name, ix.Table)
			continue
		}
		require.True(t, leads || acrossRepositories[ix.Name],
			"index %s of %s neither begins with the repository nor is listed as a lookup across repositories", ix.Name, ix.Table)
		delete(unmatched, ix.Name)
	}
	for _, table := range distributedTables {
		require.True(t, seen[table], "table %s has no index", table)
	}
	require.Empty(t, unmatched, "listed indexes that no longer exist")
}
