package resolvefile_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
	"github.com/relay-dev/relay/worker"
)

// A batch whose job another worker returned to the queue while it ran (its
// worker's heartbeat was declared gone) does not commit: the job's next
// attempt is the only one whose writes stay. The race is forced: the first
// attempt's extraction waits until the job has been returned.
func TestResolveFileWorker_BatchOfAReturnedJobDoesNotCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		CREATE TABLE commits (n int);
		CREATE FUNCTION record_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO commits VALUES (1); RETURN NULL; END $$;
		CREATE TRIGGER record_commit AFTER INSERT ON poi_references FOR EACH STATEMENT EXECUTE FUNCTION record_commit();`)
	require.NoError(t, err)

	var once sync.Once
	extract := func(ctx context.Context, poi resolver.POI) ([]resolver.Reference, error) {
		once.Do(func() {
			// Another worker returns the running job to the queue, as
			// Liveness does for a worker that is gone.
			_, err := db.Pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now() WHERE state = 'running' AND kind = 'resolve_file'`)
			if err != nil {
				panic(err)
			}
		})
		return resolver.Extract(ctx, poi)
	}
	cfg := worker.ConfigFrom(db.Config())
	cfg.Extract = extract
	w, err := worker.New(db.Pool, cfg, testdb.Logger(t))
	require.NoError(t, err)
	pub := outbox.New(w.Client(), nil, testdb.Logger(t))
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := pub.PublishTx(ctx, tx, outbox.Analysis{FileID: "src/f.js", POIs: []json.RawMessage{
			fn("f1", "one", "src/f.js", "function one() { return two(); }"), fn("f2", "two", "src/f.js", "function two() {}")}})
		return err
	}))
	require.NoError(t, w.RunUntilIdle(ctx, nil))

	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM commits`), "one attempt's references committed")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'f1' AND target_poi_id = 'f2'`))
	// Usually attempt 2 completes it. River fences a job's completion on its
	// state, not its attempt, so attempt 1's late "retry" can return attempt 2
	// to the queue too; then attempt 2 is fenced the same way and attempt 3
	// completes it. Either way exactly one attempt's writes stay (above).
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file' AND state = 'completed' AND attempt >= 2`),
		"completed by a later attempt that owned it")
}
