package failed

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// CompactCounts folds failed_pois_counts, the per-status and per-class
// deltas the triggers on failed_pois append (one row per group and writing
// statement), into one row per group, and returns how many rows it folded.
// It runs in one statement: readers see the deltas or their sums, never a
// mix, and deltas committed meanwhile stay for the next run. The worker's
// periodic sweep calls it, so Stats sums a handful of rows.
func CompactCounts(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var folded int64
	err := pool.QueryRow(ctx, `
		WITH gone AS (DELETE FROM failed_pois_counts RETURNING status, error_class, n),
		kept AS (
			INSERT INTO failed_pois_counts (status, error_class, n)
			SELECT status, error_class, sum(n) FROM gone GROUP BY status, error_class HAVING sum(n) <> 0)
		SELECT count(*) FROM gone`).Scan(&folded)
	if err != nil {
		return 0, fmt.Errorf("error compacting failed_pois_counts: %w", err)
	}
	return folded, nil
}
