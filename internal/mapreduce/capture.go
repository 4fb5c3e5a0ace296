package mapreduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/agent"
)

// riverError is one element of river_job.errors.
type riverError struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	Trace   string    `json:"trace"`
}

// CaptureDiscarded moves into dead_lettered_items every item whose current
// River job ended discarded or cancelled while the item is still pending:
// the worker's DLQ write failed (River kept the job and its errors), or
// River itself discarded it (rescued too often). The entry's history is the
// item's recorded attempts, or River's errors when none were recorded. Each
// item is captured in its own transaction; the first failure stops the
// sweep and is returned with the count so far. Safe to run repeatedly and
// concurrently.
func CaptureDiscarded(ctx context.Context, pool *pgxpool.Pool, dlq *items.Store, actor string) (int, error) {
	total := 0
	for {
		n, err := captureDiscardedPage(ctx, pool, dlq, actor, 200)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

func captureDiscardedPage(ctx context.Context, pool *pgxpool.Pool, dlq *items.Store, actor string, limit int) (int, error) {
	type candidate struct {
		jobID, itemID string
		riverID       int64
	}
	rows, err := pool.Query(ctx, `
		SELECT i.job_id, i.item_id, j.id
		FROM river_job j
		JOIN mapreduce_items i ON i.river_job_id = j.id
		WHERE j.kind = $1 AND j.state IN ('discarded', 'cancelled') AND i.status = 'pending'
		ORDER BY j.id LIMIT $2`, Kind, limit)
	if err != nil {
		return 0, fmt.Errorf("error listing discarded MapReduce items: %w", err)
	}
	var found []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.jobID, &c.itemID, &c.riverID); err != nil {
			rows.Close()
			return 0, fmt.Errorf("error listing discarded MapReduce items: %w", err)
		}
		found = append(found, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("error listing discarded MapReduce items: %w", err)
	}
	n := 0
	for _, c := range found {
		captured, err := captureOne(ctx, pool, dlq, actor, c.jobID, c.itemID, c.riverID)
		if err != nil {
			return n, err
		}
		if captured {
			n++
		}
	}
	return n, nil
}

func captureOne(ctx context.Context, pool *pgxpool.Pool, dlq *items.Store, actor, jobID, itemID string, riverID int64) (bool, error) {
	captured := false
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var (
			data, history, errs []byte
			maxItems, attempts  int
		)
		// Lock the item and re-check under the lock: another sweep or a
		// resume may have got here first.
		err := tx.QueryRow(ctx, `
			SELECT i.item_data, i.failure_history, coalesce(array_to_json(j.errors), '[]'), m.dlq_max_items, i.attempts
			FROM mapreduce_items i JOIN mapreduce_jobs m USING (job_id) JOIN river_job j ON j.id = i.river_job_id
			WHERE i.job_id = $1 AND i.item_id = $2 AND i.river_job_id = $3 AND i.status = 'pending'
			  AND j.state IN ('discarded', 'cancelled')
			FOR UPDATE OF i SKIP LOCKED`, jobID, itemID, riverID).Scan(&data, &history, &errs, &maxItems, &attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		var hist []agent.FailureDetail
		if err := json.Unmarshal(history, &hist); err != nil {
			return fmt.Errorf("error decoding failure history of item %q: %w", itemID, err)
		}
		var re []riverError
		_ = json.Unmarshal(errs, &re)
		if len(hist) > 0 {
			// Attempts lost with a killed worker after the last recorded
			// one (the last of them may be why River discarded the job).
			recorded := map[int]bool{}
			for _, h := range hist {
				if h.RiverJobID == riverID && h.RiverAttempt > 0 {
					recorded[h.RiverAttempt] = true
				}
			}
			for _, e := range re {
				if lostAttempt(e.Error) && !recorded[e.Attempt] {
					attempts++
					hist = append(hist, lostAttemptDetail(attempts, e, "", riverID))
				}
			}
		}
		if len(hist) == 0 {
			for _, e := range re {
				attempts++
				hist = append(hist, agent.FailureDetail{AttemptNumber: attempts, Timestamp: e.At,
					ErrorType: agent.ErrorTypeUnknown, ErrorMessage: e.Error, StackTrace: e.Trace,
					StepFailed: Kind, RiverJobID: riverID})
			}
			if len(hist) == 0 {
				attempts++
				hist = append(hist, agent.FailureDetail{AttemptNumber: attempts, Timestamp: time.Now().UTC(),
					ErrorType: agent.ErrorTypeUnknown, StepFailed: Kind, RiverJobID: riverID,
					ErrorMessage: "River discarded the job without a recorded error"})
			}
		}
		it := items.NewItem(jobID, itemID, json.RawMessage(data), hist)
		if _, err := dlq.AddTx(ctx, tx, &it, maxItems, actor); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE mapreduce_items SET status = 'dead_lettered', failure_history = $3,
			attempts = greatest(attempts, $4), finished_at = now(), updated_at = now() WHERE job_id = $1 AND item_id = $2`,
			jobID, itemID, historyJSON(hist), attempts); err != nil {
			return err
		}
		captured = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("error capturing discarded item %q of job %q: %w", itemID, jobID, err)
	}
	return captured, nil
}

// historyJSON is v as JSON text: a string, which pgx's exec mode (behind a
// transaction pooler) sends as text, where a []byte would go as bytea.
func historyJSON(v []agent.FailureDetail) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "[]"
	}
	return string(b)
}

// Sweep captures into dead_lettered_items the MapReduce items whose
// River job ended discarded or cancelled without the item reaching the DLQ
// (its DLQ write failed, or River discarded the job itself).
func Sweep(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	n, err := CaptureDiscarded(ctx, pool, items.NewStore(pool, logger), deadletter.WorkerActor)
	if n > 0 {
		logger.WarnContext(ctx, "captured discarded MapReduce items into dead_lettered_items", slog.Int("count", n))
	}
	if err != nil {
		return fmt.Errorf("error sweeping discarded MapReduce items: %w", err)
	}
	return nil
}
