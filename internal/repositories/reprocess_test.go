package repositories_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/repositories"
	"github.com/relay-dev/relay/internal/testdb"
)

// reprocessBad fixes acme/c's failed POI "bad" (line 99, a valid
// reference list) and enqueues its reprocess; the worker is not running.
func (b *testBundle) reprocessBad(t *testing.T) {
	t.Helper()
	_, err := b.db.Pool.Exec(context.Background(), `UPDATE failed_pois
		SET original_poi_data = original_poi_data || '{"lineNumber": 99, "references": []}' WHERE poi_id = 'bad'`)
	require.NoError(t, err)
	res, err := failed.NewReprocessor(b.db.Pool, b.w.Client(), nil, testdb.Logger(t)).
		Run(context.Background(), failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, "tester", nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Jobs)
}

// A reprocess job enqueued before its repository is deleted writes
// nothing when it runs after the delete: the file is gone, so its row is
// closed, saying why, and the repository stays deleted.
func TestDelete_ReprocessQueuedBeforeTheDeleteDoesNotRecreateTheRepository(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "acme/c", "s.go", fn("s1", "s.go", "m/S"), bad("bad", "s.go"))
	b.start(t)
	b.drain(t)
	require.NoError(t, b.w.Stop(ctx))
	b.reprocessBad(t)
	_, err := b.store.Delete(ctx, "acme/c", repositories.Options{})
	require.NoError(t, err)

	b.start(t)
	b.drain(t)
	for _, table := range []string{"files", "pois"} {
		require.Zero(t, b.count(t, `SELECT count(*) FROM `+table+` WHERE repository = 'acme/c'`), table)
	}
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'superseded'
		AND superseded_reason = 'repository "acme/c" was deleted: reprocessing would recreate it'`))
}

// A reprocess job of a deleted repository's row, run after the repository
// was published again: the file exists at the job's version (1, as the
// deleted one was), but it is another file. The publish superseded the
// row, so the job writes nothing: the new file's POI keeps its line.
func TestDelete_ReprocessQueuedBeforeADeleteAndARepublishWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "acme/c", "s.go", fn("s1", "s.go", "m/S"), bad("bad", "s.go"))
	b.start(t)
	b.drain(t)
	require.NoError(t, b.w.Stop(ctx))
	b.reprocessBad(t)
	_, err := b.store.Delete(ctx, "acme/c", repositories.Options{})
	require.NoError(t, err)
	b.publish(t, "acme/c", "s.go", fn("bad", "s.go", "")) // version 1 of the new s.go: bad at line 1
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM files WHERE repository = 'acme/c' AND file_id = 's.go' AND version = 1`))

	b.start(t)
	b.drain(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE repository = 'acme/c' AND poi_id = 'bad' AND line_number = 1`),
		"the reprocess of the deleted file's row wrote its POI over the new file's")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'superseded'
		AND superseded_reason = 'version 1 of the file was published'`))
}
