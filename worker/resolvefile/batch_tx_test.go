package resolvefile_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// The linker keeps no state in its connection's session, so that it works
// through a transaction-pooling connection pooler: its application_name is
// the pool's, its index-plan settings are its transaction's own and end
// with it. A trigger records what its writes of references ran under.
func TestLinker_KeepsNoSessionState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		CREATE TABLE seen (plan_cache_mode text, application_name text);
		CREATE FUNCTION record_settings() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO seen VALUES (current_setting('plan_cache_mode'), current_setting('application_name'));
			RETURN NULL;
		END $$;
		CREATE TRIGGER record_settings AFTER INSERT ON poi_references FOR EACH STATEMENT EXECUTE FUNCTION record_settings();`)
	require.NoError(t, err)

	w, err := worker.New(db.Pool, worker.ConfigFrom(db.Config()), testdb.Logger(t))
	require.NoError(t, err)
	pub := outbox.New(w.Client(), nil, testdb.Logger(t))
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := pub.PublishTx(ctx, tx, outbox.Analysis{FileID: "src/s.js", POIs: []json.RawMessage{
			fn("s1", "s", "src/s.js", "function s() { t(); }"), fn("t1", "t", "src/s.js", "function t() {}")}})
		return err
	}))
	require.NoError(t, w.RunUntilIdle(ctx, nil))

	var planCacheMode, appName, poolAppName string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT plan_cache_mode, application_name FROM seen`).
		Scan(&planCacheMode, &appName))
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT current_setting('application_name')`).Scan(&poolAppName))
	require.Equal(t, "force_generic_plan", planCacheMode, "the batch runs on index plans")
	var after string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&after))
	require.Equal(t, "auto", after, "the planner settings end with the batch's transaction")
	require.Equal(t, poolAppName, appName, "application_name unchanged")

}

// A batch whose references a reprocess stored since the publish takes them
// over in its first attempt, on a pool as in the unit test of a test
// transaction's savepoint.
func TestResolveFileWorker_ReferencesStoredByAReprocessAreTakenOverOnAPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	w, err := worker.New(db.Pool, worker.ConfigFrom(db.Config()), testdb.Logger(t))
	require.NoError(t, err)
	pub := outbox.New(w.Client(), nil, testdb.Logger(t))
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := pub.PublishTx(ctx, tx, outbox.Analysis{FileID: "src/m.js", POIs: []json.RawMessage{
			fn("m1", "one", "src/m.js", "function one() { return two() + three(); }"),
			fn("m2", "two", "src/m.js", "function two() { return 2; }"),
			json.RawMessage(`{"id": "bad", "name": 7}`)}}); err != nil {
			return err
		}
		// What a reprocess of m1 would have written meanwhile.
		_, err := tx.Exec(ctx, `INSERT INTO poi_references (source_poi_id, source_file_id, name, key, type)
			VALUES ('m1', 'src/m.js', 'two', 'two', 'CALLS')`)
		return err
	}))
	require.NoError(t, w.RunUntilIdle(ctx, nil))

	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'm1' AND target_poi_id = 'm2'`))
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM poi_references WHERE source_poi_id = 'm1'`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`), "the failed POI written once")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file' AND state = 'completed' AND attempt = 1`),
		"completed by its first attempt")
}
