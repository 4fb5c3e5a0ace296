package failed

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relay-dev/relay/deadletter"
)

// ReprocessMaxAttemptsDefault is how many failed reprocesses a row may have
// before it needs manual review, when the caller does not say.
const ReprocessMaxAttemptsDefault = 5

// ReprocessOutcome is what happened to one POI of a reprocess job.
type ReprocessOutcome struct {
	// FailedPOIID is the failed_pois row the POI came from.
	FailedPOIID int64
	// Failure is nil when the POI resolved; otherwise its new failure.
	Failure *POI
}

// OutcomeSummary counts what RecordReprocessOutcomesTx did.
type OutcomeSummary struct {
	// Reprocessed rows resolved and are now status reprocessed.
	Reprocessed int
	// FailedAgain rows are back in status new with attempts incremented and
	// the new error appended to error_history.
	FailedAgain int
	// ManualReview of the FailedAgain rows reached the cap and now need
	// manual review.
	ManualReview int
	// Skipped outcomes concern rows no longer waiting for this job (an
	// operator changed or deleted them, or a later reprocess took them
	// over); they were left alone.
	Skipped int
}

// RecordReprocessOutcomesTx records, in the reprocess job's own transaction
// tx, what happened to each of its POIs: a resolved POI's row becomes
// reprocessed (reprocessed_at set, manual_review_required cleared); a POI
// that failed again updates its same row back to new, with attempts + 1,
// the new error as the row's error and appended to error_history (and the
// POI id the data now has, unless another actionable row of the file has
// that id: at most one actionable row per POI id). A row
// whose failed reprocesses (attempts - 1) reach maxAttempts gets
// manual_review_required, which takes it out of `relay reprocess`'s
// automatic selection, so no row loops forever. maxAttempts <= 0 means
// ReprocessMaxAttemptsDefault.
//
// Only repository's rows still in reprocessing for this job
// (reprocess_job_id = jobID) are touched, so a stale or duplicated job
// cannot overwrite a newer decision. One audit event (action
// reprocess_outcome) records the counts.
func RecordReprocessOutcomesTx(ctx context.Context, tx pgx.Tx, jobID int64, repository, fileID string, outcomes []ReprocessOutcome, maxAttempts int) (OutcomeSummary, error) {
	var sum OutcomeSummary
	if len(outcomes) == 0 {
		return sum, nil
	}
	if maxAttempts <= 0 {
		maxAttempts = ReprocessMaxAttemptsDefault
	}
	var okIDs []int64
	var (
		ids                                        []int64
		poiIDs                                     []*string
		classes, messages, contexts, sigs, entries []string
		times                                      []time.Time
	)
	for _, o := range outcomes {
		if o.Failure == nil {
			okIDs = append(okIDs, o.FailedPOIID)
			continue
		}
		f := o.Failure
		at := f.FailedAt
		if at.IsZero() {
			at = time.Now()
		}
		at = at.UTC()
		msg := deadletter.StorableText(f.Message)
		sig := deadletter.Signature(msg)
		e, err := json.Marshal([]HistoryEntry{{JobID: jobID, FailedAt: at, Class: f.Class, Message: msg, Signature: sig}})
		if err != nil {
			return sum, fmt.Errorf("error encoding error history: %w", err)
		}
		var pid *string
		if f.POIID != "" {
			id := f.POIID
			pid = &id
		}
		ids, poiIDs = append(ids, o.FailedPOIID), append(poiIDs, pid)
		classes, messages, contexts = append(classes, string(f.Class)), append(messages, msg), append(contexts, deadletter.StorableText(f.Context))
		sigs, entries, times = append(sigs, sig), append(entries, string(e)), append(times, at)
	}

	b := &pgx.Batch{}
	if len(okIDs) > 0 {
		b.Queue(`
			UPDATE failed_pois
			SET status = 'reprocessed', reprocessed_at = now(), manual_review_required = false, updated_at = now()
			WHERE repository = $3 AND id = ANY($1) AND status = 'reprocessing' AND reprocess_job_id = $2`, okIDs, jobID, repository).Exec(func(tag pgconn.CommandTag) error {
			sum.Reprocessed = int(tag.RowsAffected())
			return nil
		})
	}
	if len(ids) > 0 {
		b.Queue(`
			UPDATE failed_pois f
			SET status = 'new',
			    attempts = f.attempts + 1,
			    failed_at = u.failed_at,
			    poi_id = CASE WHEN u.poi_id IS DISTINCT FROM f.poi_id AND EXISTS (
			                      SELECT 1 FROM failed_pois o
			                      WHERE o.repository = f.repository AND o.file_id = f.file_id AND o.poi_id = u.poi_id
			                        AND o.status IN `+actionableStatuses+`)
			                  THEN f.poi_id ELSE coalesce(u.poi_id, f.poi_id) END,
			    error_class = u.class,
			    error_message = u.message,
			    error_context = u.context,
			    error_signature = u.sig,
			    error_history = f.error_history || u.entry::jsonb,
			    manual_review_required = f.manual_review_required OR f.attempts >= $3,
			    updated_at = now()
			FROM unnest($1::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::timestamptz[])
			     AS u(id, poi_id, class, message, context, sig, entry, failed_at)
			WHERE f.repository = $11 AND f.id = u.id AND f.status = 'reprocessing' AND f.reprocess_job_id = $2
			RETURNING f.manual_review_required`,
			ids, jobID, maxAttempts, poiIDs, classes, messages, contexts, sigs, entries, times, repository).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var manual bool
				if err := rows.Scan(&manual); err != nil {
					return err
				}
				sum.FailedAgain++
				if manual {
					sum.ManualReview++
				}
			}
			return rows.Err()
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return sum, fmt.Errorf("error recording reprocess outcomes of job %d: %w", jobID, err)
	}
	sum.Skipped = len(outcomes) - sum.Reprocessed - sum.FailedAgain
	_, err := InsertEventTx(ctx, tx, deadletter.WorkerActor, ActionReprocessOutcome, int64(sum.Reprocessed+sum.FailedAgain), map[string]any{
		"job_id": jobID, "file_id": fileID, "reprocessed": sum.Reprocessed, "failed_again": sum.FailedAgain,
		"manual_review": sum.ManualReview, "skipped": sum.Skipped,
	})
	return sum, err
}

// LiveReprocessRowsTx returns which of rows (failed_pois ids of
// repository) are still in reprocessing for job jobID: the only rows whose
// POIs the job may write. The caller holds the file's row FOR SHARE, which
// keeps a publish of the file from superseding them until it commits.
func LiveReprocessRowsTx(ctx context.Context, tx pgx.Tx, jobID int64, repository string, rows []int64) (map[int64]bool, error) {
	live := make(map[int64]bool, len(rows))
	if len(rows) == 0 {
		return live, nil
	}
	r, err := tx.Query(ctx, `
		SELECT id FROM failed_pois
		WHERE repository = $1 AND id = ANY($2) AND status = 'reprocessing' AND reprocess_job_id = $3`, repository, rows, jobID)
	if err != nil {
		return nil, fmt.Errorf("error reading the rows of reprocess job %d: %w", jobID, err)
	}
	ids, err := pgx.CollectRows(r, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("error reading the rows of reprocess job %d: %w", jobID, err)
	}
	for _, id := range ids {
		live[id] = true
	}
	return live, nil
}

// SupersedeReprocessTx closes, in the reprocess job's own transaction tx,
// the rows of the job (failed_pois ids of repository) still in
// reprocessing for it: status superseded with reason, when the job must not
// write its POIs (their file is gone, or at another version than the
// job's). One audit event (action reprocess_outcome) records the count and
// the reason. It returns how many rows it closed.
func SupersedeReprocessTx(ctx context.Context, tx pgx.Tx, jobID int64, repository, fileID string, rows []int64, reason string) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	tag, err := tx.Exec(ctx, `
		UPDATE failed_pois
		SET status = 'superseded', superseded_at = now(), superseded_reason = $4, updated_at = now()
		WHERE repository = $1 AND id = ANY($2) AND status = 'reprocessing' AND reprocess_job_id = $3`,
		repository, rows, jobID, deadletter.StorableText(reason))
	if err != nil {
		return 0, fmt.Errorf("error superseding the rows of reprocess job %d: %w", jobID, err)
	}
	n := int(tag.RowsAffected())
	_, err = InsertEventTx(ctx, tx, deadletter.WorkerActor, ActionReprocessOutcome, int64(n), map[string]any{
		"job_id": jobID, "file_id": fileID, "reprocessed": 0, "failed_again": 0, "manual_review": 0,
		"superseded": n, "skipped": len(rows) - n, "reason": deadletter.StorableText(reason),
	})
	return n, err
}
