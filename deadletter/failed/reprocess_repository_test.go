package failed_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/outbox"
)

// A reprocess puts each row back into its own repository: two repositories
// whose file and POI ids are the same each get their POI resolved in their
// own symbol table, and a repository filter takes only its rows; each
// job's outcomes land on its own repository's rows.
func TestReprocess_KeepsEachRowInItsRepository(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, repo := range []string{"acme/a", "acme/b"} {
		require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
			_, err := b.pub.PublishTx(ctx, tx, outbox.Analysis{Repository: repo, FileID: "src/m.js", POIs: []json.RawMessage{
				poi("m1", "function_definition", "cube", "src/m.js", "twelve", "function cube() { sq(); }"),
				poi("m2", "function_definition", "sq", "src/m.js", 2, "function sq() {}"),
			}})
			return err
		}))
	}
	b.work(t)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM failed_pois WHERE poi_id = 'm1'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/b'`))

	// Unfixed, acme/a's row fails again: its outcome is recorded on its
	// own row.
	repoA := "acme/a"
	res := b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew, Repository: &repoA}})
	require.EqualValues(t, 1, res.Rows)
	b.work(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/a' AND status = 'new' AND attempts = 2`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/b' AND attempts = 1`))

	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '1')`)
	repo := "acme/b"
	res = b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew, Repository: &repo}})
	require.EqualValues(t, 1, res.Rows)
	b.work(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/b' AND status = 'reprocessed'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/a' AND status = 'new'`))

	// A row is found by its id alone, whatever its repository.
	store := failed.NewStore(b.db.Pool)
	idA := int64(b.count(t, `SELECT id FROM failed_pois WHERE repository = 'acme/a'`))
	got, err := store.Get(ctx, idA)
	require.NoError(t, err)
	require.Equal(t, "acme/a", got.Repository)
	page, err := store.List(ctx, failed.Filter{IDs: []int64{idA}}, 10)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, idA, page[0].ID)
	ign, err := store.Ignore(ctx, []int64{idA, idA + 1000}, "test", "t")
	require.NoError(t, err)
	require.Equal(t, []int64{idA}, ign.Ignored)
	require.Equal(t, []int64{idA + 1000}, ign.NotFound)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/a' AND status = 'ignored'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE repository = 'acme/b' AND poi_id = 'm1'`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois WHERE repository = 'acme/a' AND poi_id = 'm1'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships
		WHERE repository = 'acme/b' AND source_poi_id = 'm1' AND target_poi_id = 'm2' AND target_repository = 'acme/b'`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM files WHERE repository = ''`), "nothing lands in the default repository")
}
