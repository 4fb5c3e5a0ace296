package mapreduce

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Runner is a worker that RunUntilDone starts and stops (a *worker.Worker
// carrying the job's Agents).
type Runner interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// RunUntilDone starts w and works until no item of jobID has a River job
// left to run (every item succeeded, was dead-lettered, or needs a resume),
// however long the backoffs; then it stops w, captures
// items whose DLQ write failed (a failing capture is logged, not returned:
// the periodic sweep retries it) and returns the final counts. progress,
// if not nil, is called with the counts whenever they change. If ctx ends
// first w stops gracefully and ctx's error is returned.
func RunUntilDone(ctx context.Context, w Runner, pool *pgxpool.Pool, logger *slog.Logger,
	jobID string, progress func(*Counts)) (*Counts, error) {
	store := NewStore(pool)
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	stop := func() error { return w.Stop(context.WithoutCancel(ctx)) }
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last Counts
	for {
		select {
		case <-ctx.Done():
			_ = stop()
			return nil, ctx.Err()
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
		return nil, err
	}
	if err := Sweep(ctx, pool, logger); err != nil {
		logger.WarnContext(ctx, "items whose dead-letter write failed stay in River's table until a later sweep",
			slog.String("error", err.Error()))
	}
	return store.Counts(ctx, jobID)
}
