package failed

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/deadletter"
)

// Status is a failed_pois row's place in the reprocessing life cycle.
type Status string

// The statuses of a failed_pois row.
const (
	StatusNew          Status = "new"          // failed, waiting for an operator or `relay reprocess`
	StatusReprocessing Status = "reprocessing" // re-enqueued; its job has not finished yet
	StatusReprocessed  Status = "reprocessed"  // resolved on a later attempt
	StatusIgnored      Status = "ignored"      // set aside by an operator (with a reason)
)

// POI is one POI that failed inside a batch: the row the worker writes
// to failed_pois.
type POI struct {
	JobID int64
	// Repository is the file's repository ("" the default one).
	Repository string
	FileID     string
	POIID      string // "" when the POI had no usable id (stored as NULL)
	POIIndex   int    // position in the job's POI array
	Class      ErrorClass
	Message    string
	Context    string // stack trace or extra detail
	Data       json.RawMessage
	FailedAt   time.Time
}

// historyEntry is one element of failed_pois.error_history.
type historyEntry struct {
	JobID     int64      `json:"job_id"`
	FailedAt  time.Time  `json:"failed_at"`
	Class     ErrorClass `json:"error_class"`
	Message   string     `json:"error_message"`
	Signature string     `json:"error_signature"`
}

// InsertTx writes rows to failed_pois in tx, in one statement. A row
// for a failure already recorded (same job and POI position, as when a batch
// is retried after its transaction committed) is not written twice. It
// returns how many rows were new.
func InsertTx(ctx context.Context, tx pgx.Tx, rows []POI) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	sql, args, err := insertFailedPOIs(rows)
	if err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, sql, args...)
	if err != nil {
		return 0, fmt.Errorf("error writing %d failed_pois rows: %w", len(rows), err)
	}
	return tag.RowsAffected(), nil
}

// QueueInsert queues InsertTx's statement in b, for a caller
// that sends it with its own statements in one round trip. It queues
// nothing for no rows; the error is about encoding the rows, before
// anything is queued.
func QueueInsert(b *pgx.Batch, rows []POI) error {
	if len(rows) == 0 {
		return nil
	}
	sql, args, err := insertFailedPOIs(rows)
	if err != nil {
		return err
	}
	b.Queue(sql, args...)
	return nil
}

// insertFailedPOIs is the statement writing rows, and its arguments.
func insertFailedPOIs(rows []POI) (string, []any, error) {
	n := len(rows)
	var (
		jobIDs   = make([]int64, n)
		repos    = make([]string, n)
		fileIDs  = make([]string, n)
		poiIDs   = make([]*string, n)
		indexes  = make([]int32, n)
		classes  = make([]string, n)
		messages = make([]string, n)
		contexts = make([]string, n)
		sigs     = make([]string, n)
		history  = make([]string, n)
		data     = make([]string, n)
		times    = make([]time.Time, n)
	)
	for i, r := range rows {
		jobIDs[i], repos[i], fileIDs[i], indexes[i] = r.JobID, r.Repository, r.FileID, int32(r.POIIndex)
		if r.POIID != "" {
			id := r.POIID
			poiIDs[i] = &id
		}
		at := r.FailedAt
		if at.IsZero() {
			at = time.Now()
		}
		times[i] = at.UTC()
		classes[i], messages[i], contexts[i] = string(r.Class), deadletter.Text(r.Message), deadletter.Text(r.Context)
		sigs[i] = deadletter.Signature(messages[i])
		h, err := json.Marshal([]historyEntry{{JobID: r.JobID, FailedAt: times[i], Class: r.Class, Message: messages[i], Signature: sigs[i]}})
		if err != nil {
			return "", nil, fmt.Errorf("error encoding error history: %w", err)
		}
		history[i] = string(h)
		data[i] = string(r.Data)
		if len(r.Data) == 0 {
			data[i] = "null"
		}
	}
	return `
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, error_class, error_message, error_context,
		                         error_signature, error_history, original_poi_data, failed_at, updated_at, repository)
		SELECT u.job_id, u.file_id, u.poi_id, u.poi_index, u.class, u.message, u.context,
		       u.sig, u.history::jsonb, u.data::jsonb, u.failed_at, u.failed_at, u.repository
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[],
		            $8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::text[])
		     AS u(job_id, file_id, poi_id, poi_index, class, message, context, sig, history, data, failed_at, repository)
		ON CONFLICT ON CONSTRAINT failed_pois_job_poi_key DO NOTHING`,
		[]any{jobIDs, fileIDs, poiIDs, indexes, classes, messages, contexts, sigs, history, data, times, repos}, nil
}
