package mapreduce

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
)

// RunUntilDone starts client and works until no item of jobID has a
// River job left to run (every item succeeded, was dead-lettered, or needs a
// resume), however long the backoffs; then it stops the client, captures
// items whose DLQ write failed (a failing capture is logged, not returned:
// the periodic sweep retries it) and returns the final counts. progress,
// if not nil, is called with the counts whenever they change. If ctx ends
// first the client stops gracefully and ctx's error is returned.
func RunUntilDone(ctx context.Context, client *river.Client[pgx.Tx], pool *pgxpool.Pool, logger *slog.Logger,
	jobID string, progress func(*Counts)) (*Counts, error) {
	store := NewStore(pool)
	events, cancelSub := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed,
		river.EventKindJobCancelled, river.EventKindJobSnoozed)
	defer cancelSub()
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("error starting River client: %w", err)
	}
	stop := func() error { return client.Stop(context.WithoutCancel(ctx)) }
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last Counts
	for {
		select {
		case <-ctx.Done():
			_ = stop()
			return nil, ctx.Err()
		case <-events:
			continue // counts are read on the tick; events keep the loop awake
		case <-tick.C:
		}
		c, err := store.Counts(ctx, jobID)
		if err != nil {
			_ = stop()
			return nil, err
		}
		if progress != nil && *c != last {
			progress(c)
		}
		last = *c
		if c.Live() == 0 {
			break
		}
	}
	if err := stop(); err != nil {
		return nil, fmt.Errorf("error stopping River client: %w", err)
	}
	if err := Sweep(ctx, pool, logger); err != nil {
		logger.WarnContext(ctx, "items whose dead-letter write failed stay in River's table until a later sweep",
			slog.String("error", err.Error()))
	}
	return store.Counts(ctx, jobID)
}
