package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/worker"
)

// DeadLetter is phase 5: the failed.Store calls behind `relay failed
// list` (first page), `inspect`, `stats` and `analyze` on a failed_pois
// table of FailedRows rows, each the median of 5 wall-clock runs over
// loopback (an upper bound of their in-database time), every page of the
// web console (its handler's time), and the rate of `relay reprocess`
// (failed.Reprocessor.Run) on ReprocessRows of them.
type DeadLetter struct {
	Rows int64 `json:"rows"`
	// Source says what was timed: "store", relay's own failed.Store and
	// Reprocessor.
	Source    string  `json:"source"`
	ListMS    float64 `json:"list_ms"`
	InspectMS float64 `json:"inspect_ms"`
	StatsMS   float64 `json:"stats_ms"`
	AnalyzeMS float64 `json:"analyze_ms"`
	// RepositoryListMS and RepositoryAnalyzeMS are ListMS and AnalyzeMS
	// with a repository filter: the rows are spread over
	// deadLetterRepositories repositories.
	RepositoryListMS    float64 `json:"repository_list_ms"`
	RepositoryAnalyzeMS float64 `json:"repository_analyze_ms"`
	// ReprocessRows were moved from new to reprocessing, and enqueued in
	// ReprocessJobs jobs, at ReprocessRowsPerSec.
	ReprocessRows       int64   `json:"reprocess_rows"`
	ReprocessJobs       int64   `json:"reprocess_jobs"`
	ReprocessSeconds    float64 `json:"reprocess_seconds"`
	ReprocessRowsPerSec float64 `json:"reprocess_rows_per_sec"`
	// Console is each web console page's server time (before the
	// reprocess), and ConsoleMaxMS the slowest.
	Console      []PageTime `json:"console"`
	ConsoleMaxMS float64    `json:"console_max_ms"`
}

// deadLetterRepositories is how many repositories the dead-letter phase's
// rows are spread over.
const deadLetterRepositories = 20

func (b *bench) deadLetter(ctx context.Context, res *Result) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	n := b.cfg.FailedRows
	start := time.Now()
	// 20,000 files in 20 repositories, 40 distinct signatures, five
	// classes, 10% ignored; POI data like a real malformed POI (~400 bytes).
	_, err := b.pool.Exec(ctx, `
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, failed_at, error_message, error_class,
		                         error_signature, original_poi_data, status, repository)
		SELECT g / 50, 'bench/f' || lpad((g / 50 % 20000)::text, 5, '0') || '.go', 'p' || g, g % 50,
		       now() - make_interval(secs => g),
		       'poi "p' || g || '": lineNumber must be a non-negative integer (cause ' || (g % 40) || ')',
		       (ARRAY['validation', 'panic', 'timeout', 'resolver', 'storage'])[1 + g % 5],
		       'poi "<str>": lineNumber must be a non-negative integer (cause ' || (g % 40) || ')',
		       jsonb_build_object('id', 'p' || g, 'type', 'function_definition', 'name', 'fn_' || g,
		                          'filePath', 'bench/f' || lpad((g / 50 % 20000)::text, 5, '0') || '.go',
		                          'lineNumber', 'twelve', 'rawCode', 'func fn_' || g || '() {' || repeat(' step();', 40) || ' }'),
		       CASE WHEN g % 10 = 0 THEN 'ignored' ELSE 'new' END,
		       'bench/r' || lpad((g / 50 % $2)::text, 2, '0')
		FROM generate_series(1, $1::int) AS g`, n, deadLetterRepositories)
	if err != nil {
		return fmt.Errorf("error filling failed_pois: %w", err)
	}
	// The rows' files exist, as a worker's rows' files do: a reprocess
	// closes the rows of a file that does not, instead of enqueuing them.
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO files (repository, file_id) SELECT DISTINCT repository, file_id FROM failed_pois
		ON CONFLICT DO NOTHING`); err != nil {
		return fmt.Errorf("error filling files: %w", err)
	}
	if _, err := b.pool.Exec(ctx, `VACUUM ANALYZE failed_pois`); err != nil {
		return fmt.Errorf("error analysing failed_pois: %w", err)
	}
	// VACUUM as autovacuum would; it may need more than one pass to mark
	// every page all-visible while other sessions hold snapshots.
	for try := 0; try < 20; try++ {
		var visible bool
		if err := b.pool.QueryRow(ctx, `SELECT relallvisible >= relpages * 0.99 FROM pg_class WHERE oid = 'failed_pois'::regclass`).
			Scan(&visible); err != nil {
			return fmt.Errorf("error reading failed_pois' visibility: %w", err)
		}
		if visible {
			break
		}
		if _, err := b.pool.Exec(ctx, `VACUUM ANALYZE failed_pois`); err != nil {
			return fmt.Errorf("error vacuuming failed_pois: %w", err)
		}
	}
	b.progress("  %d failed_pois rows in %.1fs", n, time.Since(start).Seconds())
	d := &DeadLetter{Rows: int64(n), Source: "store"}
	repo := "bench/r07" // one of deadLetterRepositories
	store := failed.NewStore(b.pool)
	for _, q := range []struct {
		out *float64
		fn  func() error
	}{
		{&d.ListMS, func() error {
			_, err := store.List(ctx, failed.Filter{Status: failed.StatusNew}, 50)
			return err
		}},
		{&d.InspectMS, func() error { _, err := store.Get(ctx, int64(n/2)); return err }},
		{&d.StatsMS, func() error { _, err := store.Stats(ctx); return err }},
		{&d.AnalyzeMS, func() error { _, err := store.Analyze(ctx, failed.Filter{}, 20); return err }},
		{&d.RepositoryListMS, func() error {
			_, err := store.List(ctx, failed.Filter{Status: failed.StatusNew, Repository: &repo}, 50)
			return err
		}},
		{&d.RepositoryAnalyzeMS, func() error {
			_, err := store.Analyze(ctx, failed.Filter{Repository: &repo}, 20)
			return err
		}},
	} {
		ms, err := medianMillis(q.fn)
		if err != nil {
			return fmt.Errorf("error timing the dead-letter queries: %w", err)
		}
		*q.out = ms
	}
	if err := b.consolePages(ctx, d); err != nil {
		return err
	}
	if err := b.reprocess(ctx, d); err != nil {
		return err
	}
	res.DeadLetter = d
	return nil
}

// medianMillis is the median over five runs of fn's wall-clock time.
func medianMillis(fn func() error) (float64, error) {
	var times []float64
	for range 5 {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		times = append(times, float64(time.Since(start).Microseconds())/1000)
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// reprocess runs `relay reprocess --status new --limit ReprocessRows`.
func (b *bench) reprocess(ctx context.Context, d *DeadLetter) error {
	inserter, err := worker.NewInsertClient(b.pool, worker.ConfigFrom(b.workerConfig()), b.cfg.Logger)
	if err != nil {
		return err
	}
	r := failed.NewReprocessor(b.pool, inserter, nil, b.cfg.Logger)
	run, err := r.Run(ctx, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}, Limit: int64(b.cfg.ReprocessRows)},
		"relay-bench", nil)
	if err != nil {
		return fmt.Errorf("error reprocessing: %w", err)
	}
	d.ReprocessRows, d.ReprocessJobs = run.Rows, run.Jobs
	d.ReprocessSeconds = run.Duration.Seconds()
	d.ReprocessRowsPerSec = ratio(float64(d.ReprocessRows), d.ReprocessSeconds)
	return nil
}
