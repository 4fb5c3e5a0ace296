package liveness_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/liveness"
	"github.com/relay-dev/relay/internal/testdb"
)

// A worker whose heartbeat is older than the timeout is gone: its running
// jobs go back to the queue with an error entry naming it (or are
// discarded when out of attempts), exactly once however often and by
// however many workers it is looked for; a live worker's jobs stay.
func TestLiveness_ReturnsGoneWorkersJobsExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO relay_workers (client_id, host, pid, heartbeat_at) VALUES
			('dead', 'node-a', 11, now() - interval '1 minute'),
			('alive', 'node-b', 22, now());
		INSERT INTO river_job (id, kind, args, queue, state, attempt, max_attempts, attempted_at, attempted_by, finalized_at) VALUES
			(1, 'resolve_file', '{}', 'resolve', 'running', 1, 10, now(), '{dead}', NULL),
			(2, 'resolve_file', '{}', 'resolve', 'running', 10, 10, now(), '{dead}', NULL),
			(3, 'resolve_file', '{}', 'resolve', 'running', 2, 10, now(), '{dead,alive}', NULL),
			(4, 'resolve_file', '{}', 'resolve', 'completed', 1, 10, now(), '{dead}', now())`)
	require.NoError(t, err)

	l := &liveness.Liveness{Pool: db.Pool, ClientID: "rescuer", Interval: time.Second, Timeout: 8 * time.Second, Logger: testdb.Logger(t)}
	type result struct {
		r   liveness.Rescued
		err error
	}
	results := make(chan result, 4)
	for range 4 { // four workers looking at once
		go func() {
			r, err := l.RescueGone(ctx)
			results <- result{r, err}
		}()
	}
	var total liveness.Rescued
	for range 4 {
		res := <-results
		require.NoError(t, res.err)
		total.Workers += res.r.Workers
		total.Jobs += res.r.Jobs
	}
	require.Equal(t, liveness.Rescued{Workers: 1, Jobs: 2}, total, "one worker gone, two of its jobs running, once")

	state := func(id int) string {
		var s string
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT state FROM river_job WHERE id = $1`, id).Scan(&s))
		return s
	}
	require.Equal(t, "available", state(1))
	require.Equal(t, "discarded", state(2), "out of attempts")
	require.Equal(t, "running", state(3), "its last attempt is the live worker's")
	require.Equal(t, "completed", state(4))
	var errs []json.RawMessage
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT errors FROM river_job WHERE id = 1`).Scan(&errs))
	require.Len(t, errs, 1)
	require.Contains(t, string(errs[0]), liveness.ReturnedMessage+" (worker dead, host node-a, pid 11)")

	workers, err := liveness.LiveWorkers(ctx, db.Pool, 8*time.Second)
	require.NoError(t, err)
	require.Len(t, workers, 1)
	require.Equal(t, "alive", workers[0].ClientID)
	require.Equal(t, 1, workers[0].BatchesRunning)
}

// Run announces the worker, keeps its heartbeat fresh, and says the lease
// is lost (so the worker stops) when its row was taken away.
func TestLiveness_RunRenewsAndLosesItsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	l := &liveness.Liveness{Pool: db.Pool, ClientID: "me", Interval: 20 * time.Millisecond, Timeout: time.Second, Logger: testdb.Logger(t)}
	require.NoError(t, l.Announce(ctx))
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	require.Eventually(t, func() bool {
		return testdb.Count(t, db.Pool, `SELECT count(*) FROM relay_workers WHERE client_id = 'me' AND heartbeat_at > started_at`) == 1
	}, 10*time.Second, 10*time.Millisecond, "the heartbeat is renewed")

	_, err := db.Pool.Exec(ctx, `DELETE FROM relay_workers WHERE client_id = 'me'`) // declared gone by another worker
	require.NoError(t, err)
	select {
	case err := <-done:
		require.ErrorIs(t, err, liveness.ErrLeaseLost)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not notice its row was gone")
	}
}

// A worker keeps its lease while its pool cannot give the heartbeat a
// connection: every pooled connection busy, or none to be had because the
// server refuses new ones (max_connections reached by other clients).
// Run renews the heartbeat over a connection of its own, so that other
// workers do not declare a live worker gone and return its jobs.
func TestLiveness_RunRenewsItsHeartbeatWhileThePoolIsExhausted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	pool, err := database.Open(ctx, db.URL, database.Options{Role: "test", Schema: db.Schema, MaxConns: 2})
	require.NoError(t, err)
	l := &liveness.Liveness{Pool: pool, ClientID: "me", Interval: 50 * time.Millisecond, Timeout: 2 * time.Second, Logger: testdb.Logger(t)}
	require.NoError(t, l.Announce(ctx))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(runCtx) }()
	var held []*pgxpool.Conn
	t.Cleanup(func() { // also when the test fails: Run and pool.Close wait for the connections
		for _, c := range held {
			c.Release()
		}
		stop()
		<-done
		pool.Close()
	})
	require.Eventually(t, func() bool {
		return testdb.Count(t, db.Pool, `SELECT count(*) FROM relay_workers WHERE client_id = 'me' AND heartbeat_at > started_at`) == 1
	}, 10*time.Second, 10*time.Millisecond, "the heartbeat is renewed")

	// Take every connection the pool can give (the batches, in a worker):
	// until an Acquire waits a second in vain, with none left to open.
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := pool.Acquire(actx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			break
		}
		held = append(held, c)
	}
	require.Equal(t, pool.Stat().MaxConns(), pool.Stat().TotalConns(), "the pool is exhausted")
	var exhausted time.Time
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&exhausted))
	require.Eventually(t, func() bool {
		return testdb.Count(t, db.Pool, `SELECT count(*) FROM relay_workers WHERE client_id = 'me' AND heartbeat_at > $1`, exhausted) == 1
	}, 10*time.Second, 10*time.Millisecond, "the heartbeat is renewed while the pool has no connection to give")
	select {
	case err := <-done:
		t.Fatalf("Run returned while the pool was exhausted: %v", err)
	default:
	}

	stop()
	require.NoError(t, <-done)
	done <- nil // for the cleanup
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM relay_workers WHERE client_id = 'me'`), "Run removes its row when it stops")
}
