package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/outbox"
)

// RunSummary counts the resolve_file batches one River client finished.
type RunSummary struct {
	// Completed counts batches the client completed.
	Completed int64
	// Discarded counts batches River discarded after the client's attempt
	// (their last), which the sweep copies into dead_lettered_items.
	Discarded int64
}

// DatabaseNow reads the database's clock, the time to pass to SummarizeRun
// for a client about to start: comparing with finalized_at needs the clock
// River writes it with.
func DatabaseNow(ctx context.Context, pool *pgxpool.Pool) (time.Time, error) {
	var now time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return now, fmt.Errorf("error reading the database's clock: %w", err)
	}
	return now, nil
}

// SummarizeRun counts the resolve_file batches finalized since since (the
// database's clock, before the client started) whose last attempt was
// clientID's: River records the client of each attempt in attempted_by, so
// batches other workers finished, and those of earlier runs, are not counted.
func SummarizeRun(ctx context.Context, pool *pgxpool.Pool, clientID string, since time.Time) (RunSummary, error) {
	var s RunSummary
	err := pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE state = 'completed'),
		       count(*) FILTER (WHERE state = 'discarded')
		FROM river_job
		WHERE state IN ('completed', 'discarded') AND finalized_at >= $1
		  AND queue = $2 AND attempted_by[cardinality(attempted_by)] = $3`,
		since, outbox.QueueResolve, clientID).Scan(&s.Completed, &s.Discarded)
	if err != nil {
		return s, fmt.Errorf("error counting the batches this worker finished: %w", err)
	}
	return s, nil
}
