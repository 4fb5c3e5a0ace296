package resolvefile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/internal/workerconfig"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// A changer must see the references of a batch that read the symbol table
// before its publish committed: it waits for every batch holding a stamp
// lock whose stamp is at or below the publish's transaction id. The test
// plays such a batch by hand (stamp 1: it read before anything), publishes
// the name it refers to, lets the changer's job run into the barrier, and
// commits the reference only then: the changer must resolve it. Without the
// barrier the job finishes first, and the test fails. A batch whose stamp
// is above the publish read a symbol table that held it: the changer does
// not wait for it.
func TestResolveFileWorker_ChangerWaitsForBatchesThatReadBeforeThePublish(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stamp int64
		wait  bool
	}{
		{"read before the publish", 1, true},
		{"read after the publish", 1<<62 - 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testdb.New(t)
			client, err := worker.NewClient(db.Pool, workerconfig.From(db.Config()), testdb.Logger(t), &worker.Options{Queues: []string{outbox.QueueResolve}})
			require.NoError(t, err)
			e := &e2e{db: db, pub: outbox.New(client, nil, testdb.Logger(t)), client: client}
			e.publish(t, outbox.Analysis{FileID: "src/r.js", POIs: pois(fn("r.r", "r", "src/r.js", "function r() {}"))})
			e.start(t)
			waitDrained(t, db.Pool)

			referrer, err := db.Pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = referrer.Rollback(ctx) }()
			key := resolvefile.StampLockBase + tc.stamp
			_, err = referrer.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, key)
			require.NoError(t, err)
			_, err = referrer.Exec(ctx, `INSERT INTO poi_references (source_poi_id, source_file_id, name, key, type) VALUES ('r.r', 'src/r.js', 'late', 'late', 'CALLS')`)
			require.NoError(t, err)

			e.publish(t, outbox.Analysis{FileID: "src/d.js", POIs: pois(fn("d.l", "late", "src/d.js", "function late() {}"))})
			// Wait (with a deadline) until the changer's job waits for the
			// referrer's stamp lock, or has finished.
			var waited bool
			require.Eventually(t, func() bool {
				var done bool
				if err := db.Pool.QueryRow(ctx, `SELECT
					EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
						AND (classid::bigint << 32 | objid::bigint) = $1 AND objsubid = 1),
					EXISTS (SELECT 1 FROM river_job WHERE args->>'fileId' = 'src/d.js' AND state = 'completed')`,
					key).Scan(&waited, &done); err != nil {
					t.Logf("polling: %v", err)
					return false
				}
				return waited || done
			}, 30*time.Second, 10*time.Millisecond, "the changer's job neither waited nor finished")
			require.Equal(t, tc.wait, waited)
			require.NoError(t, referrer.Commit(ctx))
			waitDrained(t, db.Pool)
			if tc.wait {
				require.Contains(t, relationships(t, db.Pool), "r.r CALLS d.l",
					"the changer did not wait for the batch that read before its publish, and missed its reference")
			}
		})
	}
}
