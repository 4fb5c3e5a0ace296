package worker_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/worker"
)

// WaitIdle (relay worker --until-idle) keeps reading the queues while the
// pool cannot open a connection, as when the server refuses new ones
// (max_connections reached by other clients) and every pooled one is busy
// with a batch: it reads them over a connection it holds, and returns once
// the work is done rather than with the pool's error.
func TestWaitIdle_ReadsTheQueuesWhileThePoolCannotConnect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	var jobID int64
	require.NoError(t, db.Pool.QueryRow(ctx, `
		INSERT INTO river_job (kind, args, queue, state, max_attempts) VALUES ('resolve_file', '{}', 'resolve', 'available', 10)
		RETURNING id`).Scan(&jobID))

	var refuse atomic.Bool // the server refuses new connections
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = db.Schema
	cfg.MaxConns = 4
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if refuse.Load() {
			return nil, errors.New("FATAL: sorry, too many clients already (SQLSTATE 53300)")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()

	var reads atomic.Int64
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- worker.WaitIdle(waitCtx, pool, func(worker.Progress) { reads.Add(1) })
	}()
	require.Eventually(t, func() bool { return reads.Load() > 0 }, 10*time.Second, 5*time.Millisecond, "WaitIdle reads the queues")

	refuse.Store(true)
	pool.Reset() // its idle connections are closed: a new one would have to be opened
	after := reads.Load()
	deadline := time.After(10 * time.Second)
	for reads.Load() < after+3 {
		select {
		case err := <-done:
			t.Fatalf("WaitIdle returned with a job pending: %v", err)
		case <-deadline:
			t.Fatal("WaitIdle did not read the queues while no connection could be opened")
		case <-time.After(5 * time.Millisecond):
		}
	}

	_, err = db.Pool.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, jobID)
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("WaitIdle did not return once the queues were idle")
	}
}
