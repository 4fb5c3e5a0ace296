package failed

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/deadletter"
)

// Audit actions written to dead_letter_events by the failed_pois
// operations (target 'failed_pois').
const (
	// ActionReprocess: `relay reprocess` moved item_count rows to
	// reprocessing and enqueued their jobs (one event per run; its count
	// grows in the same transaction as each chunk, so it always matches what
	// was committed).
	ActionReprocess = "reprocess"
	// ActionReprocessOutcome: a reprocess job recorded its rows' outcomes
	// (one event per job).
	ActionReprocessOutcome = "reprocess_outcome"
	// ActionIgnore: `relay failed ignore` set rows aside.
	ActionIgnore = "ignore"
	// ActionPurge: `relay failed purge` deleted rows (one event per run).
	ActionPurge = "purge"
)

// InsertEventTx records one audit event on failed_pois in tx and returns
// its id; details is encoded as JSON.
func InsertEventTx(ctx context.Context, tx pgx.Tx, actor, action string, count int64, details any) (int64, error) {
	d, err := json.Marshal(details)
	if err != nil {
		return 0, fmt.Errorf("error encoding audit details: %w", err)
	}
	var id int64
	err = tx.QueryRow(ctx, `
		INSERT INTO dead_letter_events (actor, action, target, item_count, details)
		VALUES ($1, $2, 'failed_pois', $3, $4::jsonb) RETURNING id`,
		deadletter.StorableText(strings.TrimSpace(actor)), action, count, string(d)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("error recording %s audit event: %w", action, err)
	}
	return id, nil
}

// addToEventTx adds n to an event's item_count and each of counts to the
// same-named number in its details.
func addToEventTx(ctx context.Context, tx pgx.Tx, id, n int64, counts map[string]int64) error {
	keys := make([]string, 0, len(counts))
	vals := make([]int64, 0, len(counts))
	for k, v := range counts {
		keys, vals = append(keys, k), append(vals, v)
	}
	_, err := tx.Exec(ctx, `
		UPDATE dead_letter_events e
		SET item_count = e.item_count + $2,
		    details = e.details || coalesce((
		        SELECT jsonb_object_agg(k, coalesce((e.details->>k)::bigint, 0) + v)
		        FROM unnest($3::text[], $4::bigint[]) AS u(k, v)), '{}')
		WHERE e.id = $1`, id, n, keys, vals)
	if err != nil {
		return fmt.Errorf("error updating audit event %d: %w", id, err)
	}
	return nil
}
