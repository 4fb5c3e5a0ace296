package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// A batch whose transaction keeps failing exhausts River's attempts and is
// discarded; relay captures it into dead_lettered_items so River's cleaner
// cannot make it vanish.
func TestResolveFileWorker_ExhaustedBatchIsCapturedDurably(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	cfg := worker.ConfigFrom(db.Config())
	cfg.MaxAttempts = 1
	w, err := worker.New(db.Pool, cfg, testdb.Logger(t))
	require.NoError(t, err)
	pub := outbox.New(w.Client(), &outbox.Config{MaxAttempts: 1}, testdb.Logger(t))

	_, err = db.Pool.Exec(ctx, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'link_queue unwritable (injected by test)'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON link_queue FOR EACH ROW EXECUTE FUNCTION refuse();`)
	require.NoError(t, err)

	var jobID int64
	a := outbox.Analysis{FileID: "src/x.js", POIs: []json.RawMessage{
		fn("x1", "x", "src/x.js", "function x() { y(); }"), fn("y1", "y", "src/x.js", "function y() {}")}}
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		res, err := pub.PublishTx(ctx, tx, a)
		if err == nil {
			jobID = res.JobIDs[0]
		}
		return err
	}))

	require.NoError(t, w.RunUntilIdle(ctx, nil))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE id = $1 AND state = 'discarded'`, jobID))

	var (
		data    []byte
		count   int
		history []byte
		sig     string
	)
	require.NoError(t, db.Pool.QueryRow(ctx, `
		SELECT item_data, failure_count, failure_history, error_signature FROM dead_lettered_items
		WHERE job_id = 'resolve_file' AND item_id = $1`, fmt.Sprint(jobID)).Scan(&data, &count, &history, &sig))
	require.Equal(t, 1, count)
	var args outbox.ResolveFileArgs
	require.NoError(t, json.Unmarshal(data, &args))
	require.Equal(t, "src/x.js", args.FileID)
	require.Len(t, args.POIs, 2, "the whole batch is kept")
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT jsonb_array_length(item_data->'pois') FROM dead_lettered_items
		WHERE job_id = 'resolve_file' AND NOT item_data ? 'poisZstd'`), "item_data keeps the POIs readable, not compressed")
	require.Contains(t, string(history), "link_queue unwritable")
	require.Contains(t, sig, "link_queue unwritable")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'item_added'`))

	// Sweeping again captures nothing twice.
	require.NoError(t, w.RunUntilIdle(ctx, nil))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items`))
}

// fn is a JavaScript function POI.
func fn(id, name, file string, code string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "function_definition", "name": name,
		"filePath": file, "lineNumber": 1, "rawCode": code, "context": ""})
	return b
}
