package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/outbox"
)

// SweepDiscardedArgs is the periodic job that captures discarded
// resolve_file batches, and what the worker's extensions' discarded jobs
// left (MapReduce items), into dead_lettered_items before River's cleaner
// deletes them; it also folds the dead-letter counts.
type SweepDiscardedArgs struct{}

// Kind is the River job kind.
func (SweepDiscardedArgs) Kind() string { return "sweep_discarded" }

// InsertOpts keeps one sweep queued at a time.
func (SweepDiscardedArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, UniqueOpts: river.UniqueOpts{ByArgs: true}, MaxAttempts: 3}
}

// sweepDiscardedWorker works SweepDiscardedArgs.
type sweepDiscardedWorker struct {
	river.WorkerDefaults[SweepDiscardedArgs]
	pool       *pgxpool.Pool
	logger     *slog.Logger
	extensions []Extension
}

// Work captures every discarded resolve_file job, and every extension's
// discarded jobs, not captured yet.
func (w *sweepDiscardedWorker) Work(ctx context.Context, _ *river.Job[SweepDiscardedArgs]) error {
	return sweepDiscarded(ctx, w.pool, w.logger, w.extensions)
}

func sweepDiscarded(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, extensions []Extension) error {
	n, err := items.CaptureDiscarded(ctx, pool, outbox.KindResolveFile, outbox.ExpandArgs)
	if err != nil {
		err = fmt.Errorf("error sweeping discarded batches: %w", err)
	}
	if n > 0 {
		logger.WarnContext(ctx, "captured discarded resolve_file batches into dead_lettered_items",
			slog.Int("count", n), slog.String("inspect", "relay dlq list --job-id resolve_file"))
	}
	folded, cerr := deadletter.CompactCounts(ctx, pool)
	if cerr == nil && folded > 0 {
		logger.DebugContext(ctx, "compacted the dead-letter counts", slog.Int64("rows", folded))
	}
	errs := []error{err, cerr}
	for _, ext := range extensions {
		errs = append(errs, ext.Sweep(ctx, pool, logger))
	}
	return errors.Join(errs...)
}
