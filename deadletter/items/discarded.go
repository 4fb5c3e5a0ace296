package items

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/internal/agent"
)

// riverAttemptError is one element of river_job.errors.
type riverAttemptError struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	Trace   string    `json:"trace"`
}

// CaptureDiscarded copies River jobs of the given kind that River discarded
// (attempts exhausted, or discarded by River itself, e.g. by its rescuer)
// into dead_lettered_items, with job_id set to the kind and item_id to the
// River job id, so they outlive River's cleaner. Jobs already captured are
// skipped, so it is safe to run repeatedly and from several workers. It works
// in pages and returns how many jobs it captured.
//
// expand, when not nil, turns a job's stored args into the form kept as
// item_data (resolve_file args store their POIs compressed; the copy keeps
// them readable). Args it cannot expand are kept as stored.
func CaptureDiscarded(ctx context.Context, pool *pgxpool.Pool, kind string, expand func(args []byte) ([]byte, error)) (int, error) {
	total := 0
	for {
		n, err := captureDiscardedPage(ctx, pool, kind, expand, 500)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

func captureDiscardedPage(ctx context.Context, pool *pgxpool.Pool, kind string, expand func([]byte) ([]byte, error), limit int) (int, error) {
	rows, err := pool.Query(ctx, `
		SELECT j.id, j.args, array_to_json(j.errors), j.created_at, coalesce(j.attempted_at, j.created_at), j.attempt
		FROM river_job j
		WHERE j.kind = $1 AND j.state = 'discarded'
		  AND NOT EXISTS (SELECT 1 FROM dead_lettered_items d WHERE d.job_id = $1 AND d.item_id = j.id::text)
		ORDER BY j.id
		LIMIT $2`, kind, limit)
	if err != nil {
		return 0, fmt.Errorf("error listing discarded %s jobs: %w", kind, err)
	}
	type captured struct {
		id                    int64
		args                  []byte
		first, last           time.Time
		count                 int
		history, sig, errType string
	}
	var found []captured
	for rows.Next() {
		var (
			c      captured
			errs   []riverAttemptError
			rawErr []byte
		)
		if err := rows.Scan(&c.id, &c.args, &rawErr, &c.first, &c.last, &c.count); err != nil {
			rows.Close()
			return 0, fmt.Errorf("error reading discarded %s jobs: %w", kind, err)
		}
		if expand != nil {
			if readable, err := expand(c.args); err == nil {
				c.args = readable
			}
		}
		if len(rawErr) > 0 {
			if err := json.Unmarshal(rawErr, &errs); err != nil {
				errs = []riverAttemptError{{At: c.last, Attempt: c.count, Error: "unreadable River errors: " + err.Error()}}
			}
		}
		hist := make([]agent.FailureDetail, 0, len(errs))
		for _, e := range errs {
			hist = append(hist, agent.FailureDetail{AttemptNumber: e.Attempt, Timestamp: e.At, ErrorType: agent.ErrorTypeUnknown,
				ErrorMessage: deadletter.StorableText(e.Error), StackTrace: tail(deadletter.StorableText(e.Trace), 4096), StepFailed: kind})
		}
		last := "discarded by River without a recorded error (rescued or unknown kind)"
		if len(errs) > 0 {
			last = errs[len(errs)-1].Error
		}
		h, _ := json.Marshal(hist)
		c.history, c.sig, c.errType = string(h), deadletter.Signature(last), "Unknown"
		found = append(found, c)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("error reading discarded %s jobs: %w", kind, err)
	}
	if len(found) == 0 {
		return 0, nil
	}
	b := &pgx.Batch{}
	for _, c := range found {
		b.Queue(`
			INSERT INTO dead_lettered_items (job_id, item_id, item_data, first_attempt, last_attempt, failure_count,
			                                 failure_history, error_signature, error_type, reprocess_eligible)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, true)
			ON CONFLICT ON CONSTRAINT dead_lettered_items_job_item_key DO NOTHING`,
			kind, fmt.Sprint(c.id), string(c.args), c.first, c.last, c.count, c.history, c.sig, c.errType)
	}
	b.Queue(`INSERT INTO dead_letter_events (actor, action, target, item_count, details)
		VALUES ('relay-worker', 'item_added', 'dead_lettered_items', $1, jsonb_build_object('source', 'river discarded', 'kind', $2::text))`,
		len(found), kind)
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("error capturing discarded %s jobs: %w", kind, err)
	}
	return len(found), nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
