-- +goose Up
-- failed_pois rows follow their file's versions (docs/failed_pois.md,
-- "Versions"): a row was failed by one version of its file, and only that
-- version may be reprocessed. A publish of a file supersedes the file's
-- earlier actionable rows (status new, reprocessing or ignored: those a
-- reprocess can still take) in its own transaction, and a reprocess closes,
-- instead of applying, a row whose file was published again since or is
-- gone (deleted with its repository): a reprocess never writes a POI of an
-- older version than its file's current one, and never recreates a file.
--
-- file_version: the version of the file whose batch recorded the failure.
-- superseded_at, superseded_reason: when and why the row was closed
--   (status superseded, terminal).
-- failed_pois_actionable_idx: at most one actionable row per (repository,
--   file, POI id); rows without a usable POI id (NULL) are each their own
--   key. The publish's supersede probes it per file.
--
-- The rows already there: each actionable row gets its file_version from
-- its original job's args while River still has the job, else, when its
-- first failure is not older than its file's last publish, the file's
-- current version. Then an actionable row is superseded when its file is
-- gone, when its version is older than the file's (or unknown: the file was
-- published again after the failure), or when a newer actionable row of the
-- same POI exists. failed_pois is locked against writes until this
-- migration commits, so no publish or batch slips between these steps.
LOCK TABLE failed_pois IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE failed_pois
    ADD COLUMN file_version      bigint,
    ADD COLUMN superseded_at     timestamptz,
    ADD COLUMN superseded_reason text;
ALTER TABLE failed_pois DROP CONSTRAINT failed_pois_status_check,
    ADD CONSTRAINT failed_pois_status_check
        CHECK (status IN ('new', 'reprocessing', 'reprocessed', 'ignored', 'superseded'));

UPDATE failed_pois f SET file_version = (j.args->>'fileVersion')::bigint
FROM river_job j
WHERE j.id = f.original_job_id AND j.kind = 'resolve_file' AND (j.args->>'fileVersion')::bigint > 0
  AND f.status IN ('new', 'reprocessing', 'ignored');
UPDATE failed_pois f SET file_version = fl.version
FROM files fl
WHERE fl.repository = f.repository AND fl.file_id = f.file_id
  AND f.file_version IS NULL AND f.status IN ('new', 'reprocessing', 'ignored')
  AND coalesce((f.error_history->0->>'failed_at')::timestamptz, f.failed_at) >= fl.published_at;

UPDATE failed_pois f
SET status = 'superseded', superseded_at = now(), updated_at = now(),
    superseded_reason = CASE
        WHEN fl.file_id IS NULL AND NOT EXISTS (SELECT 1 FROM files o WHERE o.repository = f.repository)
            THEN format('repository "%s" was deleted: reprocessing would recreate it', f.repository)
        WHEN fl.file_id IS NULL THEN format('file "%s" was deleted: reprocessing would recreate it', f.file_id)
        WHEN f.file_version IS NULL THEN 'the file was published again after this failure'
        ELSE format('the row is of version %s of the file; version %s was published since', f.file_version, fl.version)
    END
FROM failed_pois s
LEFT JOIN files fl ON fl.repository = s.repository AND fl.file_id = s.file_id
WHERE s.repository = f.repository AND s.id = f.id AND f.status IN ('new', 'reprocessing', 'ignored')
  AND (fl.file_id IS NULL OR f.file_version IS NULL OR f.file_version < fl.version);

UPDATE failed_pois f
SET status = 'superseded', superseded_at = now(), updated_at = now(),
    superseded_reason = format('row %s is a newer failure of the same POI', d.newest)
FROM (SELECT repository, id, max(id) OVER (PARTITION BY repository, file_id, poi_id) AS newest
      FROM failed_pois WHERE status IN ('new', 'reprocessing', 'ignored') AND poi_id IS NOT NULL) d
WHERE d.repository = f.repository AND d.id = f.id AND d.id <> d.newest;

CREATE UNIQUE INDEX failed_pois_actionable_idx ON failed_pois (repository, file_id, poi_id)
    WHERE status IN ('new', 'reprocessing', 'ignored');

-- The views count the new status, in a column added at the end.
CREATE OR REPLACE VIEW failed_pois_by_signature AS
SELECT error_signature,
       error_class,
       count(*)                                                  AS failures,
       count(*) FILTER (WHERE status = 'new')                    AS new,
       count(*) FILTER (WHERE status = 'new' AND manual_review_required) AS manual_review,
       count(*) FILTER (WHERE status = 'reprocessed')            AS reprocessed,
       count(DISTINCT file_id)                                   AS files,
       min(failed_at)                                            AS first_seen,
       max(failed_at)                                            AS last_seen,
       count(*) FILTER (WHERE status = 'superseded')             AS superseded
FROM failed_pois
GROUP BY error_signature, error_class;

CREATE OR REPLACE VIEW failed_pois_by_file AS
SELECT file_id,
    count(*) AS failures,
    count(*) FILTER (WHERE status = 'new') AS new,
    count(*) FILTER (WHERE status = 'reprocessing') AS reprocessing,
    count(*) FILTER (WHERE status = 'reprocessed') AS reprocessed,
    count(*) FILTER (WHERE status = 'ignored') AS ignored,
    min(failed_at) AS first_failed_at,
    max(failed_at) AS last_failed_at,
    repository,
    count(*) FILTER (WHERE status = 'superseded') AS superseded
FROM failed_pois
GROUP BY repository, file_id;

-- +goose Down
-- Superseded rows become ignored rows whose ignored_reason is why they were
-- superseded (the status no longer exists); the versions and the
-- supersede times are lost.
DROP VIEW failed_pois_by_file;
CREATE VIEW failed_pois_by_file AS
SELECT file_id,
    count(*) AS failures,
    count(*) FILTER (WHERE status = 'new') AS new,
    count(*) FILTER (WHERE status = 'reprocessing') AS reprocessing,
    count(*) FILTER (WHERE status = 'reprocessed') AS reprocessed,
    count(*) FILTER (WHERE status = 'ignored') AS ignored,
    min(failed_at) AS first_failed_at,
    max(failed_at) AS last_failed_at,
    repository
FROM failed_pois
GROUP BY repository, file_id;
DROP VIEW failed_pois_by_signature;
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
DROP INDEX failed_pois_actionable_idx;
UPDATE failed_pois SET status = 'ignored', ignored_reason = 'superseded: ' || coalesce(superseded_reason, '')
WHERE status = 'superseded';
ALTER TABLE failed_pois DROP CONSTRAINT failed_pois_status_check,
    ADD CONSTRAINT failed_pois_status_check CHECK (status IN ('new', 'reprocessing', 'reprocessed', 'ignored'));
ALTER TABLE failed_pois
    DROP COLUMN superseded_reason,
    DROP COLUMN superseded_at,
    DROP COLUMN file_version;
