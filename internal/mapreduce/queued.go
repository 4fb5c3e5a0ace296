package mapreduce

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// HasQueuedItems reports whether the queue relay worker works MapReduce
// items from (Queue) holds an item to run: available, running, or waiting
// for a retry.
func HasQueuedItems(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var queued bool
	err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job
		WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending') AND queue = $1)`, Queue).Scan(&queued)
	if err != nil {
		return false, fmt.Errorf("error looking for queued MapReduce items: %w", err)
	}
	return queued, nil
}
