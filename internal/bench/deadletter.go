package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// DeadLetter is phase 5: the queries behind `relay failed list` (first
// page), `inspect`, `stats` and `analyze` on a failed_pois table of
// FailedRows rows, timed inside the database (EXPLAIN ANALYZE's planning +
// execution time, median of 5), and the rate of reprocessing ReprocessRows
// of them (mark and enqueue, one resolve_file job per file, in one
// transaction).
type DeadLetter struct {
	Rows int64 `json:"rows"`
	// Source says what was timed: "sql", the equivalent SQL on failed_pois.
	Source    string  `json:"source"`
	ListMS    float64 `json:"list_ms"`
	InspectMS float64 `json:"inspect_ms"`
	StatsMS   float64 `json:"stats_ms"`
	AnalyzeMS float64 `json:"analyze_ms"`
	// ReprocessRows were moved from new to reprocessing, and enqueued in
	// ReprocessJobs jobs, at ReprocessRowsPerSec.
	ReprocessRows       int64   `json:"reprocess_rows"`
	ReprocessJobs       int64   `json:"reprocess_jobs"`
	ReprocessSeconds    float64 `json:"reprocess_seconds"`
	ReprocessRowsPerSec float64 `json:"reprocess_rows_per_sec"`
}

// The dead-letter queries timed, as `relay failed` would run them.
var deadLetterQueries = []struct {
	name, sql string
}{
	{"list", `SELECT id, file_id, poi_id, error_class, error_signature, error_message, status, attempts, failed_at
		FROM failed_pois WHERE status = 'new' ORDER BY failed_at DESC, id DESC LIMIT 50`},
	{"inspect", `SELECT * FROM failed_pois WHERE id = 500000`},
	{"stats", `SELECT status, error_class, count(*), min(failed_at), max(failed_at) FROM failed_pois GROUP BY status, error_class`},
	{"analyze", `WITH g AS (
			SELECT error_signature, min(error_class) AS error_class, count(*) AS n, min(failed_at) AS first_seen,
			       max(failed_at) AS last_seen, (array_agg(poi_id ORDER BY id DESC))[1:3] AS samples
			FROM failed_pois GROUP BY error_signature)
		SELECT g.*, round(100.0 * n / sum(n) OVER (), 2) AS share FROM g ORDER BY n DESC`},
}

func (b *bench) deadLetter(ctx context.Context, res *Result) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	n := b.cfg.FailedRows
	start := time.Now()
	// 20,000 files, 40 distinct signatures, five classes, 10% ignored; POI
	// data like a real malformed POI (~400 bytes).
	_, err := b.pool.Exec(ctx, `
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, failed_at, error_message, error_class,
		                         error_signature, original_poi_data, status)
		SELECT g / 50, 'bench/f' || lpad((g / 50 % 20000)::text, 5, '0') || '.go', 'p' || g, g % 50,
		       now() - make_interval(secs => g),
		       'poi "p' || g || '": lineNumber must be a non-negative integer (cause ' || (g % 40) || ')',
		       (ARRAY['validation', 'panic', 'timeout', 'resolver', 'storage'])[1 + g % 5],
		       'poi "<str>": lineNumber must be a non-negative integer (cause ' || (g % 40) || ')',
		       jsonb_build_object('id', 'p' || g, 'type', 'function_definition', 'name', 'fn_' || g,
		                          'filePath', 'bench/f' || lpad((g / 50 % 20000)::text, 5, '0') || '.go',
		                          'lineNumber', 'twelve', 'rawCode', 'func fn_' || g || '() {' || repeat(' step();', 40) || ' }'),
		       CASE WHEN g % 10 = 0 THEN 'ignored' ELSE 'new' END
		FROM generate_series(1, $1::int) AS g`, n)
	if err != nil {
		return fmt.Errorf("error filling failed_pois: %w", err)
	}
	if _, err := b.pool.Exec(ctx, `VACUUM ANALYZE failed_pois`); err != nil {
		return fmt.Errorf("error analysing failed_pois: %w", err)
	}
	b.progress("  %d failed_pois rows in %.1fs", n, time.Since(start).Seconds())
	d := &DeadLetter{Rows: int64(n), Source: "sql"}
	for _, q := range deadLetterQueries {
		ms, err := b.explainMillis(ctx, q.sql)
		if err != nil {
			return fmt.Errorf("error timing %s: %w", q.name, err)
		}
		switch q.name {
		case "list":
			d.ListMS = ms
		case "inspect":
			d.InspectMS = ms
		case "stats":
			d.StatsMS = ms
		case "analyze":
			d.AnalyzeMS = ms
		}
	}
	if err := b.reprocess(ctx, d); err != nil {
		return err
	}
	res.DeadLetter = d
	return nil
}

// explainMillis is the median over five runs of a query's planning plus
// execution time inside the database.
func (b *bench) explainMillis(ctx context.Context, sql string) (float64, error) {
	var times []float64
	for range 5 {
		var plan []struct {
			Planning  float64 `json:"Planning Time"`
			Execution float64 `json:"Execution Time"`
		}
		var raw []byte
		if err := b.pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql).Scan(&raw); err != nil {
			return 0, err
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) == 0 {
			return 0, fmt.Errorf("error reading EXPLAIN output: %v", err)
		}
		times = append(times, plan[0].Planning+plan[0].Execution)
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// reprocess marks ReprocessRows new rows reprocessing and enqueues their
// POIs, one resolve_file job per file, in one transaction per 10,000 rows,
// as `relay reprocess` does.
func (b *bench) reprocess(ctx context.Context, d *DeadLetter) error {
	inserter, err := worker.NewInsertClient(b.pool, b.workerConfig(), b.cfg.Logger)
	if err != nil {
		return err
	}
	start := time.Now()
	for d.ReprocessRows < int64(b.cfg.ReprocessRows) {
		limit := min(10_000, int64(b.cfg.ReprocessRows)-d.ReprocessRows)
		var rows, jobs int64
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			rs, err := tx.Query(ctx, `
				UPDATE failed_pois f SET status = 'reprocessing', updated_at = now()
				FROM (SELECT id FROM failed_pois WHERE status = 'new' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) s
				WHERE f.id = s.id
				RETURNING f.id, f.file_id, f.original_poi_data`, limit)
			if err != nil {
				return err
			}
			byFile := map[string]*outbox.ResolveFileArgs{}
			var order []string
			for rs.Next() {
				var id int64
				var file string
				var data []byte
				if err := rs.Scan(&id, &file, &data); err != nil {
					rs.Close()
					return err
				}
				a := byFile[file]
				if a == nil {
					a = &outbox.ResolveFileArgs{FileID: file, FileVersion: 1}
					byFile[file] = a
					order = append(order, file)
				}
				a.POIs = append(a.POIs, data)
				a.FailedPOIIDs = append(a.FailedPOIIDs, id)
				rows++
			}
			if err := rs.Err(); err != nil {
				return err
			}
			params := make([]river.InsertManyParams, 0, len(order))
			for _, f := range order {
				params = append(params, river.InsertManyParams{Args: *byFile[f]})
			}
			if len(params) > 0 {
				if _, err := inserter.InsertManyTx(ctx, tx, params); err != nil {
					return err
				}
			}
			jobs = int64(len(params))
			return nil
		})
		if err != nil {
			return fmt.Errorf("error reprocessing: %w", err)
		}
		if rows == 0 {
			break
		}
		d.ReprocessRows += rows
		d.ReprocessJobs += jobs
	}
	d.ReprocessSeconds = time.Since(start).Seconds()
	d.ReprocessRowsPerSec = ratio(float64(d.ReprocessRows), d.ReprocessSeconds)
	return nil
}
