package deadletter

import (
	"context"
	"fmt"
	"os/user"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// WorkerActor is the actor of events the worker writes.
const WorkerActor = "relay-worker"

// DefaultActor is the name of the operating-system user running relay, for
// audit events ("unknown" when it cannot be found).
func DefaultActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

// StorableText makes error text storable in a text column: invalid UTF-8 and NUL
// characters (which PostgreSQL rejects) become U+FFFD. Only error messages
// pass through here; POI and item data are never altered.
func StorableText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// HourCount is how many dead letters one hour (UTC) saw: failed POIs, or
// items that last failed within it.
type HourCount struct {
	Hour  time.Time `json:"hour"`
	Count int64     `json:"count"`
}

// exportPage is how many rows an export reads per query.
const exportPage = 2000

// ExportPageSize is how many rows the next page of an export with limit (0:
// none) reads after n rows: 0 when the export is done.
func ExportPageSize(limit, n int64) int64 {
	if limit > 0 {
		return max(min(exportPage, limit-n), 0)
	}
	return exportPage
}

// CompactCounts folds the delta rows of failed_pois_counts (per repository,
// status and error class), failed_pois_signature_counts (per signature, class and
// status), failed_pois_hourly_counts (per hour and status) and
// dead_lettered_items_counts (per job), which statement triggers append on
// every write to failed_pois and dead_lettered_items, into one row per
// group, and returns how many rows it folded. Each table is folded in one
// statement: readers see the deltas or their sums, never a mix, and deltas
// committed meanwhile stay for the next run. The worker's periodic sweep
// calls it, so counting sums a handful of rows.
func CompactCounts(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var total int64
	for _, c := range []struct{ table, groups string }{
		{"failed_pois_counts", "repository, status, error_class"},
		{"failed_pois_signature_counts", "error_signature, error_class, status"},
		{"failed_pois_hourly_counts", "hour, status"},
		{"dead_lettered_items_counts", "job_id"},
	} {
		var n int64
		// Fixed table and column names, never input.
		err := pool.QueryRow(ctx, `
			WITH gone AS (DELETE FROM `+c.table+` RETURNING `+c.groups+`, n),
			kept AS (
				INSERT INTO `+c.table+` (`+c.groups+`, n)
				SELECT `+c.groups+`, sum(n) FROM gone GROUP BY `+c.groups+` HAVING sum(n) <> 0)
			SELECT count(*) FROM gone`).Scan(&n)
		if err != nil {
			return total, fmt.Errorf("error compacting %s: %w", c.table, err)
		}
		total += n
	}
	return total, nil
}
