package repositories_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/repositories"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// A SQL publish of a repository commits before the repository's delete
// starts, and is deleted, or after the delete commits, and stays: never
// between the delete's removal of the queued analyses and its commit, where
// the drain would recreate the deleted repository.
//
// Forced: the delete is stalled after it removed the queued analyses (a
// worker's share lock on a file of the repository holds it at the files'
// rows); relay_publish of a new file of the repository runs meanwhile.
// Whichever of the two commits last decides whether the file exists.
func TestDelete_APublishCommitsBeforeTheDeleteOrAfterIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "gone", "old.go", fn("g1", "old.go", ""))

	worker, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = worker.Rollback(ctx) }()
	_, err = worker.Exec(ctx, `SELECT 1 FROM files WHERE repository = 'gone' FOR SHARE`)
	require.NoError(t, err)

	deleted := make(chan error, 1)
	go func() {
		_, err := b.store.Delete(ctx, "gone", repositories.Options{Actor: "test"})
		deleted <- err
	}()
	testdb.WaitBlockedBy(t, b.db.Pool, worker.Conn().PgConn().PID())

	published := make(chan error, 1)
	go func() {
		published <- pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT relay_publish($1::jsonb)`,
				`{"repository":"gone","fileId":"new.go","pois":[{"id":"g2","type":"function_definition","name":"g2","lineNumber":1,"filePath":"new.go"}]}`)
			return err
		})
	}()
	// The publish either commits (before the delete) or waits for it.
	publishFirst := false
	deadline := time.Now().Add(time.Minute)
	for !publishFirst {
		select {
		case err := <-published:
			require.NoError(t, err)
			publishFirst = true
			continue
		default:
		}
		if b.count(t, `SELECT count(*) FROM pg_stat_activity a WHERE wait_event_type = 'Lock' AND query LIKE '%relay_publish%'`) > 0 {
			break
		}
		require.False(t, time.Now().After(deadline), "the publish neither committed nor waited within a minute")
		time.Sleep(2 * time.Millisecond) // polling a condition, not ordering a race
	}
	require.NoError(t, worker.Rollback(ctx))
	require.NoError(t, <-deleted)
	if !publishFirst {
		require.NoError(t, <-published)
	}
	d := outbox.NewDrainer(b.db.Pool, b.pub, outbox.DrainConfig{}, testdb.Logger(t))
	for {
		res, err := d.Drain(ctx)
		require.NoError(t, err)
		if res.Published+res.Rejected == 0 {
			break
		}
	}

	want := 1 // the publish committed after the delete
	if publishFirst {
		want = 0
	}
	require.Equal(t, want, b.count(t, `SELECT count(*) FROM files WHERE repository = 'gone'`), "the publish committed first: %v", publishFirst)
	require.Zero(t, b.count(t, `SELECT count(*) FROM files WHERE repository = 'gone' AND file_id = 'old.go'`))
	require.False(t, publishFirst, "a publish of the repository committed while its delete was under way")
}

// A file created again after its repository was deleted starts again at
// version 1; a job of the deleted file, still queued, must not be applied
// to the new one as if it were its publish (found by relay-torture, seed
// 85).
func TestDelete_AJobOfADeletedFileIsNotAppliedToItsSuccessor(t *testing.T) {
	t.Parallel()
	b := setup(t) // not started: the first job stays queued through the delete
	ctx := context.Background()
	b.publish(t, "", "s.go", fn("s1", "s.go", "m/S"))
	b.publish(t, "gone", "c.go", fn("p2", "c.go", "", "m/S"))
	_, err := b.store.Delete(ctx, "gone", repositories.Options{Actor: "test"})
	require.NoError(t, err)
	b.publish(t, "gone", "c.go", fn("p2", "c.go", ""))
	require.Equal(t, 1, b.count(t, `SELECT version FROM files WHERE repository = 'gone' AND file_id = 'c.go'`))

	b.start(t)
	b.drain(t)
	require.Zero(t, b.count(t, `SELECT count(*) FROM poi_references WHERE repository = 'gone'`),
		"the deleted file's job wrote its references to the new file")
}
