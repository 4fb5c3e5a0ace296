-- +goose Up
-- Reprocessing and operating failed_pois (`relay reprocess`, `relay failed`).
-- docs/failed_pois.md documents every column, status and view.

-- reprocess_job_id: the River job of the latest `relay reprocess` of the row.
-- reprocess_requested_at: when that job was enqueued (the row went to
--   reprocessing).
-- reprocessed_at: when a reprocess resolved the POI (status reprocessed).
-- manual_review_required: the row failed reprocess_max_attempts reprocesses;
--   `relay reprocess` skips it unless told --include-manual-review.
-- ignored_reason: why an operator set the row aside (`relay failed ignore`).
ALTER TABLE failed_pois
    ADD COLUMN reprocess_job_id       bigint,
    ADD COLUMN reprocess_requested_at timestamptz,
    ADD COLUMN reprocessed_at         timestamptz,
    ADD COLUMN manual_review_required boolean NOT NULL DEFAULT false,
    ADD COLUMN ignored_reason         text;

-- `relay failed list` without filters and time windows (newest first).
CREATE INDEX failed_pois_failed_at_idx ON failed_pois (failed_at, id);
-- `relay reprocess`: rows of one status in (file_id, id) order, so one file's
-- rows land in one job and each chunk continues where the last one stopped.
CREATE INDEX failed_pois_status_file_id_idx ON failed_pois (status, file_id, id);
-- `relay failed list --signature` and analyze's sample rows. It serves
-- every query failed_pois_error_signature_idx served, which is dropped: each
-- index costs every status change of a row (reprocess) an index insert.
CREATE INDEX failed_pois_signature_failed_at_idx ON failed_pois (error_signature, failed_at);
DROP INDEX failed_pois_error_signature_idx;
-- `relay failed stats`: counts by status and class, and the stuck rows'
-- jobs, from the index alone.
CREATE INDEX failed_pois_status_class_idx ON failed_pois (status, error_class) INCLUDE (reprocess_job_id);
-- Rows waiting for a person (few).
CREATE INDEX failed_pois_manual_review_idx ON failed_pois (failed_at) WHERE manual_review_required;

-- One line per error signature (and class): the first question about
-- failures. `SELECT * FROM failed_pois_by_signature ORDER BY failures DESC`.
CREATE VIEW failed_pois_by_signature AS
SELECT error_signature,
       error_class,
       count(*)                                                  AS failures,
       count(*) FILTER (WHERE status = 'new')                    AS new,
       count(*) FILTER (WHERE status = 'new' AND manual_review_required) AS manual_review,
       count(*) FILTER (WHERE status = 'reprocessed')            AS reprocessed,
       count(DISTINCT file_id)                                   AS files,
       min(failed_at)                                            AS first_seen,
       max(failed_at)                                            AS last_seen
FROM failed_pois
GROUP BY error_signature, error_class;

-- One line per file with failures.
CREATE VIEW failed_pois_by_file AS
SELECT file_id,
       count(*)                                                  AS failures,
       count(*) FILTER (WHERE status = 'new')                    AS new,
       count(*) FILTER (WHERE status = 'reprocessing')           AS reprocessing,
       count(*) FILTER (WHERE status = 'reprocessed')            AS reprocessed,
       count(*) FILTER (WHERE status = 'ignored')                AS ignored,
       min(failed_at)                                            AS first_failed_at,
       max(failed_at)                                            AS last_failed_at
FROM failed_pois
GROUP BY file_id;

-- Rows in reprocessing whose job will never report back: River discarded or
-- cancelled it, or its row was deleted. `relay reprocess --status
-- reprocessing` re-enqueues exactly these.
CREATE VIEW failed_pois_stuck AS
SELECT f.id, f.file_id, f.poi_id, f.error_signature, f.reprocess_job_id, f.reprocess_requested_at,
       j.state::text AS job_state
FROM failed_pois f
LEFT JOIN river_job j ON j.id = f.reprocess_job_id
WHERE f.status = 'reprocessing'
  AND (j.id IS NULL OR j.state NOT IN ('available', 'pending', 'running', 'retryable', 'scheduled'));

-- +goose Down
DROP VIEW failed_pois_stuck;
DROP VIEW failed_pois_by_file;
DROP VIEW failed_pois_by_signature;
DROP INDEX failed_pois_manual_review_idx;
DROP INDEX failed_pois_status_class_idx;
CREATE INDEX failed_pois_error_signature_idx ON failed_pois (error_signature);
DROP INDEX failed_pois_signature_failed_at_idx;
DROP INDEX failed_pois_status_file_id_idx;
DROP INDEX failed_pois_failed_at_idx;
ALTER TABLE failed_pois
    DROP COLUMN ignored_reason,
    DROP COLUMN manual_review_required,
    DROP COLUMN reprocessed_at,
    DROP COLUMN reprocess_requested_at,
    DROP COLUMN reprocess_job_id;
