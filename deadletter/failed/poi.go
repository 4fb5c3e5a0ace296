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

// Status is a failed_pois row's place in the reprocessing life cycle.
type Status string

// The statuses of a failed_pois row.
const (
	StatusNew          Status = "new"          // failed, waiting for an operator or `relay reprocess`
	StatusReprocessing Status = "reprocessing" // re-enqueued; its job has not finished yet
	StatusReprocessed  Status = "reprocessed"  // resolved on a later attempt
	StatusIgnored      Status = "ignored"      // set aside by an operator (with a reason)
	StatusSuperseded   Status = "superseded"   // closed: its file was published again, or is gone (with the reason)
)

// actionableStatuses are, as SQL, the statuses of the rows a reprocess can
// still take: at most one such row per (repository, file, POI id)
// (failed_pois_actionable_idx), and a publish of the file supersedes them.
const actionableStatuses = `('new', 'reprocessing', 'ignored')`

// Actionable reports whether a row in status s can still be reprocessed
// (new, reprocessing, ignored): the rows a publish of their file
// supersedes.
func (s Status) Actionable() bool {
	return s == StatusNew || s == StatusReprocessing || s == StatusIgnored
}

// FileGoneReason is the superseded_reason of a row whose file no longer
// exists when it is reprocessed: repositoryGone when its repository has no
// file left (relay repository delete).
func FileGoneReason(repository, fileID string, repositoryGone bool) string {
	if repositoryGone {
		return fmt.Sprintf("repository %q was deleted: reprocessing would recreate it", repository)
	}
	return fmt.Sprintf("file %q was deleted: reprocessing would recreate it", fileID)
}

// OtherVersionReason is the superseded_reason of a row of version
// rowVersion of its file, reprocessed when the file is at version current.
func OtherVersionReason(rowVersion, current int64) string {
	return fmt.Sprintf("the row is of version %d of the file; version %d was published since", rowVersion, current)
}

// POI is one POI that failed inside a batch: the row the worker writes
// to failed_pois.
type POI struct {
	JobID int64
	// Repository is the file's repository ("" the default one).
	Repository string
	FileID     string
	POIID      string // "" when the POI had no usable id (stored as NULL)
	POIIndex   int    // position in the job's POI array
	// FileVersion is the version of the file the batch resolved (0:
	// unknown, stored as NULL).
	FileVersion int64
	Class       ErrorClass
	Message     string
	Context     string // stack trace or extra detail
	Data        json.RawMessage
	FailedAt    time.Time
}

// historyEntry is one element of failed_pois.error_history.
type historyEntry struct {
	JobID     int64      `json:"job_id"`
	FailedAt  time.Time  `json:"failed_at"`
	Class     ErrorClass `json:"error_class"`
	Message   string     `json:"error_message"`
	Signature string     `json:"error_signature"`
}

// InsertTx writes rows to failed_pois in tx (InsertStatements). It returns
// how many rows were new.
func InsertTx(ctx context.Context, tx pgx.Tx, rows []POI) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	b := &pgx.Batch{}
	var n int64
	if err := queueInsert(b, rows, func(tag pgconn.CommandTag) error {
		n = tag.RowsAffected()
		return nil
	}); err != nil {
		return 0, err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("error writing %d failed_pois rows: %w", len(rows), err)
	}
	return n, nil
}

// QueueInsert queues InsertTx's statements in b, for a caller that sends
// them with its own statements in one round trip. It queues nothing for no
// rows; the error is about encoding the rows, before anything is queued.
//
// The rows of a file with a FileVersion first supersede the file's
// actionable rows of any other version (a publish of the version did it in
// its transaction unless a row committed after that transaction's snapshot
// was taken). A row is not written twice: not for a failure already
// recorded (same job and POI position, as when a batch is retried after
// its transaction committed), nor for a POI id that already has an
// actionable row of its file (failed_pois_actionable_idx), which stands
// for the failure.
func QueueInsert(b *pgx.Batch, rows []POI) error {
	if len(rows) == 0 {
		return nil
	}
	return queueInsert(b, rows, nil)
}

func queueInsert(b *pgx.Batch, rows []POI, done func(pgconn.CommandTag) error) error {
	sql, args, err := insertFailedPOIs(rows)
	if err != nil {
		return err
	}
	type fileKey struct {
		repo, file string
		version    int64
	}
	// The files of each repository, in the order the rows name them (a
	// batch's rows are of one file).
	type versions struct {
		files    []string
		versions []int64
	}
	seen := map[fileKey]bool{}
	var repos []string
	byRepo := map[string]*versions{}
	for _, r := range rows {
		k := fileKey{r.Repository, r.FileID, r.FileVersion}
		if r.FileVersion > 0 && !seen[k] {
			seen[k] = true
			v := byRepo[k.repo]
			if v == nil {
				v = &versions{}
				byRepo[k.repo], repos = v, append(repos, k.repo)
			}
			v.files, v.versions = append(v.files, k.file), append(v.versions, k.version)
		}
	}
	for _, repo := range repos {
		b.Queue(supersedeOtherVersionsSQL, repo, byRepo[repo].files, byRepo[repo].versions)
	}
	q := b.Queue(sql, args...)
	if done != nil {
		q.Exec(done)
	}
	return nil
}

// supersedeOtherVersionsSQL supersedes the actionable rows of the files of
// repository $1 ($2 file ids) whose version is not the one given ($3),
// through failed_pois_actionable_idx, one probe per file. It names one
// repository, so Citus routes it to that repository's shard (an UPDATE
// over several would have to join failed_pois to itself across shards),
// and its reason is text concatenation of the version cast to text: Citus
// refuses a STABLE function of a column (format) in an UPDATE's SET.
const supersedeOtherVersionsSQL = `
	UPDATE failed_pois t
	SET status = 'superseded', superseded_at = now(), updated_at = now(),
	    superseded_reason = 'version ' || d.version::text || ' of the file was published'
	FROM (
		SELECT x.id, u.version FROM unnest($2::text[], $3::bigint[]) AS u(file, version)
		CROSS JOIN LATERAL (SELECT id FROM failed_pois
		                    WHERE repository = $1 AND file_id = u.file AND status IN ` + actionableStatuses + `
		                      AND file_version IS DISTINCT FROM u.version OFFSET 0) x) d
	WHERE t.repository = $1 AND t.id = d.id AND t.status IN ` + actionableStatuses

// insertFailedPOIs is the statement writing rows, and its arguments.
func insertFailedPOIs(rows []POI) (string, []any, error) {
	n := len(rows)
	var (
		jobIDs   = make([]int64, n)
		versions = make([]*int64, n)
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
		if r.FileVersion > 0 {
			v := r.FileVersion
			versions[i] = &v
		}
		if r.POIID != "" {
			id := r.POIID
			poiIDs[i] = &id
		}
		at := r.FailedAt
		if at.IsZero() {
			at = time.Now()
		}
		times[i] = at.UTC()
		classes[i], messages[i], contexts[i] = string(r.Class), deadletter.StorableText(r.Message), deadletter.StorableText(r.Context)
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
		                         error_signature, error_history, original_poi_data, failed_at, updated_at, repository, file_version)
		SELECT u.job_id, u.file_id, u.poi_id, u.poi_index, u.class, u.message, u.context,
		       u.sig, u.history::jsonb, u.data::jsonb, u.failed_at, u.failed_at, u.repository, u.file_version
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[],
		            $8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::text[], $13::bigint[])
		     AS u(job_id, file_id, poi_id, poi_index, class, message, context, sig, history, data, failed_at, repository, file_version)
		ON CONFLICT DO NOTHING`,
		[]any{jobIDs, fileIDs, poiIDs, indexes, classes, messages, contexts, sigs, history, data, times, repos, versions}, nil
}
