package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker/link"
)

// IdleGrace is how far ahead RunUntilIdle and WaitIdle look for retries: a
// job due to be retried within it still counts as work.
const IdleGrace = 10 * time.Second

// poiQueues are the queues of relay's POI work: resolve_file batches and the
// link rounds they feed.
var poiQueues = []string{outbox.QueueResolve, link.QueueLink}

// WaitIdle waits, while workers work them (in this process or others),
// until no analysis is queued by the SQL publish API and the resolve and
// link queues have no job available or running and none due within
// IdleGrace, reporting the queues' state to progress (may be nil) as it
// goes. It reads the queues every 250ms, and every 10ms once at most
// nearlyIdle jobs are pending, so that it returns within milliseconds of
// the last job finishing (relay-bench times runs with it; River's
// completion events come in batches, up to a few hundred milliseconds
// late). It reads them over one connection of pool that it holds until it
// returns, so that a pool with no connection to give (every one busy with
// a batch, and the server refusing new ones) neither ends the wait with an
// error nor stalls it (TestWaitIdle_ReadsTheQueuesWhileThePoolCannotConnect).
func WaitIdle(ctx context.Context, pool *pgxpool.Pool, progress func(Progress)) error {
	return waitIdle(ctx, pool, progress, poiQueues, true)
}

// waitIdle is WaitIdle over the jobs of queues, counting queued analyses
// as work only if queued.
func waitIdle(ctx context.Context, pool *pgxpool.Pool, progress func(Progress), queues []string, queued bool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error taking a connection to read the queues: %w", err)
	}
	defer conn.Release()
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait.C:
		}
		p, err := readProgress(ctx, conn, queues)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(p)
		}
		pending := p.Pending + p.Other
		if queued {
			pending += p.Queued
		}
		if pending == 0 {
			return nil
		}
		if pending <= nearlyIdle {
			wait.Reset(10 * time.Millisecond)
		} else {
			wait.Reset(250 * time.Millisecond)
		}
	}
}

// nearlyIdle is the pending job count below which WaitIdle reads the
// queues every 10ms.
const nearlyIdle = 32

// Progress is the state of the queues a wait watches.
type Progress struct {
	// Queued counts analyses queued by the SQL publish API, not yet
	// published.
	Queued int64
	// Pending counts resolve_file and link jobs available, running, or due
	// within IdleGrace: none left means the relationships are final.
	Pending int64
	// Completed and Discarded count resolve_file jobs finished and still
	// in River's table.
	Completed int64
	Discarded int64
	// Other counts the jobs of the other queues waited for (a Worker's
	// extensions') available, running or due within IdleGrace.
	Other int64
}

// readProgress reads the POI queues' state and the pending jobs of the
// other queues among queues through q.
func readProgress(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, queues []string) (Progress, error) {
	var p Progress
	err := q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE waited AND queue = ANY($3)),
		       count(*) FILTER (WHERE waited AND queue <> ALL($3)),
		       count(*) FILTER (WHERE queue = $4 AND state = 'completed'),
		       count(*) FILTER (WHERE queue = $4 AND state = 'discarded'),
		       -- In the same snapshot as the jobs: a drain deletes queued
		       -- rows and inserts their jobs in one transaction.
		       (SELECT count(*) FROM publish_queue)
		FROM (SELECT queue, state, queue = ANY($1) AND (state IN ('available', 'running')
		             OR (state IN ('retryable', 'scheduled') AND scheduled_at < now() + make_interval(secs => $2))) AS waited
		      FROM river_job WHERE queue = ANY($1) OR queue = $4) jobs`,
		queues, IdleGrace.Seconds(), poiQueues, outbox.QueueResolve).Scan(
		&p.Pending, &p.Other, &p.Completed, &p.Discarded, &p.Queued)
	if err != nil {
		return p, fmt.Errorf("error reading queue progress: %w", err)
	}
	return p, nil
}
