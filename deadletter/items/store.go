package items

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EvictionPercent is the share of a job's dead-lettered items evicted, oldest
// first_attempt first, when the job goes over its max_items.
const EvictionPercent = 10

// The actions recorded in dead_letter_events for dead_lettered_items. Only
// writes are recorded: reading the DLQ (list, analyze, export) is not.
const (
	EventItemAdded        = "item_added"
	EventItemRemoved      = "item_removed"
	EventItemsReprocessed = "items_reprocessed"
	EventItemsEvicted     = "items_evicted"
)

// ErrNotFound is returned when no dead_lettered_items row matches.
var ErrNotFound = errors.New("dead-lettered item not found")

// AmbiguousError is returned when an item id names items of several jobs.
type AmbiguousError struct {
	ItemID string
	JobIDs []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("item %q is dead-lettered in %d jobs (%v); say which with --job-id", e.ItemID, len(e.JobIDs), e.JobIDs)
}

// InvalidFilterError is a --filter expression PostgreSQL rejected.
type InvalidFilterError struct {
	Expr string
	Err  error
}

func (e *InvalidFilterError) Error() string {
	return fmt.Sprintf("invalid --filter %q: %v (a JSONPath predicate over the row, e.g. $.error_type == \"Timeout\"; "+
		"strings take double quotes)", e.Expr, e.Err)
}

func (e *InvalidFilterError) Unwrap() error { return e.Err }

// Store reads and writes dead_lettered_items and records what it does in
// dead_letter_events (and the log).
type Store struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
}

// NewStore returns a store over pool.
func NewStore(pool *pgxpool.Pool, logger *slog.Logger) *Store {
	return &Store{pool: pool, logger: logger}
}

// AddResult is what AddTx did.
type AddResult struct {
	// Inserted is false when the item was already in the table (a retry
	// from the DLQ failed again) and its row was updated.
	Inserted        bool
	DeadLetterCount int
	// Evicted counts rows evicted to make room; OldestEvicted is the
	// earliest first_attempt among them.
	Evicted       int
	OldestEvicted time.Time
}

// AddTx writes it to dead_lettered_items in tx. When the item is already
// there its history is appended to (entries with an attempt_number above the
// row's last are added, so passing the whole history again is safe), its
// status goes back to dead_lettered and it is marked for manual review.
// When the job then holds more than maxItems items (reprocessed rows aside),
// the oldest EvictionPercent of maxItems by first_attempt are evicted, and
// an items_evicted event records how many and the oldest timestamp. An
// item_added event is always written.
func (s *Store) AddTx(ctx context.Context, tx pgx.Tx, it *Item, maxItems int, actor string) (*AddResult, error) {
	history, err := json.Marshal(it.FailureHistory)
	if err != nil {
		return nil, fmt.Errorf("error encoding failure history of item %q: %w", it.ItemID, err)
	}
	// JSON goes as text (string), not []byte: pgx's exec mode, used behind
	// a transaction pooler, sends a []byte as bytea, which is no JSON.
	var artifacts *string
	if it.WorktreeArtifacts != nil {
		b, err := json.Marshal(it.WorktreeArtifacts)
		if err != nil {
			return nil, fmt.Errorf("error encoding worktree artifacts of item %q: %w", it.ItemID, err)
		}
		artifacts = new(string(b))
	}
	data := it.ItemData
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	res := &AddResult{}
	err = tx.QueryRow(ctx, `
		INSERT INTO dead_lettered_items AS d (job_id, item_id, item_data, first_attempt, last_attempt, failure_count,
		    failure_history, error_signature, error_type, exit_code, worktree_artifacts, reprocess_eligible,
		    manual_review_required, status, dead_letter_count, dead_lettered_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, jsonb_array_length($6::jsonb), $6::jsonb, $7, $8, $9, $10, $11, $12, 'dead_lettered', 1, now(), now())
		ON CONFLICT ON CONSTRAINT dead_lettered_items_job_item_key DO UPDATE SET
		    item_data = EXCLUDED.item_data,
		    first_attempt = least(d.first_attempt, EXCLUDED.first_attempt),
		    last_attempt = greatest(d.last_attempt, EXCLUDED.last_attempt),
		    failure_history = d.failure_history || coalesce((
		        SELECT jsonb_agg(e ORDER BY (e->>'attempt_number')::int)
		        FROM jsonb_array_elements(EXCLUDED.failure_history) e
		        WHERE (e->>'attempt_number')::int > coalesce((
		            SELECT max((x->>'attempt_number')::int) FROM jsonb_array_elements(d.failure_history) x), 0)), '[]'),
		    failure_count = jsonb_array_length(d.failure_history) + coalesce((
		        SELECT count(*)::int FROM jsonb_array_elements(EXCLUDED.failure_history) e
		        WHERE (e->>'attempt_number')::int > coalesce((
		            SELECT max((x->>'attempt_number')::int) FROM jsonb_array_elements(d.failure_history) x), 0)), 0),
		    error_signature = EXCLUDED.error_signature,
		    error_type = EXCLUDED.error_type,
		    exit_code = EXCLUDED.exit_code,
		    worktree_artifacts = coalesce(EXCLUDED.worktree_artifacts, d.worktree_artifacts),
		    reprocess_eligible = EXCLUDED.reprocess_eligible,
		    manual_review_required = true,
		    status = 'dead_lettered',
		    dead_letter_count = d.dead_letter_count + 1,
		    dead_lettered_at = now(),
		    updated_at = now()
		RETURNING (xmax = 0), dead_letter_count`,
		it.JobID, it.ItemID, string(data), it.FirstAttempt, it.LastAttempt, string(history), it.ErrorSignature,
		string(it.ErrorType), it.ExitCode, artifacts, it.ReprocessEligible, it.ManualReviewRequired,
	).Scan(&res.Inserted, &res.DeadLetterCount)
	if err != nil {
		return nil, fmt.Errorf("error writing dead-lettered item %q of job %q: %w", it.ItemID, it.JobID, err)
	}
	if err := s.eventTx(ctx, tx, actor, EventItemAdded, 1, map[string]any{
		"job_id": it.JobID, "item_id": it.ItemID, "error_type": it.ErrorType, "failure_count": it.FailureCount,
		"dead_letter_count": res.DeadLetterCount,
	}); err != nil {
		return nil, err
	}
	if res.Inserted && maxItems > 0 {
		if err := s.enforceCapacityTx(ctx, tx, it.JobID, it.ItemID, maxItems, actor, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// EvictionCount is how many items are evicted when a job with maxItems goes
// over: EvictionPercent of maxItems, rounded up, at least one.
func EvictionCount(maxItems int) int {
	return max(1, (maxItems*EvictionPercent+99)/100)
}

func (s *Store) enforceCapacityTx(ctx context.Context, tx pgx.Tx, jobID, keepItemID string, maxItems int, actor string, res *AddResult) error {
	// Adds to one job count under a per-job lock held until commit: every
	// add that counted before this one has committed, so the count includes
	// it, and an add that has inserted but not counted yet will count this
	// one. The last add to count sees every row and evicts.
	var n int
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('relay-dlq-capacity:' || $1, 0))`, jobID); err != nil {
		return fmt.Errorf("error locking dead-letter capacity of job %q: %w", jobID, err)
	}
	err := tx.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::int FROM dead_lettered_items_counts WHERE job_id = $1`, jobID).Scan(&n)
	if err != nil {
		return fmt.Errorf("error counting dead-lettered items of job %q: %w", jobID, err)
	}
	if n <= maxItems {
		return nil
	}
	evict := max(EvictionCount(maxItems), n-maxItems)
	rows, err := tx.Query(ctx, `
		DELETE FROM dead_lettered_items d USING (
		    SELECT id FROM dead_lettered_items
		    WHERE job_id = $1 AND status <> 'reprocessed' AND item_id <> $2
		    ORDER BY first_attempt, id LIMIT $3) v
		WHERE d.id = v.id
		RETURNING d.item_id, d.first_attempt`, jobID, keepItemID, evict)
	if err != nil {
		return fmt.Errorf("error evicting dead-lettered items of job %q: %w", jobID, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		var first time.Time
		if err := rows.Scan(&id, &first); err != nil {
			rows.Close()
			return fmt.Errorf("error evicting dead-lettered items of job %q: %w", jobID, err)
		}
		if len(ids) < 100 {
			ids = append(ids, id)
		}
		if res.OldestEvicted.IsZero() || first.Before(res.OldestEvicted) {
			res.OldestEvicted = first
		}
		res.Evicted++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error evicting dead-lettered items of job %q: %w", jobID, err)
	}
	s.logger.WarnContext(ctx, "dead-letter queue of job over capacity: oldest items evicted",
		slog.String("job_id", jobID), slog.Int("max_items", maxItems), slog.Int("evicted", res.Evicted),
		slog.Time("oldest_first_attempt", res.OldestEvicted))
	return s.eventTx(ctx, tx, actor, EventItemsEvicted, res.Evicted, map[string]any{
		"job_id": jobID, "count": res.Evicted, "oldest_timestamp": res.OldestEvicted, "max_items": maxItems,
		"item_ids": ids,
	})
}

// itemExecer is what writing an event needs: a pool or a transaction.
type itemExecer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// eventTx records an event about dead_lettered_items and logs it.
func (s *Store) eventTx(ctx context.Context, q itemExecer, actor, action string, count int, details map[string]any) error {
	d, err := json.Marshal(details)
	if err != nil {
		return fmt.Errorf("error encoding %s event: %w", action, err)
	}
	if _, err := q.Exec(ctx, `INSERT INTO dead_letter_events (actor, action, target, item_count, details)
		VALUES ($1, $2, 'dead_lettered_items', $3, $4)`, actor, action, count, string(d)); err != nil {
		return fmt.Errorf("error recording %s event: %w", action, err)
	}
	attrs := []any{slog.String("action", action), slog.String("actor", actor), slog.Int("count", count)}
	for _, k := range []string{"job_id", "item_id", "reason", "error_type"} {
		if v, ok := details[k]; ok {
			attrs = append(attrs, slog.Any(k, v))
		}
	}
	s.logger.InfoContext(ctx, "dead-letter event", attrs...)
	return nil
}

// RecordEvent records an event outside any other write (e.g.
// items_reprocessed when a `relay dlq retry --wait` has finished).
func (s *Store) RecordEvent(ctx context.Context, actor, action string, count int, details map[string]any) error {
	return s.eventTx(ctx, s.pool, actor, action, count, details)
}
