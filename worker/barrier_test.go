package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// A changer must see the references of a batch that holds a name it
// changed: the batch may have read the symbol table before the publish. The
// test plays that batch by hand (a transaction holding the name's shared
// lock and storing a reference to it), publishes the name, lets the
// changer's job run into the barrier, and commits the reference only then:
// the changer must resolve it. Without the barrier the job finishes first
// and the edge is never written.
func TestResolveFileWorker_ChangerWaitsForBatchesHoldingTheName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	client, err := worker.NewClient(db.Pool, db.Config(), testdb.Logger(t), &worker.Options{Queues: []string{outbox.QueueResolve}})
	require.NoError(t, err)
	e := &e2e{db: db, pub: outbox.New(client, nil, testdb.Logger(t)), client: client}
	e.publish(t, outbox.Analysis{FileID: "src/r.js", POIs: pois(fn("r.r", "r", "src/r.js", "function r() {}"))})
	e.start(t)
	waitDrained(t, client, db.Pool)

	referrer, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = referrer.Rollback(ctx) }()
	key := worker.NameKey("late")
	_, err = referrer.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, key)
	require.NoError(t, err)
	_, err = referrer.Exec(ctx, `INSERT INTO poi_references (source_poi_id, source_file_id, name, type) VALUES ('r.r', 'src/r.js', 'late', 'CALLS')`)
	require.NoError(t, err)

	e.publish(t, outbox.Analysis{FileID: "src/d.js", POIs: pois(fn("d.l", "late", "src/d.js", "function late() {}"))})
	// Wait (with a deadline) until the changer's job waits for an advisory
	// lock, or has finished (the failure this test is for).
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting, done bool
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
				AND classid::text::bigint = $1 AND objid::text::bigint = $2 AND objsubid = 1),
			EXISTS (SELECT 1 FROM river_job WHERE args->>'fileId' = 'src/d.js' AND state = 'completed')`,
			int64(uint32(key>>32)), int64(uint32(key))).Scan(&waiting, &done))
		if waiting || done {
			break
		}
		require.True(t, time.Now().Before(deadline), "the changer's job neither waited nor finished")
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.NoError(t, referrer.Commit(ctx))
	waitDrained(t, client, db.Pool)
	require.Contains(t, relationships(t, db.Pool), "r.r CALLS d.l",
		"the changer did not wait for the batch holding the name, and missed its reference")
}
