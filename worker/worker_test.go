package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// The indexes River's reindexer is told to rebuild all exist after relay's
// migrations (River would warn on every run otherwise), and the args index
// migration 00007 drops is not among them.
func TestReindexerIndexNames_ExistAfterMigrationWithoutTheArgsIndex(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	names := worker.ReindexerIndexNames()
	require.NotContains(t, names, "river_job_args_index")
	require.NotEmpty(t, names)
	var existing []string
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		`SELECT coalesce(array_agg(indexname::text), '{}') FROM pg_indexes WHERE schemaname = $1 AND tablename = 'river_job'`,
		db.Schema).Scan(&existing))
	require.NotContains(t, existing, "river_job_args_index")
	require.Subset(t, existing, names)
}

// A worker that would work a queue with a setting it cannot run with is
// refused, and the error names the worker.Config field.
func TestNew_RefusesAWorkedQueueWithoutItsSetting(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	idle := idleExtension{queue: "idle_ext"}
	for _, tc := range []struct {
		queue, field string
	}{
		{outbox.QueueResolve, "Concurrency"},
		{"idle_ext", "Extensions"},
		{worker.QueueMaintenance, "SweepInterval"},
	} {
		_, err := worker.New(nil, &worker.Config{Queues: []string{tc.queue}, Extensions: []worker.Extension{idle}}, log)
		require.ErrorContains(t, err, "invalid worker.Config."+tc.field, tc.queue)
	}
	_, err := worker.New(testdb.New(t).Pool, &worker.Config{Concurrency: 1, Queues: []string{outbox.QueueResolve},
		Extensions: []worker.Extension{idle}}, log)
	require.NoError(t, err, "a queue not worked needs none of the others' settings")
	_, err = worker.New(nil, &worker.Config{Concurrency: 1, SweepInterval: 1, Extensions: []worker.Extension{
		idleExtension{queue: outbox.QueueResolve, workers: 1}}}, log)
	require.ErrorContains(t, err, fmt.Sprintf("queue %q is worked twice", outbox.QueueResolve))
}

// idleExtension is an Extension with one queue and no workers.
type idleExtension struct {
	queue   string
	workers int
}

func (e idleExtension) Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{e.queue: {MaxWorkers: e.workers}}
}
func (idleExtension) AddWorkers(*river.Workers, *pgxpool.Pool, *slog.Logger) {}
func (idleExtension) Sweep(context.Context, *pgxpool.Pool, *slog.Logger) error {
	return nil
}

// With a River pool (relay worker's, with synchronous_commit off), River's
// own statements run on it, and everything relay writes, the job's
// completion included, runs on the worker's pool, with the server's
// synchronous_commit: triggers record the setting each write ran under.
func TestNew_RiverStatementsRunOnTheRiverPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		CREATE TABLE seen_sync (what text, setting text);
		CREATE FUNCTION record_sync() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO seen_sync VALUES (TG_ARGV[0], current_setting('synchronous_commit'));
			RETURN NULL;
		END $$;
		CREATE TRIGGER record_sync AFTER INSERT ON poi_references FOR EACH STATEMENT EXECUTE FUNCTION record_sync('references');
		CREATE TRIGGER record_sync AFTER INSERT ON failed_pois FOR EACH STATEMENT EXECUTE FUNCTION record_sync('failed_pois');
		CREATE TRIGGER record_fetch AFTER UPDATE ON river_job FOR EACH ROW WHEN (NEW.state = 'running')
			EXECUTE FUNCTION record_sync('fetch');
		CREATE TRIGGER record_complete AFTER UPDATE ON river_job FOR EACH ROW WHEN (NEW.state = 'completed')
			EXECUTE FUNCTION record_sync('completion');`)
	require.NoError(t, err)

	cfg := db.Config()
	cfg.DatabaseSchema = db.Schema
	riverPool, err := database.Open(ctx, db.URL, database.RiverOptionsFromConfig(cfg, "test"))
	require.NoError(t, err)
	defer riverPool.Close()
	wcfg := worker.ConfigFrom(cfg)
	wcfg.RiverPool, wcfg.Queues = riverPool, []string{outbox.QueueResolve}
	w, err := worker.New(db.Pool, wcfg, testdb.Logger(t))
	require.NoError(t, err)
	pub := outbox.New(w.Client(), nil, testdb.Logger(t))
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := pub.PublishTx(ctx, tx, outbox.Analysis{FileID: "src/s.js", POIs: []json.RawMessage{
			fn("s1", "s", "src/s.js", "function s() { t(); }"), fn("t1", "t", "src/s.js", "function t() {}"),
			json.RawMessage(`{"id": "bad", "name": 7}`)}})
		return err
	}))
	require.NoError(t, w.RunUntilIdle(ctx, nil))

	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT what || ' ' || setting FROM seen_sync ORDER BY 1`)
	require.NoError(t, err)
	seen, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"completion on", "failed_pois on", "fetch off", "references on"}, seen)
}

// A Worker reports itself running from the end of Start until its client
// has stopped; Running is read from the progress callback, which runs on
// another goroutine than River's own, with the race detector watching.
func TestWorker_RunningWhileTheClientWorks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	wcfg := worker.ConfigFrom(db.Config())
	wcfg.Queues = []string{outbox.QueueResolve}
	w, err := worker.New(db.Pool, wcfg, testdb.Logger(t))
	require.NoError(t, err)

	require.False(t, w.Running(), "before Start")
	seen := make(chan bool, 16)
	require.NoError(t, w.RunUntilIdle(ctx, func(worker.Progress) {
		select {
		case seen <- w.Running():
		default:
		}
	}))
	close(seen)
	var reads int
	for running := range seen {
		reads++
		require.True(t, running, "while the client works")
	}
	require.Positive(t, reads)
	require.False(t, w.Running(), "after the client stopped")
}
