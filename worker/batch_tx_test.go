package worker_test

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

// A batch's transaction runs on index plans (generic, no sequential scans),
// set with its BEGIN and gone after it: a trigger records the settings its
// writes ran under.
func TestResolveFileWorker_BatchTransactionRunsOnIndexPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		CREATE TABLE seen (plan_cache_mode text, enable_seqscan text, jit text);
		CREATE FUNCTION record_settings() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO seen VALUES (current_setting('plan_cache_mode'), current_setting('enable_seqscan'), current_setting('jit'));
			RETURN NULL;
		END $$;
		CREATE TRIGGER record_settings AFTER INSERT ON poi_references FOR EACH STATEMENT EXECUTE FUNCTION record_settings();`)
	require.NoError(t, err)

	client, err := worker.NewClient(db.Pool, db.Config(), testdb.Logger(t), nil)
	require.NoError(t, err)
	pub := outbox.New(client, nil, testdb.Logger(t))
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := pub.PublishTx(ctx, tx, outbox.Analysis{FileID: "src/s.js", POIs: []json.RawMessage{
			fn("s1", "s", "src/s.js", "function s() { t(); }"), fn("t1", "t", "src/s.js", "function t() {}")}})
		return err
	}))
	require.NoError(t, worker.RunUntilIdle(ctx, client, db.Pool, testdb.Logger(t), nil))

	var got [3]string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT plan_cache_mode, enable_seqscan, jit FROM seen`).Scan(&got[0], &got[1], &got[2]))
	require.Equal(t, [3]string{"force_generic_plan", "off", "off"}, got)

	var after string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&after))
	require.Equal(t, "auto", after, "the settings end with the batch's transaction")
}
