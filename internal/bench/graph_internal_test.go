package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
)

// TestBuildGraph_FailedLoadKeepsTheIndexes: the graph phase's load drops
// the secondary indexes of pois and poi_references; a load that fails, or
// whose context is cancelled, before they are built again leaves the
// database with all of them, and a later build measures with them.
func TestBuildGraph_FailedLoadKeepsTheIndexes(t *testing.T) {
	t.Parallel()
	cfg := &Config{DatabaseURL: testdb.ServerURL(t)}
	cfg.defaults()
	ctx := context.Background()
	b, err := open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(b.close)

	indexes := func(ctx context.Context, q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) []string {
		t.Helper()
		rows, err := q.Query(ctx, `SELECT indexname FROM pg_indexes
			WHERE schemaname = current_schema() AND tablename IN ('pois', 'poi_references') ORDER BY indexname`)
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return names
	}
	all := indexes(ctx, b.pool)
	require.Contains(t, all, "pois_name_idx")
	require.Contains(t, all, "poi_references_target_poi_id_idx")

	// A step that fails after the load, the indexes dropped.
	failed := errors.New("the load failed")
	_, err = b.buildGraphWith(ctx, 2000, func(ctx context.Context, tx pgx.Tx) error {
		require.NotContains(t, indexes(ctx, tx), "pois_name_idx", "dropped for the load")
		return failed
	})
	require.ErrorIs(t, err, failed)
	require.Equal(t, all, indexes(ctx, b.pool))

	// A load cancelled before the indexes are built again.
	cctx, cancel := context.WithCancel(ctx)
	_, err = b.buildGraphWith(cctx, 2000, func(context.Context, pgx.Tx) error {
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, all, indexes(ctx, b.pool))
	var rows int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pois`).Scan(&rows))
	require.Zero(t, rows, "the failed loads' rows are rolled back with them")

	// A load that succeeds keeps them too, and writes the corpus.
	_, err = b.buildGraph(ctx, 2000)
	require.NoError(t, err)
	require.Equal(t, all, indexes(ctx, b.pool))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pois`).Scan(&rows))
	require.Equal(t, 2000, rows)
}

// TestLatency_NearestRank: p99 is the largest of fewer than 100 timings
// and the 99th of 100; p50 the middle one.
func TestLatency_NearestRank(t *testing.T) {
	seq := func(n int) []float64 {
		ms := make([]float64, n)
		for i := range ms {
			ms[i] = float64(n - i) // unsorted: latency sorts
		}
		return ms
	}
	require.Equal(t, Latency{P50: 10, P99: 20, Max: 20}, latency(seq(20)))
	require.Equal(t, Latency{P50: 50, P99: 99, Max: 100}, latency(seq(100)))
	require.Equal(t, Latency{P50: 500, P99: 990, Max: 1000}, latency(seq(1000)))
	require.Equal(t, Latency{P50: 7, P99: 7, Max: 7}, latency([]float64{7}))
}
