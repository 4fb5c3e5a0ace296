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
	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/outbox"
)

// SweepDiscardedArgs is the periodic job that captures discarded
// resolve_file batches and MapReduce items into dead_lettered_items before
// River's cleaner deletes them.
type SweepDiscardedArgs struct{}

// Kind is the River job kind.
func (SweepDiscardedArgs) Kind() string { return "sweep_discarded" }

// InsertOpts keeps one sweep queued at a time.
func (SweepDiscardedArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, UniqueOpts: river.UniqueOpts{ByArgs: true}, MaxAttempts: 3}
}

// SweepDiscardedWorker works SweepDiscardedArgs.
type SweepDiscardedWorker struct {
	river.WorkerDefaults[SweepDiscardedArgs]
	pool   *pgxpool.Pool
	logger *slog.Logger
}

// Work captures every discarded resolve_file job and MapReduce item not
// captured yet.
func (w *SweepDiscardedWorker) Work(ctx context.Context, _ *river.Job[SweepDiscardedArgs]) error {
	return sweepDiscarded(ctx, w.pool, w.logger)
}

func sweepDiscarded(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
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
	return errors.Join(err, cerr, mapreduce.Sweep(ctx, pool, logger))
}
