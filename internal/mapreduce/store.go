package mapreduce

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/agent"
)

// Inserter inserts River jobs in a caller's transaction; *river.Client[pgx.Tx]
// is one.
type Inserter interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Store reads and writes mapreduce_jobs and mapreduce_items.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a store over pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// insertChunk bounds the River jobs inserted by one statement.
const insertChunk = 2000

// CreateTx registers job and its items and enqueues one River job per item,
// all in tx: either the whole job is queued or nothing is. It returns
// ErrJobExists when the id is taken.
func (s *Store) CreateTx(ctx context.Context, tx pgx.Tx, ins Inserter, job *Job, items []Item) error {
	if err := job.Validate(); err != nil {
		return err
	}
	job.ItemCount = len(items)
	job.AgentEnv = agent.EnvNames(job.AgentEnv)
	_, err := tx.Exec(ctx, `
		INSERT INTO mapreduce_jobs (job_id, agent, input_path, item_count, max_retries, parallel, timeout_ms,
		    retry_backoff_ms, dlq_max_items, dlq_include_errors, dlq_exclude_errors, agent_env)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		job.ID, job.Agent, job.InputPath, job.ItemCount, job.MaxRetries, job.Parallel, job.Timeout.Milliseconds(),
		job.RetryBackoff.Milliseconds(), job.DLQMaxItems, typeNames(job.Policy.IncludeErrors), typeNames(job.Policy.ExcludeErrors),
		job.AgentEnv)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return fmt.Errorf("job %q: %w", job.ID, ErrJobExists)
		}
		return fmt.Errorf("error registering job %q: %w", job.ID, err)
	}
	ids := make([]string, len(items))
	positions := make([]int32, len(items))
	data := make([]string, len(items))
	for i, it := range items {
		ids[i], positions[i], data[i] = it.ID, int32(it.Position), string(it.Data)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO mapreduce_items (job_id, item_id, position, item_data)
		SELECT $1, u.id, u.pos, u.data::jsonb FROM unnest($2::text[], $3::int[], $4::text[]) AS u(id, pos, data)`,
		job.ID, ids, positions, data); err != nil {
		return fmt.Errorf("error registering items of job %q: %w", job.ID, err)
	}
	return s.enqueueTx(ctx, tx, ins, job, ids, job.MaxRetries)
}

// enqueueTx inserts a River job for each item (maxRetries+1 attempts) and
// makes it the item's current job, status pending.
func (s *Store) enqueueTx(ctx context.Context, tx pgx.Tx, ins Inserter, job *Job, itemIDs []string, maxRetries int) error {
	for start := 0; start < len(itemIDs); start += insertChunk {
		chunk := itemIDs[start:min(start+insertChunk, len(itemIDs))]
		params := make([]river.InsertManyParams, len(chunk))
		for i, id := range chunk {
			params[i] = river.InsertManyParams{
				Args: ItemArgs{JobID: job.ID, ItemID: id, TimeoutMS: job.Timeout.Milliseconds(),
					RetryBackoffMS: job.RetryBackoff.Milliseconds()},
				InsertOpts: &river.InsertOpts{Queue: cmp.Or(job.Queue, Queue), MaxAttempts: maxRetries + 1,
					Metadata: []byte(`{"mapreduce_job_id":` + strconv.Quote(job.ID) + `}`)},
			}
		}
		res, err := ins.InsertManyTx(ctx, tx, params)
		if err != nil {
			return fmt.Errorf("error enqueueing items of job %q: %w", job.ID, err)
		}
		riverIDs := make([]int64, len(res))
		for i, r := range res {
			riverIDs[i] = r.Job.ID
		}
		if _, err := tx.Exec(ctx, `
			UPDATE mapreduce_items i SET river_job_id = u.rid, status = 'pending', finished_at = NULL, updated_at = now()
			FROM unnest($2::text[], $3::bigint[]) AS u(id, rid)
			WHERE i.job_id = $1 AND i.item_id = u.id`, job.ID, chunk, riverIDs); err != nil {
			return fmt.Errorf("error recording River jobs of job %q: %w", job.ID, err)
		}
	}
	return nil
}

// RequeueTx puts items of job back in the work queue with maxRetries
// retries (resume and `relay dlq retry`), and adds job.AgentEnv's names to
// those the job records (job.AgentEnv becomes their union): its agents are
// given them from now on.
func (s *Store) RequeueTx(ctx context.Context, tx pgx.Tx, ins Inserter, job *Job, itemIDs []string, maxRetries int) error {
	if len(itemIDs) == 0 {
		return nil
	}
	for _, n := range job.AgentEnv {
		if err := agent.CheckEnvName(n); err != nil {
			return fmt.Errorf("job %q: agent_env: %w", job.ID, err)
		}
	}
	// One statement: two retries adding different names keep both.
	if err := tx.QueryRow(ctx, `
		UPDATE mapreduce_jobs SET agent_env = ARRAY(SELECT DISTINCT n FROM unnest(agent_env || $2::text[]) AS n ORDER BY n)
		WHERE job_id = $1 RETURNING agent_env`, job.ID, agent.EnvNames(job.AgentEnv)).Scan(&job.AgentEnv); err != nil {
		return fmt.Errorf("error recording agent_env of job %q: %w", job.ID, err)
	}
	return s.enqueueTx(ctx, tx, ins, job, itemIDs, maxRetries)
}

// MoveQueuedTx puts job's items that wait in any River queue (available,
// scheduled or retryable; not running) on queue, and returns how many it
// moved. A --wait run takes its job's items with it; a resume hands the
// items an interrupted --wait run left in its own queue back to 'relay
// worker'.
func (s *Store) MoveQueuedTx(ctx context.Context, tx pgx.Tx, jobID, queue string) (int, error) {
	tag, err := tx.Exec(ctx, `
		UPDATE river_job j SET queue = $2
		FROM mapreduce_items i
		WHERE i.job_id = $1 AND i.status = 'pending' AND j.id = i.river_job_id
		  AND j.state IN ('available', 'scheduled', 'retryable', 'pending') AND j.queue <> $2`, jobID, queue)
	if err != nil {
		return 0, fmt.Errorf("error moving items of job %q to queue %q: %w", jobID, queue, err)
	}
	return int(tag.RowsAffected()), nil
}

// MoveQueued is MoveQueuedTx in its own transaction.
func (s *Store) MoveQueued(ctx context.Context, jobID, queue string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		n, err = s.MoveQueuedTx(ctx, tx, jobID, queue)
		return err
	})
	return n, err
}

// UnfinishedTx locks and returns job's items that never finished and have
// no River job that will finish them: pending, with their current River job
// gone (deleted, or completed without the item succeeding). Items whose job
// River discarded or cancelled are not among them: they belong to the
// dead-letter sweep (CaptureDiscarded).
func (s *Store) UnfinishedTx(ctx context.Context, tx pgx.Tx, jobID string) ([]string, error) {
	rows, err := tx.Query(ctx, `
		SELECT i.item_id FROM mapreduce_items i LEFT JOIN river_job j ON j.id = i.river_job_id
		WHERE i.job_id = $1 AND i.status = 'pending' AND (j.id IS NULL OR j.state = 'completed')
		ORDER BY i.position FOR UPDATE OF i`, jobID)
	if err != nil {
		return nil, fmt.Errorf("error finding unfinished items of job %q: %w", jobID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("error finding unfinished items of job %q: %w", jobID, err)
	}
	return ids, nil
}

// Job reads one job, or ErrJobNotFound.
func (s *Store) Job(ctx context.Context, id string) (*Job, error) {
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM mapreduce_jobs WHERE job_id = $1`, id), id)
}

const jobColumns = `job_id, agent, input_path, item_count, max_retries, parallel, timeout_ms, retry_backoff_ms,
	dlq_max_items, dlq_include_errors, dlq_exclude_errors, agent_env, created_at`

func scanJob(row pgx.Row, id string) (*Job, error) {
	var (
		j                Job
		timeout, backoff int64
		include, exclude []string
	)
	err := row.Scan(&j.ID, &j.Agent, &j.InputPath, &j.ItemCount, &j.MaxRetries, &j.Parallel, &timeout, &backoff,
		&j.DLQMaxItems, &include, &exclude, &j.AgentEnv, &j.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("job %q: %w", id, ErrJobNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading job %q: %w", id, err)
	}
	j.Timeout, j.RetryBackoff = time.Duration(timeout)*time.Millisecond, time.Duration(backoff)*time.Millisecond
	j.Policy = Policy{IncludeErrors: toTypes(include), ExcludeErrors: toTypes(exclude)}
	return &j, nil
}

func typeNames(ts []agent.ErrorType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

func toTypes(names []string) []agent.ErrorType {
	out := make([]agent.ErrorType, len(names))
	for i, n := range names {
		out[i] = agent.ErrorType(n)
	}
	return out
}

// Item statuses in mapreduce_items.
const (
	ItemPending      = "pending"
	ItemSucceeded    = "succeeded"
	ItemDeadLettered = "dead_lettered"
)

// WorkItem is what the worker needs to run one item.
type WorkItem struct {
	Job        *Job
	ItemID     string
	Data       json.RawMessage
	Status     string
	Attempts   int
	RiverJobID int64 // the item's current River job; 0 when none
}

// ErrItemNotFound is returned for an item mapreduce_items does not hold.
var ErrItemNotFound = errors.New("MapReduce item not found")

// LoadItem reads an item and its job.
func (s *Store) LoadItem(ctx context.Context, jobID, itemID string) (*WorkItem, error) {
	var (
		w   WorkItem
		rid *int64
	)
	row := s.pool.QueryRow(ctx, `
		SELECT i.item_data, i.status, i.attempts, i.river_job_id, m.job_id, m.agent, m.input_path, m.item_count, m.max_retries, m.parallel,
		       m.timeout_ms, m.retry_backoff_ms, m.dlq_max_items, m.dlq_include_errors, m.dlq_exclude_errors, m.agent_env, m.created_at
		FROM mapreduce_items i JOIN mapreduce_jobs m USING (job_id)
		WHERE i.job_id = $1 AND i.item_id = $2`, jobID, itemID)
	var (
		j                Job
		timeout, backoff int64
		include, exclude []string
		data             []byte
	)
	err := row.Scan(&data, &w.Status, &w.Attempts, &rid, &j.ID, &j.Agent, &j.InputPath, &j.ItemCount, &j.MaxRetries,
		&j.Parallel, &timeout, &backoff, &j.DLQMaxItems, &include, &exclude, &j.AgentEnv, &j.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("item %q of job %q: %w", itemID, jobID, ErrItemNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading item %q of job %q: %w", itemID, jobID, err)
	}
	j.Timeout, j.RetryBackoff = time.Duration(timeout)*time.Millisecond, time.Duration(backoff)*time.Millisecond
	j.Policy = Policy{IncludeErrors: toTypes(include), ExcludeErrors: toTypes(exclude)}
	w.Job, w.ItemID, w.Data = &j, itemID, json.RawMessage(data)
	if rid != nil {
		w.RiverJobID = *rid
	}
	return &w, nil
}

// Querier runs a query returning one row: a pool or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// RecordFailure appends d to the item's failure history, counts the
// attempt and, when deadLettered, ends the item as dead_lettered. It returns
// the item's data and whole history.
func (s *Store) RecordFailure(ctx context.Context, q Querier, jobID, itemID string, d agent.FailureDetail, deadLettered bool) (json.RawMessage, []agent.FailureDetail, error) {
	if q == nil {
		q = s.pool
	}
	entry, err := json.Marshal([]agent.FailureDetail{d})
	if err != nil {
		return nil, nil, fmt.Errorf("error encoding failure of item %q: %w", itemID, err)
	}
	var data, history []byte
	err = q.QueryRow(ctx, `
		UPDATE mapreduce_items SET failure_history = failure_history || $3::jsonb, attempts = greatest(attempts, $4),
		    status = CASE WHEN $5 THEN 'dead_lettered' ELSE status END,
		    finished_at = CASE WHEN $5 THEN now() ELSE finished_at END, updated_at = now()
		WHERE job_id = $1 AND item_id = $2
		RETURNING item_data, failure_history`, jobID, itemID, string(entry), d.AttemptNumber, deadLettered).Scan(&data, &history)
	if err != nil {
		return nil, nil, fmt.Errorf("error recording failure of item %q of job %q: %w", itemID, jobID, err)
	}
	var hist []agent.FailureDetail
	if err := json.Unmarshal(history, &hist); err != nil {
		return nil, nil, fmt.Errorf("error decoding failure history of item %q: %w", itemID, err)
	}
	return json.RawMessage(data), hist, nil
}

// RecordLostAttempt appends d, an attempt that died with its worker, to the
// item's failure history unless an entry for the same River job and attempt
// is already there. It reports whether it appended.
func (s *Store) RecordLostAttempt(ctx context.Context, jobID, itemID string, d agent.FailureDetail) (bool, error) {
	entry, err := json.Marshal([]agent.FailureDetail{d})
	if err != nil {
		return false, fmt.Errorf("error encoding lost attempt of item %q: %w", itemID, err)
	}
	key, err := json.Marshal([]map[string]any{{"river_job_id": d.RiverJobID, "river_attempt": d.RiverAttempt}})
	if err != nil {
		return false, fmt.Errorf("error encoding lost attempt of item %q: %w", itemID, err)
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE mapreduce_items SET failure_history = failure_history || $3::jsonb, attempts = attempts + 1, updated_at = now()
		WHERE job_id = $1 AND item_id = $2 AND status = 'pending' AND NOT failure_history @> $4::jsonb`,
		jobID, itemID, string(entry), string(key))
	if err != nil {
		return false, fmt.Errorf("error recording lost attempt of item %q of job %q: %w", itemID, jobID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// SucceedTx records in tx that the item succeeded on attempt with result.
func (s *Store) SucceedTx(ctx context.Context, tx pgx.Tx, jobID, itemID string, attempt int, result []byte) error {
	_, err := tx.Exec(ctx, `
		UPDATE mapreduce_items SET status = 'succeeded', attempts = greatest(attempts, $3), result = $4,
		    finished_at = now(), updated_at = now()
		WHERE job_id = $1 AND item_id = $2`, jobID, itemID, attempt, result)
	if err != nil {
		return fmt.Errorf("error recording success of item %q of job %q: %w", itemID, jobID, err)
	}
	return nil
}

// Counts is where a job's items are.
type Counts struct {
	JobID string `json:"job_id"`
	Total int    `json:"total"`
	// Pending: queued, never attempted (in this run).
	Pending int `json:"pending"`
	Running int `json:"running"`
	// Retrying: failed at least once, queued or waiting for the backoff.
	Retrying     int `json:"failed_and_retrying"`
	Succeeded    int `json:"succeeded"`
	DeadLettered int `json:"dead_lettered"`
	// AwaitingCapture: River discarded or cancelled the item's job but the
	// DLQ write failed; the dead-letter sweep will move it to the DLQ.
	AwaitingCapture int `json:"awaiting_capture"`
	// Unfinished: no River job will finish it; `relay mapreduce resume`
	// re-runs it.
	Unfinished int `json:"unfinished"`
}

// Live counts items that a River job will still work.
func (c *Counts) Live() int { return c.Pending + c.Running + c.Retrying }

// Done counts items that reached an end.
func (c *Counts) Done() int { return c.Succeeded + c.DeadLettered }

// Counts reads where job's items are.
func (s *Store) Counts(ctx context.Context, jobID string) (*Counts, error) {
	c := &Counts{JobID: jobID}
	err := s.pool.QueryRow(ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE i.status = 'pending' AND j.state IN ('available', 'scheduled', 'retryable', 'pending') AND i.attempts = 0),
		       count(*) FILTER (WHERE i.status = 'pending' AND j.state = 'running'),
		       count(*) FILTER (WHERE i.status = 'pending' AND j.state IN ('available', 'scheduled', 'retryable', 'pending') AND i.attempts > 0),
		       count(*) FILTER (WHERE i.status = 'succeeded'),
		       count(*) FILTER (WHERE i.status = 'dead_lettered'),
		       count(*) FILTER (WHERE i.status = 'pending' AND j.state IN ('discarded', 'cancelled')),
		       count(*) FILTER (WHERE i.status = 'pending' AND (j.id IS NULL OR j.state = 'completed'))
		FROM mapreduce_items i LEFT JOIN river_job j ON j.id = i.river_job_id
		WHERE i.job_id = $1`, jobID).Scan(&c.Total, &c.Pending, &c.Running, &c.Retrying, &c.Succeeded,
		&c.DeadLettered, &c.AwaitingCapture, &c.Unfinished)
	if err != nil {
		return nil, fmt.Errorf("error counting items of job %q: %w", jobID, err)
	}
	return c, nil
}

// CountSucceeded counts which of itemIDs of jobID have succeeded.
func (s *Store) CountSucceeded(ctx context.Context, jobID string, itemIDs []string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM mapreduce_items WHERE job_id = $1 AND item_id = ANY($2) AND status = 'succeeded'`,
		jobID, itemIDs).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("error counting succeeded items of job %q: %w", jobID, err)
	}
	return n, nil
}

// Jobs returns up to limit jobs, newest first.
func (s *Store) Jobs(ctx context.Context, limit int) ([]*Job, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+jobColumns+` FROM mapreduce_jobs ORDER BY created_at DESC, job_id LIMIT $1`, max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("error listing MapReduce jobs: %w", err)
	}
	defer rows.Close()
	out := []*Job{}
	for rows.Next() {
		j, err := scanJob(rows, "")
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error listing MapReduce jobs: %w", err)
	}
	return out, nil
}

// RetryDeadLettered puts job's dead-lettered items matching filter (a
// JSONPath predicate, items.Store.ClaimForRetryTx; only reprocess_eligible
// items unless force) back in the work queue with maxRetries retries, in
// one transaction, and returns their ids: what `relay dlq retry` does. A bad
// filter gives *items.InvalidFilterError.
func (s *Store) RetryDeadLettered(ctx context.Context, dlq *items.Store, ins Inserter, job *Job, filter string, force bool, maxRetries int) ([]string, error) {
	var ids []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if ids, err = dlq.ClaimForRetryTx(ctx, tx, job.ID, filter, force); err != nil {
			return err
		}
		return s.RequeueTx(ctx, tx, ins, job, ids, maxRetries)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}
