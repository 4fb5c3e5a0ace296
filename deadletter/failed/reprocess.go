package failed

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/relay-dev/relay/internal/citus"
	"github.com/relay-dev/relay/outbox"
)

// JobInserter inserts River jobs in a transaction; *river.Client[pgx.Tx]
// is one (an insert-only client needs no workers).
type JobInserter interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Defaults for ReprocessConfig.
const (
	ReprocessChunkSizeDefault = 1000
	ReprocessParallelDefault  = 2
	// ReprocessJobTag tags every job `relay reprocess` inserts.
	ReprocessJobTag = "reprocess"
)

// ReprocessConfig tunes a Reprocessor. Zero values take the defaults.
type ReprocessConfig struct {
	// ChunkSize is how many rows one transaction moves to reprocessing
	// (ReprocessChunkSizeDefault).
	ChunkSize int
	// RowsPerSecond limits the rate (0: as fast as possible).
	RowsPerSecond float64
	// MaxAttempts is River's attempt limit for the jobs inserted
	// (outbox.MaxAttemptsDefault).
	MaxAttempts int
	// MaxJobBytes splits one file's POIs across jobs above this much POI
	// JSON (outbox.MaxJobBytesDefault), as publish does.
	MaxJobBytes int
	// Parallel is how many chunks are in flight at once
	// (ReprocessParallelDefault); 1 when RowsPerSecond is set.
	Parallel int
}

// Selection is what `relay reprocess` takes: rows of one status, filtered.
type Selection struct {
	// Filter selects the rows; its Status is required.
	Filter
	// Limit caps the rows (0: all).
	Limit int64
	// IncludeManualReview also takes rows needing manual review, which the
	// automatic path leaves alone.
	IncludeManualReview bool
}

// Validate checks the selection.
func (s Selection) Validate() error {
	if s.Status == "" {
		return errors.New("a status is required to select rows to reprocess")
	}
	if s.Limit < 0 {
		return fmt.Errorf("limit %d must not be negative", s.Limit)
	}
	if s.Status == StatusSuperseded {
		return errors.New("superseded rows cannot be reprocessed: each is of a version of its file that was replaced, " +
			"or of a file that is gone (its superseded_reason says which)")
	}
	return s.Filter.Validate()
}

// where renders the selection. Rows needing manual review are left out
// unless asked for; in status reprocessing only stuck rows qualify: those
// whose job will never report back (River discarded or cancelled it, or it
// is gone). A row whose job is still queued or running is never taken, so
// it cannot be enqueued twice.
func (s Selection) where(a *queryArgs, alias string) string {
	w := s.Filter.where(a, alias)
	if !s.IncludeManualReview && !s.ManualReview {
		w += " AND NOT " + alias + "manual_review_required"
	}
	switch {
	case s.Status == StatusReprocessing && a.distributed:
		// Citus joins a distributed table to a local one (river_job) only
		// through a subquery it runs first: the live jobs' ids, sent to
		// the shards with the statement.
		w += " AND (" + alias + "reprocess_job_id IS NULL OR " + alias + "reprocess_job_id <> ALL (ARRAY(SELECT j.id FROM river_job j WHERE j.state IN " +
			liveJobStates + ")))"
	case s.Status == StatusReprocessing:
		w += " AND NOT EXISTS (SELECT 1 FROM river_job j WHERE j.id = " + alias + "reprocess_job_id AND j.state IN " + liveJobStates + ")"
	}
	return w
}

// Reprocessor puts failed POIs back through the pipeline.
type Reprocessor struct {
	pool   *pgxpool.Pool
	jobs   JobInserter
	cfg    ReprocessConfig
	logger *slog.Logger
	// layout says whether failed_pois is distributed (Citus): then a chunk
	// locks one repository's rows at a time (chunk).
	layout *citus.Layout
}

// NewReprocessor returns a Reprocessor that inserts jobs through jobs.
func NewReprocessor(pool *pgxpool.Pool, jobs JobInserter, cfg *ReprocessConfig, logger *slog.Logger) *Reprocessor {
	c := ReprocessConfig{}
	if cfg != nil {
		c = *cfg
	}
	c.ChunkSize = cmp.Or(c.ChunkSize, ReprocessChunkSizeDefault)
	c.Parallel = cmp.Or(c.Parallel, ReprocessParallelDefault)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, outbox.MaxAttemptsDefault)
	c.MaxJobBytes = cmp.Or(c.MaxJobBytes, outbox.MaxJobBytesDefault)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Reprocessor{pool: pool, jobs: jobs, cfg: c, logger: logger, layout: citus.NewLayout(pool)}
}

// GroupCount is a count of rows for one key (file or signature).
type GroupCount struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// ReprocessPlan is what a reprocess would enqueue (`--dry-run`).
type ReprocessPlan struct {
	Filter map[string]any `json:"filter"`
	Rows   int64          `json:"rows"`
	// Files is the number of files, so about the number of jobs (one per
	// file; more for a file whose rows span chunks or exceed MaxJobBytes).
	Files      int64 `json:"files"`
	Signatures int64 `json:"signatures"`
	// ByFile and BySignature are the largest groups, most rows first.
	ByFile      []GroupCount `json:"by_file"`
	BySignature []GroupCount `json:"by_signature"`
}

// Plan counts, without changing anything, the rows Run would take now: in
// total, per file and per signature (the top groups of each).
func (r *Reprocessor) Plan(ctx context.Context, sel Selection, top int) (*ReprocessPlan, error) {
	if err := sel.Validate(); err != nil {
		return nil, err
	}
	if top <= 0 {
		top = 20
	}
	a, err := r.args(ctx)
	if err != nil {
		return nil, fmt.Errorf("error planning a reprocess: %w", err)
	}
	inner := `SELECT CASE WHEN repository = '' THEN file_id ELSE repository || ' ' || file_id END AS file_id, error_signature
		FROM failed_pois WHERE ` + sel.where(a, "") + ` ORDER BY repository, file_id, id`
	if sel.Limit > 0 {
		inner += ` LIMIT ` + a.add(sel.Limit)
	}
	topP := a.add(top)
	q := `
		WITH s AS MATERIALIZED (` + inner + `),
		f AS (SELECT file_id AS k, count(*) AS n FROM s GROUP BY 1),
		g AS (SELECT error_signature AS k, count(*) AS n FROM s GROUP BY 1)
		(SELECT 'file' AS kind, k, n, (SELECT count(*) FROM f), (SELECT count(*) FROM s) FROM f ORDER BY n DESC, k LIMIT ` + topP + `)
		UNION ALL
		(SELECT 'signature', k, n, (SELECT count(*) FROM g), (SELECT count(*) FROM s) FROM g ORDER BY n DESC, k LIMIT ` + topP + `)`
	rows, err := r.pool.Query(ctx, q, a.vals...)
	if err != nil {
		return nil, fmt.Errorf("error planning reprocess: %w", err)
	}
	defer rows.Close()
	p := &ReprocessPlan{Filter: sel.describe(), ByFile: []GroupCount{}, BySignature: []GroupCount{}}
	for rows.Next() {
		var kind string
		var g GroupCount
		var groups int64
		if err := rows.Scan(&kind, &g.Key, &g.Count, &groups, &p.Rows); err != nil {
			return nil, fmt.Errorf("error planning reprocess: %w", err)
		}
		if kind == "file" {
			p.Files, p.ByFile = groups, append(p.ByFile, g)
		} else {
			p.Signatures, p.BySignature = groups, append(p.BySignature, g)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error planning reprocess: %w", err)
	}
	return p, nil
}

func (s Selection) describe() map[string]any {
	m := s.Filter.Describe()
	if s.Limit > 0 {
		m["limit"] = s.Limit
	}
	if s.IncludeManualReview {
		m["include_manual_review"] = true
	}
	return m
}

// ReprocessProgress is reported after each committed chunk.
type ReprocessProgress struct {
	// Rows counts the rows taken so far: enqueued, or superseded.
	Rows       int64         `json:"rows"`
	Superseded int64         `json:"superseded"`
	Jobs       int64         `json:"jobs"`
	Total      int64         `json:"total"` // rows selected when the run started
	Elapsed    time.Duration `json:"elapsed"`
}

// ReprocessResult is what Run did.
type ReprocessResult struct {
	// EventID is the run's audit event in dead_letter_events.
	EventID int64 `json:"event_id"`
	// Rows counts the rows enqueued (moved to reprocessing).
	Rows int64 `json:"rows"`
	// Superseded counts the rows selected but closed instead (status
	// superseded): their file was published again since their version, or
	// is gone.
	Superseded int64         `json:"superseded"`
	Jobs       int64         `json:"jobs"`
	Chunks     int           `json:"chunks"`
	Duration   time.Duration `json:"duration_ns"`
}

// Run moves the selected rows to reprocessing and enqueues their POIs, one
// resolve_file job per file (the rows' original_poi_data as it is now, with
// FailedPOIIDs naming the rows and FileVersion the file's current version).
//
// It works in chunks of ChunkSize rows. Each chunk is one transaction that
// locks its rows (FOR UPDATE SKIP LOCKED: concurrent runs take different
// rows), inserts the jobs, marks the rows and adds to the run's audit event,
// so a crash leaves no row marked but not enqueued, nor enqueued twice. A
// marked row no longer matches its status, so an interrupted run is simply
// run again, and a second run of a finished one enqueues nothing. progress
// (may be nil) is called after each chunk. On error or cancellation the
// result counts the chunks committed before it.
func (r *Reprocessor) Run(ctx context.Context, sel Selection, actor string, progress func(ReprocessProgress)) (*ReprocessResult, error) {
	if err := sel.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	res := &ReprocessResult{}

	var total int64
	ca, err := r.args(ctx)
	if err != nil {
		return nil, fmt.Errorf("error counting rows to reprocess: %w", err)
	}
	cq := `SELECT count(*) FROM failed_pois WHERE ` + sel.where(ca, "")
	if sel.Limit > 0 {
		cq = `SELECT count(*) FROM (SELECT 1 FROM failed_pois WHERE ` + sel.where(&queryArgs{distributed: ca.distributed}, "") +
			` LIMIT ` + ca.add(sel.Limit) + `) s`
	}
	if err := r.pool.QueryRow(ctx, cq, ca.vals...).Scan(&total); err != nil {
		return nil, fmt.Errorf("error counting rows to reprocess: %w", err)
	}
	details := sel.describe()
	details["jobs"] = 0
	if r.cfg.RowsPerSecond > 0 {
		details["rows_per_second"] = r.cfg.RowsPerSecond
	}
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		var err error
		res.EventID, err = InsertEventTx(ctx, tx, actor, ActionReprocess, 0, details)
		return err
	})
	if err != nil {
		return nil, err
	}

	// Parallel takers each page through the selection from the start;
	// SKIP LOCKED makes each take rows the others have not locked, and rows
	// they committed no longer match. The limit, the rate and the result
	// are shared.
	takers := r.cfg.Parallel
	if r.cfg.RowsPerSecond > 0 {
		takers = 1
	}
	var (
		mu       sync.Mutex
		reserved int64 // rows taken or being taken, for the limit
		firstErr error
		wg       sync.WaitGroup
	)
	reserve := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		n := int64(r.cfg.ChunkSize)
		if r.cfg.RowsPerSecond > 0 {
			n = min(n, max(1, int64(r.cfg.RowsPerSecond)))
		}
		if sel.Limit > 0 {
			n = min(n, sel.Limit-reserved)
		}
		if firstErr != nil || n <= 0 {
			return 0
		}
		reserved += n
		return n
	}
	for range takers {
		wg.Go(func() {
			var after *chunkKey
			for {
				n := reserve()
				if n == 0 {
					return
				}
				var c chunkResult
				err := ctx.Err()
				if err == nil {
					c, err = r.chunk(ctx, sel, after, n, res.EventID)
				}
				mu.Lock()
				reserved -= n - c.rows
				if err != nil {
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
				if c.advanced {
					after = &c.last
				}
				if c.rows > 0 {
					res.Rows, res.Superseded = res.Rows+c.rows-c.superseded, res.Superseded+c.superseded
					res.Jobs, res.Chunks = res.Jobs+c.jobs, res.Chunks+1
					if progress != nil {
						progress(ReprocessProgress{Rows: res.Rows + res.Superseded, Superseded: res.Superseded, Jobs: res.Jobs,
							Total: total, Elapsed: time.Since(start)})
					}
				}
				done := res.Rows + res.Superseded
				mu.Unlock()
				if !c.more {
					return
				}
				if r.cfg.RowsPerSecond > 0 {
					due := start.Add(time.Duration(float64(done) / r.cfg.RowsPerSecond * float64(time.Second)))
					if err := sleepUntil(ctx, due); err != nil {
						mu.Lock()
						firstErr = cmp.Or(firstErr, err)
						mu.Unlock()
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		res.Duration = time.Since(start)
		return res, firstErr
	}
	res.Duration = time.Since(start)
	r.logger.InfoContext(ctx, "reprocess enqueued", slog.Int64("rows", res.Rows), slog.Int64("jobs", res.Jobs),
		slog.Int("chunks", res.Chunks), slog.Int64("event_id", res.EventID), slog.Duration("duration", res.Duration))
	return res, nil
}

// args returns the queryArgs of a statement of r's database.
func (r *Reprocessor) args(ctx context.Context) (*queryArgs, error) {
	dist, err := r.layout.Distributed(ctx)
	if err != nil {
		return nil, err
	}
	return &queryArgs{distributed: dist}, nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// chunkKey is the position of the last row a chunk took, or, with
// pastRepo, the end of repository repo.
type chunkKey struct {
	repo, fileID string
	id           int64
	pastRepo     bool
}

// after renders "the row is after k" for a statement.
func (k *chunkKey) after(a *queryArgs) string {
	if k.pastRepo {
		return ` AND repository > ` + a.add(k.repo)
	}
	return ` AND (repository, file_id, id) > (` + a.add(k.repo) + `, ` + a.add(k.fileID) + `, ` + a.add(k.id) + `)`
}

type chunkResult struct {
	// rows are the rows taken, superseded those of them closed instead of
	// enqueued.
	rows, superseded, jobs int64
	// last is where the next chunk starts, when advanced.
	last     chunkKey
	advanced bool
	// more: rows after last may still be selected.
	more bool
}

// chunk reprocesses up to n rows after key in one transaction. A row
// whose file is gone, or whose version (file_version) is not the file's
// current one, is closed (status superseded, with the reason) instead of
// enqueued: a reprocess never writes a POI of another version than its
// file's current one, nor recreates a file. The worker checks again when
// the job runs (the file may be published or deleted meanwhile).
//
// On plain PostgreSQL one statement locks the next n rows in (repository,
// file, id) order. On a distributed failed_pois, where Citus locks rows
// only in a statement routed to one shard, the chunk first reads which
// repository the next selected row is of (without locking: Citus runs it
// on every shard and merges), then takes only that repository's rows, every
// statement naming it (repository = $1): a chunk is then a transaction of
// one node. A repository with fewer than n rows left (or the rest locked by
// another taker) ends the chunk early, and the next starts after it.
func (r *Reprocessor) chunk(ctx context.Context, sel Selection, after *chunkKey, n int64, eventID int64) (chunkResult, error) {
	dist, err := r.layout.Distributed(ctx)
	if err != nil {
		return chunkResult{}, fmt.Errorf("error selecting rows to reprocess: %w", err)
	}
	var only *string // the only repository of the chunk (distributed)
	if dist {
		a := &queryArgs{distributed: true}
		q := `SELECT repository FROM failed_pois WHERE ` + sel.where(a, "")
		if after != nil {
			q += after.after(a)
		}
		q += ` ORDER BY repository, file_id, id LIMIT 1`
		var next string
		switch err := r.pool.QueryRow(ctx, q, a.vals...).Scan(&next); {
		case errors.Is(err, pgx.ErrNoRows):
			return chunkResult{}, nil
		case err != nil:
			return chunkResult{}, fmt.Errorf("error finding the next repository to reprocess: %w", err)
		}
		only = &next
	}
	var c chunkResult
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		c = chunkResult{}
		a := &queryArgs{distributed: dist}
		q := `SELECT id, repository, file_id, original_poi_data, file_version FROM failed_pois WHERE ` + sel.where(a, "")
		if only != nil {
			q += ` AND repository = ` + a.add(*only)
		}
		if after != nil {
			q += after.after(a)
		}
		q += ` ORDER BY repository, file_id, id LIMIT ` + a.add(n) + ` FOR UPDATE SKIP LOCKED`
		rows, err := tx.Query(ctx, q, a.vals...)
		if err != nil {
			return fmt.Errorf("error selecting rows to reprocess: %w", err)
		}
		type file struct {
			repo, id string
			rows     []int64
			versions []*int64
			pois     []json.RawMessage
		}
		var files []*file
		for rows.Next() {
			var id int64
			var repo, fileID string
			var data []byte
			var version *int64
			if err := rows.Scan(&id, &repo, &fileID, &data, &version); err != nil {
				rows.Close()
				return fmt.Errorf("error reading rows to reprocess: %w", err)
			}
			if len(files) == 0 || files[len(files)-1].id != fileID || files[len(files)-1].repo != repo {
				files = append(files, &file{repo: repo, id: fileID})
			}
			f := files[len(files)-1]
			f.rows, f.versions, f.pois = append(f.rows, id), append(f.versions, version), append(f.pois, json.RawMessage(data))
			c.rows++
			c.last, c.advanced = chunkKey{repo: repo, fileID: fileID, id: id}, true
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("error reading rows to reprocess: %w", err)
		}
		c.more = c.rows == n
		if only != nil && c.rows < n {
			// The repository's selected rows are taken, or locked by another
			// taker: the next chunk starts at the next repository.
			c.last, c.advanced, c.more = chunkKey{repo: *only, pastRepo: true}, true, true
		}
		if c.rows == 0 {
			return nil
		}

		repos, fileIDs := make([]string, len(files)), make([]string, len(files))
		for i, f := range files {
			repos[i], fileIDs[i] = f.repo, f.id
		}
		type fileKey struct{ repo, id string }
		type fileState struct {
			version  int64 // 0: the file is gone
			repoGone bool  // the file's repository has no file left
		}
		states := make(map[fileKey]fileState, len(files))
		var vrows pgx.Rows
		if only == nil {
			vrows, err = tx.Query(ctx, `
				SELECT u.repo, u.file, coalesce(f.version, 0),
				       f.version IS NULL AND NOT EXISTS (SELECT 1 FROM files o WHERE o.repository = u.repo)
				FROM unnest($1::text[], $2::text[]) AS u(repo, file)
				LEFT JOIN files f ON f.repository = u.repo AND f.file_id = u.file`, repos, fileIDs)
		} else {
			// One repository, named: Citus routes both reads to its shard.
			vrows, err = tx.Query(ctx, `
				SELECT $1::text, u.file, coalesce(f.version, 0), f.version IS NULL AND g.gone
				FROM unnest($2::text[]) AS u(file)
				LEFT JOIN (SELECT file_id, version FROM files WHERE repository = $1 AND file_id = ANY($2)) f ON f.file_id = u.file
				CROSS JOIN (SELECT NOT EXISTS (SELECT 1 FROM files WHERE repository = $1) AS gone) g`, *only, fileIDs)
		}
		if err != nil {
			return fmt.Errorf("error reading file versions: %w", err)
		}
		for vrows.Next() {
			var k fileKey
			var st fileState
			if err := vrows.Scan(&k.repo, &k.id, &st.version, &st.repoGone); err != nil {
				vrows.Close()
				return fmt.Errorf("error reading file versions: %w", err)
			}
			states[k] = st
		}
		if err := vrows.Err(); err != nil {
			return fmt.Errorf("error reading file versions: %w", err)
		}

		opts := &river.InsertOpts{MaxAttempts: r.cfg.MaxAttempts, Tags: []string{ReprocessJobTag}}
		var params []river.InsertManyParams
		var jobRows [][]int64 // rows of each job, parallel to params
		var jobRepos []string // repository of each job, parallel to params
		var closedRepos, closedReasons []string
		var closedIDs []int64
		closeRow := func(repo string, id int64, reason string) {
			closedRepos, closedIDs, closedReasons = append(closedRepos, repo), append(closedIDs, id), append(closedReasons, reason)
		}
		for _, f := range files {
			st := states[fileKey{f.repo, f.id}]
			var ids []int64
			var pois []json.RawMessage
			for i, id := range f.rows {
				switch v := f.versions[i]; {
				case st.version == 0:
					closeRow(f.repo, id, FileGoneReason(f.repo, f.id, st.repoGone))
				case v != nil && *v != st.version:
					closeRow(f.repo, id, OtherVersionReason(*v, st.version))
				default: // of the current version (or recorded before versions were: taken as current)
					ids, pois = append(ids, id), append(pois, f.pois[i])
				}
			}
			if len(ids) == 0 {
				continue
			}
			start := 0
			for _, end := range outbox.Split(pois, r.cfg.MaxJobBytes) {
				params = append(params, r.jobParams(f.repo, f.id, st.version, pois[start:end], ids[start:end], opts))
				jobRows, jobRepos = append(jobRows, ids[start:end]), append(jobRepos, f.repo)
				start = end
			}
		}
		c.superseded = int64(len(closedIDs))
		if len(closedIDs) > 0 {
			if _, err := tx.Exec(ctx, `
				UPDATE failed_pois f
				SET status = 'superseded', superseded_at = now(), superseded_reason = u.reason, updated_at = now()
				FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(repo, id, reason)
				WHERE f.repository = u.repo AND f.id = u.id`+sameRepository(only, "f.", 4), append([]any{closedRepos, closedIDs, closedReasons}, repoArg(only)...)...); err != nil {
				return fmt.Errorf("error superseding %d rows: %w", len(closedIDs), err)
			}
		}
		if len(params) > 0 {
			inserted, err := r.jobs.InsertManyTx(ctx, tx, params)
			if err != nil {
				return fmt.Errorf("error enqueuing %d reprocess jobs: %w", len(params), err)
			}
			if len(inserted) != len(params) {
				return fmt.Errorf("error enqueuing reprocess jobs: %d inserted for %d asked", len(inserted), len(params))
			}
			rowRepos := make([]string, 0, c.rows)
			ids := make([]int64, 0, c.rows)
			jobIDs := make([]int64, 0, c.rows)
			for i, res := range inserted {
				for _, id := range jobRows[i] {
					rowRepos, ids, jobIDs = append(rowRepos, jobRepos[i]), append(ids, id), append(jobIDs, res.Job.ID)
				}
			}
			if _, err := tx.Exec(ctx, `
				UPDATE failed_pois f
				SET status = 'reprocessing', reprocess_job_id = u.job_id, reprocess_requested_at = now(), updated_at = now()
				FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(repo, id, job_id)
				WHERE f.repository = u.repo AND f.id = u.id`+sameRepository(only, "f.", 4), append([]any{rowRepos, ids, jobIDs}, repoArg(only)...)...); err != nil {
				return fmt.Errorf("error marking %d rows reprocessing: %w", len(ids), err)
			}
		}
		c.jobs = int64(len(params))
		counts := map[string]int64{"jobs": c.jobs}
		if c.superseded > 0 {
			counts["superseded"] = c.superseded
		}
		return addToEventTx(ctx, tx, eventID, c.rows-c.superseded, counts)
	})
	if err != nil {
		return chunkResult{}, err
	}
	return c, nil
}

// sameRepository is the condition, on alias's repository, that routes a
// statement of a chunk of repository only (nil: none) to its shard, with
// only as parameter $n (repoArg).
func sameRepository(only *string, alias string, n int) string {
	if only == nil {
		return ""
	}
	return ` AND ` + alias + `repository = $` + strconv.Itoa(n)
}

// repoArg is sameRepository's parameter.
func repoArg(only *string) []any {
	if only == nil {
		return nil
	}
	return []any{*only}
}

// jobParams builds one reprocess job. Its ChangedNames are the POIs' names:
// a POI that resolves now may enter the symbol table for the first time,
// so references to its name from other files are resolved again.
func (r *Reprocessor) jobParams(repo, fileID string, version int64, pois []json.RawMessage, rows []int64, opts *river.InsertOpts) river.InsertManyParams {
	var names []string
	seen := map[string]bool{}
	for _, raw := range pois {
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &p) == nil && p.Name != "" && !seen[p.Name] {
			seen[p.Name] = true
			names = append(names, p.Name)
		}
	}
	return river.InsertManyParams{
		Args:       outbox.ResolveFileArgs{Repository: repo, FileID: fileID, FileVersion: version, POIs: pois, FailedPOIIDs: rows, ChangedNames: names},
		InsertOpts: opts,
	}
}
