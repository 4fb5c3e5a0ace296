package link

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/resolver"
)

// A job that queued a row and, under the shared gate, saw the link job
// running (so inserted none) commits while that link job is finishing: the
// link job, waiting for the gate, must see the row and go on linking rather
// than complete. Its look at link_queue must read a snapshot taken after
// the gate was granted; with the look in the statement that waits for the
// gate, it reads the queue as it was before the row, completes, and the row
// is left with no link job.
func TestLinker_RowQueuedWhileTheLinkJobFinishesIsLinked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema})
	require.NoError(t, err)
	ctx = rivertest.WorkContext(ctx, client) // as a worker's context holds its client
	ins, err := client.Insert(ctx, Args{}, nil)
	require.NoError(t, err)
	// The link job as a worker holds it: running, its first attempt.
	_, err = db.Pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() WHERE id = $1`, ins.Job.ID)
	require.NoError(t, err)
	row := *ins.Job
	row.State, row.Attempt = rivertype.JobStateRunning, 1
	job := &river.Job[Args]{JobRow: &row}

	_, err = db.Pool.Exec(ctx, `INSERT INTO files (file_id) VALUES ('a.js')`)
	require.NoError(t, err)
	queuer, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = queuer.Rollback(ctx) }()
	b := &pgx.Batch{}
	Queue(b, Entry{JobID: 1, FileID: "a.js", FileVersion: new(int64(1)), Replace: true, PublishedAt: time.Now(),
		Changed: []string{"a"}, Refs: []Ref{{Source: "a1", Reference: resolver.Reference{Name: "b", Type: resolver.Calls}}}})
	require.NoError(t, queuer.SendBatch(ctx, b).Close())
	_, err = queuer.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, gateLock)
	require.NoError(t, err)

	w := NewWorker(db.Pool, Config{}, testdb.Logger(t), nil)
	type result struct {
		done bool
		err  error
	}
	finished := make(chan result, 1)
	go func() {
		done, err := w.finish(ctx, job, false)
		finished <- result{done, err}
	}()
	// The link job waits for the gate; then the queuer commits.
	require.Eventually(t, func() bool {
		return testdb.Count(t, db.Pool, `
			SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND mode = 'ExclusiveLock'
			  AND (classid::bigint << 32 | objid::bigint) = $1`, gateLock) > 0
	}, 30*time.Second, 5*time.Millisecond, "the link job never waited for the gate")
	require.NoError(t, queuer.Commit(ctx))

	res := <-finished
	require.NoError(t, res.err)
	require.False(t, res.done, "the link job completed with a row queued")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE id = $1 AND state = 'running'`, ins.Job.ID))

	require.NoError(t, LinkAll(ctx, db.Pool))
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM link_queue`))
	done, err := w.finish(ctx, job, false)
	require.NoError(t, err)
	require.True(t, done, "the link job did not complete with the queue empty")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE id = $1 AND state = 'completed'`, ins.Job.ID))
}
