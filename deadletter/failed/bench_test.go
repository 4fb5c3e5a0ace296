package failed_test

import (
	"context"
	"testing"
	"time"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/worker"
)

// benchRows is the size of failed_pois the dead-letter queries are measured
// at (100,000 with -short).
const benchRows = 1_000_000

// BenchmarkFailedPOIs measures the queries behind `relay failed` and the
// reprocess throughput against a failed_pois table of benchRows rows: 20,000
// files, 200 signatures (skewed: a few dominate), five classes, 90% new, 5%
// reprocessed, 4% ignored, 1% stuck in reprocessing, one in a thousand
// flagged for manual review, failures spread over 29 days. Each op is the
// store call's wall time over loopback, an upper bound of the time in the
// database. Run:
//
//	go test -run='^$' -bench=FailedPOIs -benchtime=10x ./deadletter/
func BenchmarkFailedPOIs(b *testing.B) {
	ctx := context.Background()
	db := testdb.New(b)
	n := benchRows
	if testing.Short() {
		n = 100_000
	}
	start := time.Now()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
		b.Fatal(err)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, failed_at, error_message, error_class,
		                         error_signature, error_history, original_poi_data, status, reprocess_job_id,
		                         manual_review_required, repository)
		SELECT i / 50 + 1, 'src/pkg' || (i % 20000) / 100 || '/file' || i % 20000 || '.js', 'poi-' || i, i % 50,
		       now() - make_interval(secs => i * 2.5),
		       'resolver failed on ' || 'poi-' || i || ': cause ' || s || ' after ' || (i % 300) || ' ms',
		       (ARRAY['validation', 'panic', 'timeout', 'resolver', 'storage'])[1 + s % 5],
		       'resolver failed on poi-<n>: cause <n> after <n> ms variant ' || s,
		       jsonb_build_array(jsonb_build_object('job_id', i / 50 + 1, 'failed_at', now(), 'error_class', 'resolver',
		                         'error_message', 'resolver failed', 'error_signature', 'resolver failed')),
		       jsonb_build_object('id', 'poi-' || i, 'type', 'function_definition', 'name', 'fn' || i,
		                          'filePath', 'src/file' || i % 20000 || '.js', 'lineNumber', i % 900,
		                          'rawCode', 'function fn' || i || '(a, b) { return helper(a, "b, c"); }'),
		       CASE WHEN i % 100 < 90 THEN 'new' WHEN i % 100 < 95 THEN 'reprocessed' WHEN i % 100 < 99 THEN 'ignored'
		            ELSE 'reprocessing' END,
		       CASE WHEN i % 100 = 99 THEN 1000000000 + i END,
		       i % 1000 = 7,
		       CASE WHEN i % 10 = 0 THEN 'acme/small' ELSE 'acme/big' END
		FROM generate_series(1, $1) AS i, LATERAL (SELECT floor(200 * power(random(), 3))::int AS s) AS sig`, n)
	if err != nil {
		b.Fatal(err)
	}
	// The rows' files exist (a reprocess closes the rows of a file that
	// does not, instead of enqueuing them).
	if _, err := tx.Exec(ctx, `INSERT INTO files (repository, file_id) SELECT DISTINCT repository, file_id FROM failed_pois
		ON CONFLICT DO NOTHING`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	// As autovacuum would: statistics, and a visibility map so counts come
	// from indexes alone. Another session's old snapshot can keep VACUUM
	// from marking pages all-visible, so it is repeated until it has.
	for try := 0; ; try++ {
		if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE failed_pois`); err != nil {
			b.Fatal(err)
		}
		var visible bool
		if err := db.Pool.QueryRow(ctx, `SELECT relallvisible >= relpages * 0.99 FROM pg_class WHERE oid = 'failed_pois'::regclass`).Scan(&visible); err != nil {
			b.Fatal(err)
		}
		if visible || try == 20 {
			break
		}
	}
	b.Logf("seeded %d failed_pois rows in %s", n, time.Since(start).Round(time.Millisecond))
	store := failed.NewStore(db.Pool)

	var topSig string
	if err := db.Pool.QueryRow(ctx, `SELECT error_signature FROM failed_pois GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`).Scan(&topSig); err != nil {
		b.Fatal(err)
	}
	big, small := "acme/big", "acme/small"
	queries := []struct {
		name string
		fn   func() error
	}{
		{"list_first_page", func() error { _, err := store.List(ctx, failed.Filter{}, 50); return err }},
		{"list_first_page_status_new", func() error {
			_, err := store.List(ctx, failed.Filter{Status: failed.StatusNew}, 50)
			return err
		}},
		{"list_first_page_top_signature", func() error {
			_, err := store.List(ctx, failed.Filter{Signature: topSig}, 50)
			return err
		}},
		{"list_first_page_file", func() error {
			_, err := store.List(ctx, failed.Filter{FileID: "src/pkg42/file4242.js"}, 50)
			return err
		}},
		{"inspect", func() error { _, err := store.Get(ctx, int64(n/2)); return err }},
		{"stats", func() error { _, err := store.Stats(ctx); return err }},
		{"analyze", func() error { _, err := store.Analyze(ctx, failed.Filter{}, 20); return err }},
		{"analyze_since_24h", func() error {
			_, err := store.Analyze(ctx, failed.Filter{Since: time.Now().Add(-24 * time.Hour)}, 20)
			return err
		}},
		// The rows are in two repositories: acme/big holds 90% of them.
		{"list_first_page_repository", func() error {
			_, err := store.List(ctx, failed.Filter{Status: failed.StatusNew, Repository: &big}, 50)
			return err
		}},
		{"stats_repository", func() error { _, err := store.RepositoryStats(ctx, big); return err }},
		{"analyze_repository", func() error { _, err := store.Analyze(ctx, failed.Filter{Repository: &big}, 20); return err }},
		{"analyze_small_repository", func() error { _, err := store.Analyze(ctx, failed.Filter{Repository: &small}, 20); return err }},
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				if err := q.fn(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}

	for _, rc := range []struct {
		name string
		repo *string
	}{{"reprocess_100k", nil}, {"reprocess_100k_repository", &big}} {
		b.Run(rc.name, func(b *testing.B) { benchReprocess(ctx, b, db, rc.repo) })
	}
}

// benchReprocess reprocesses 100,000 new rows (of repo, when set) per
// iteration.
func benchReprocess(ctx context.Context, b *testing.B, db *testdb.DB, repo *string) {
	inserter, err := worker.NewInsertClient(db.Pool, worker.ConfigFrom(db.Config()), testdb.Logger(b))
	if err != nil {
		b.Fatal(err)
	}
	r := failed.NewReprocessor(db.Pool, inserter, nil, nil)
	const rows = 100_000
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Put the previous iteration's rows back, off the clock.
		if _, err := db.Pool.Exec(ctx, `
			UPDATE failed_pois SET status = 'new', reprocess_job_id = NULL, reprocess_requested_at = NULL
			WHERE status = 'reprocessing' AND reprocess_job_id < 1000000000`); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `TRUNCATE river_job`); err != nil {
			b.Fatal(err)
		}
		// As autovacuum would after the reset's 100,000 updates: without it
		// each iteration reads and updates past the dead rows of the ones
		// before, and gets slower.
		if _, err := db.Pool.Exec(ctx, `VACUUM failed_pois`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t := time.Now()
		res, err := r.Run(ctx, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew, Repository: repo}, Limit: rows}, "bench", nil)
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(t)
		if res.Rows != rows {
			b.Fatalf("reprocessed %d rows, want %d", res.Rows, rows)
		}
	}
	b.ReportMetric(float64(rows*b.N)/total.Seconds(), "rows/s")
}
