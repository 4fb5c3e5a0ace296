-- Repositories (README.md, "Repositories"). An analysis names its repository
-- (default ''): file ids and POI ids are unique within a repository, and
-- names resolve only within one. Every table that holds a repository's
-- data gains a repository column, NOT NULL DEFAULT '' (existing rows move
-- into the default repository; adding the column rewrites nothing), and its
-- primary key and lookup indexes begin with it, so that the tables can be
-- distributed and co-located by repository (docs/scaling.md).
--
-- A reference's target may lie in another repository (a supplied reference
-- by symbol that its own repository does not define), so
-- poi_references.target_repository names it, and the foreign key from a
-- target to pois (which a distributed table could not keep across
-- repositories) becomes the trigger that already deletes a deleted POI's
-- references: it now also clears the references that targeted it.

-- +goose Up
ALTER TABLE files ADD COLUMN repository text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE pois ADD COLUMN repository text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE poi_references ADD COLUMN repository text COLLATE "C" NOT NULL DEFAULT '',
    -- target_repository is the repository of target_poi_id (meaningless
    -- while that is NULL).
    ADD COLUMN target_repository text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE link_queue ADD COLUMN repository text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE publish_queue ADD COLUMN repository text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE rejected_analyses ADD COLUMN repository text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE failed_pois ADD COLUMN repository text COLLATE "C" NOT NULL DEFAULT '';

ALTER TABLE poi_references DROP CONSTRAINT poi_references_target_poi_id_fkey;
ALTER TABLE pois DROP CONSTRAINT pois_file_id_fkey;

ALTER TABLE files DROP CONSTRAINT files_pkey, ADD PRIMARY KEY (repository, file_id);
ALTER TABLE pois DROP CONSTRAINT pois_pkey, ADD PRIMARY KEY (repository, poi_id),
    ADD FOREIGN KEY (repository, file_id) REFERENCES files (repository, file_id) ON DELETE CASCADE;
DROP INDEX pois_file_id_idx, pois_name_idx;
CREATE INDEX pois_file_id_idx ON pois (repository, file_id);
CREATE INDEX pois_name_idx ON pois (repository, name);
-- pois_symbol_idx (symbol) stays: a symbol is looked up in every
-- repository (a supplied reference by symbol resolves elsewhere when its
-- own repository has none), as is poi_references_symbol_key_idx below.

ALTER TABLE poi_references DROP CONSTRAINT poi_references_pkey,
    ADD PRIMARY KEY (repository, source_poi_id, type, name);
DROP INDEX poi_references_key_resolved_round_idx, poi_references_target_poi_id_idx;
CREATE INDEX poi_references_key_resolved_round_idx ON poi_references (repository, key, resolved_round);
CREATE INDEX poi_references_target_poi_id_idx ON poi_references (target_repository, target_poi_id)
    WHERE target_poi_id IS NOT NULL;
CREATE INDEX poi_references_symbol_key_idx ON poi_references (key, resolved_round) WHERE key LIKE 'sym:%';

ALTER TABLE link_queue DROP CONSTRAINT link_queue_pkey, ADD PRIMARY KEY (repository, job_id);
CREATE INDEX link_queue_job_id_idx ON link_queue (job_id);
ALTER TABLE publish_queue DROP CONSTRAINT publish_queue_pkey, ADD PRIMARY KEY (repository, file_id);

ALTER TABLE rejected_analyses DROP CONSTRAINT rejected_analyses_pkey, ADD PRIMARY KEY (repository, id);
CREATE INDEX rejected_analyses_id_idx ON rejected_analyses (id);
DROP INDEX rejected_analyses_file_id_idx;
CREATE INDEX rejected_analyses_file_id_idx ON rejected_analyses (repository, file_id);

-- failed_pois: the column is added (the contract, docs/failed_pois.md);
-- the key and the operators' indexes begin with it. A lookup by id alone
-- (reprocess, `relay failed show`) takes failed_pois_id_idx.
ALTER TABLE failed_pois DROP CONSTRAINT failed_pois_pkey, ADD PRIMARY KEY (repository, id);
CREATE INDEX failed_pois_id_idx ON failed_pois (id);
ALTER TABLE failed_pois DROP CONSTRAINT failed_pois_job_poi_key,
    ADD CONSTRAINT failed_pois_job_poi_key UNIQUE (repository, original_job_id, poi_index);
DROP INDEX failed_pois_file_id_idx, failed_pois_poi_id_idx, failed_pois_status_file_id_idx;
CREATE INDEX failed_pois_file_id_idx ON failed_pois (repository, file_id);
CREATE INDEX failed_pois_poi_id_idx ON failed_pois (repository, poi_id);
CREATE INDEX failed_pois_status_file_id_idx ON failed_pois (status, repository, file_id, id);

-- A deleted POI's own references go, and the references that targeted it
-- lose their target (as the foreign key's ON DELETE SET NULL did). Each
-- lookup is driven from the deleted keys (a fenced LATERAL subquery): the
-- transition table has no statistics, and a plan that scanned
-- poi_references whole would run on every publish that removes a POI.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_delete_source_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM poi_references t USING (
        SELECT r.ctid FROM deleted_pois d
        CROSS JOIN LATERAL (SELECT ctid FROM poi_references
                            WHERE repository = d.repository AND source_poi_id = d.poi_id OFFSET 0) r) x
    WHERE t.ctid = x.ctid;
    UPDATE poi_references t SET target_poi_id = NULL, target_file_id = NULL
    FROM (
        SELECT r.ctid FROM deleted_pois d
        CROSS JOIN LATERAL (SELECT ctid FROM poi_references
                            WHERE target_repository = d.repository AND target_poi_id = d.poi_id OFFSET 0) r) x
    WHERE t.ctid = x.ctid;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- relationships gains the repository of each end (columns added at the
-- end: the view keeps its grants).
CREATE OR REPLACE VIEW relationships AS
SELECT DISTINCT ON (repository, source_poi_id, target_repository, target_poi_id, type)
    source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id, resolved_at AS created_at,
    repository, target_repository
FROM poi_references
WHERE target_poi_id IS NOT NULL
ORDER BY repository, source_poi_id, target_repository, target_poi_id, type, name;

-- failed_pois_by_file groups by repository too (a column added at the end).
CREATE OR REPLACE VIEW failed_pois_by_file AS
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

-- The SQL API takes the repository from the analysis (default '').
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_publish_repository(analysis jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    repo text;
    max_name constant integer := 1024; -- resolver.MaxNameBytes
BEGIN
    IF analysis->'repository' IS NULL OR jsonb_typeof(analysis->'repository') = 'null' THEN
        RETURN '';
    END IF;
    IF jsonb_typeof(analysis->'repository') <> 'string' THEN
        RAISE EXCEPTION 'file "%": repository must be a string, got %', analysis->>'fileId', left((analysis->'repository')::text, 40)
            USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', analysis->>'fileId')::text;
    END IF;
    repo := analysis->>'repository';
    IF octet_length(repo) > max_name THEN
        RAISE EXCEPTION 'file "%": repository is % bytes, more than the %-byte limit for ids and names', analysis->>'fileId', octet_length(repo), max_name
            USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', analysis->>'fileId')::text;
    END IF;
    RETURN repo;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_publish(analysis jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $fn$
DECLARE
    fid text := relay_publish_check(analysis);
BEGIN
    INSERT INTO publish_queue (repository, file_id, analysis, seq, queued_at)
    VALUES (relay_publish_repository(analysis), fid, analysis, nextval('publish_queue_seq'), clock_timestamp())
    ON CONFLICT (repository, file_id) DO UPDATE
        SET analysis = EXCLUDED.analysis, seq = EXCLUDED.seq, queued_at = EXCLUDED.queued_at;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_publish_many(analyses jsonb) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER AS $fn$
DECLARE
    a record;
BEGIN
    IF analyses IS NULL OR jsonb_typeof(analyses) <> 'array' THEN
        RAISE EXCEPTION 'relay_publish_many takes a JSON array of analyses, got %', coalesce(jsonb_typeof(analyses), 'NULL')
            USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', NULL)::text;
    END IF;
    FOR a IN SELECT e.value, e.i FROM jsonb_array_elements(analyses) WITH ORDINALITY AS e(value, i) LOOP
        BEGIN
            PERFORM relay_publish_check(a.value);
            PERFORM relay_publish_repository(a.value);
        EXCEPTION WHEN SQLSTATE 'RL001' OR SQLSTATE 'RL002' THEN
            DECLARE
                msg text;
                code text;
                det text;
            BEGIN
                GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, code = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL;
                RAISE EXCEPTION 'analysis #%: %', a.i - 1, msg USING ERRCODE = code, DETAIL = det;
            END;
        END;
    END LOOP;
    INSERT INTO publish_queue (repository, file_id, analysis, seq, queued_at)
    SELECT DISTINCT ON (1, 2) coalesce(e.value->>'repository', ''), e.value->>'fileId', e.value,
        nextval('publish_queue_seq'), clock_timestamp()
    FROM jsonb_array_elements(analyses) WITH ORDINALITY AS e(value, i)
    ORDER BY 1, 2, e.i DESC
    ON CONFLICT (repository, file_id) DO UPDATE
        SET analysis = EXCLUDED.analysis, seq = EXCLUDED.seq, queued_at = EXCLUDED.queued_at;
    RETURN jsonb_array_length(analyses);
END
$fn$;
-- +goose StatementEnd

-- CREATE OR REPLACE reset the functions' settings: pin search_path again.
-- +goose StatementBegin
DO $do$
BEGIN
    EXECUTE format('ALTER FUNCTION relay_publish_repository(jsonb) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_publish(jsonb) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_publish_many(jsonb) SET search_path = %I, pg_temp', current_schema());
END
$do$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION relay_publish_repository(jsonb) FROM PUBLIC;

-- +goose Down
-- Only the default repository's data can go back to global ids: every
-- other repository's files, POIs, references and queued work are deleted;
-- failed_pois and rejected_analyses keep their rows and lose the column.
DELETE FROM publish_queue WHERE repository <> '';
DELETE FROM link_queue WHERE repository <> '';
-- Their POIs go with them, and the trigger on pois takes their references
-- and clears the targets other references had among them.
DELETE FROM files WHERE repository <> '';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_publish(analysis jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $fn$
BEGIN
    INSERT INTO publish_queue (file_id, analysis, seq, queued_at)
    VALUES (relay_publish_check(analysis), analysis, nextval('publish_queue_seq'), clock_timestamp())
    ON CONFLICT (file_id) DO UPDATE
        SET analysis = EXCLUDED.analysis, seq = EXCLUDED.seq, queued_at = EXCLUDED.queued_at;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_publish_many(analyses jsonb) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER AS $fn$
DECLARE
    a record;
BEGIN
    IF analyses IS NULL OR jsonb_typeof(analyses) <> 'array' THEN
        RAISE EXCEPTION 'relay_publish_many takes a JSON array of analyses, got %', coalesce(jsonb_typeof(analyses), 'NULL')
            USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', NULL)::text;
    END IF;
    FOR a IN SELECT e.value, e.i FROM jsonb_array_elements(analyses) WITH ORDINALITY AS e(value, i) LOOP
        BEGIN
            PERFORM relay_publish_check(a.value);
        EXCEPTION WHEN SQLSTATE 'RL001' OR SQLSTATE 'RL002' THEN
            DECLARE
                msg text;
                code text;
                det text;
            BEGIN
                GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, code = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL;
                RAISE EXCEPTION 'analysis #%: %', a.i - 1, msg USING ERRCODE = code, DETAIL = det;
            END;
        END;
    END LOOP;
    INSERT INTO publish_queue (file_id, analysis, seq, queued_at)
    SELECT DISTINCT ON (e.value->>'fileId') e.value->>'fileId', e.value, nextval('publish_queue_seq'), clock_timestamp()
    FROM jsonb_array_elements(analyses) WITH ORDINALITY AS e(value, i)
    ORDER BY e.value->>'fileId', e.i DESC
    ON CONFLICT (file_id) DO UPDATE
        SET analysis = EXCLUDED.analysis, seq = EXCLUDED.seq, queued_at = EXCLUDED.queued_at;
    RETURN jsonb_array_length(analyses);
END
$fn$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $do$
BEGIN
    EXECUTE format('ALTER FUNCTION relay_publish(jsonb) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_publish_many(jsonb) SET search_path = %I, pg_temp', current_schema());
END
$do$;
-- +goose StatementEnd
DROP FUNCTION relay_publish_repository(jsonb);

DROP VIEW failed_pois_by_file;
CREATE VIEW failed_pois_by_file AS
SELECT file_id,
    count(*) AS failures,
    count(*) FILTER (WHERE status = 'new') AS new,
    count(*) FILTER (WHERE status = 'reprocessing') AS reprocessing,
    count(*) FILTER (WHERE status = 'reprocessed') AS reprocessed,
    count(*) FILTER (WHERE status = 'ignored') AS ignored,
    min(failed_at) AS first_failed_at,
    max(failed_at) AS last_failed_at
FROM failed_pois
GROUP BY file_id;

DROP VIEW relationships;
CREATE VIEW relationships AS
SELECT DISTINCT ON (source_poi_id, target_poi_id, type)
    source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id, resolved_at AS created_at
FROM poi_references
WHERE target_poi_id IS NOT NULL
ORDER BY source_poi_id, target_poi_id, type, name;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_delete_source_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM poi_references r USING deleted_pois d WHERE r.source_poi_id = d.poi_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP INDEX failed_pois_file_id_idx, failed_pois_poi_id_idx, failed_pois_status_file_id_idx, failed_pois_id_idx;
ALTER TABLE failed_pois DROP CONSTRAINT failed_pois_job_poi_key,
    ADD CONSTRAINT failed_pois_job_poi_key UNIQUE (original_job_id, poi_index);
ALTER TABLE failed_pois DROP CONSTRAINT failed_pois_pkey, ADD PRIMARY KEY (id);
CREATE INDEX failed_pois_file_id_idx ON failed_pois (file_id);
CREATE INDEX failed_pois_poi_id_idx ON failed_pois (poi_id);
CREATE INDEX failed_pois_status_file_id_idx ON failed_pois (status, file_id, id);

DROP INDEX rejected_analyses_file_id_idx, rejected_analyses_id_idx;
ALTER TABLE rejected_analyses DROP CONSTRAINT rejected_analyses_pkey, ADD PRIMARY KEY (id);
CREATE INDEX rejected_analyses_file_id_idx ON rejected_analyses (file_id);
ALTER TABLE publish_queue DROP CONSTRAINT publish_queue_pkey, ADD PRIMARY KEY (file_id);
DROP INDEX link_queue_job_id_idx;
ALTER TABLE link_queue DROP CONSTRAINT link_queue_pkey, ADD PRIMARY KEY (job_id);

DROP INDEX poi_references_key_resolved_round_idx, poi_references_target_poi_id_idx, poi_references_symbol_key_idx;
ALTER TABLE poi_references DROP CONSTRAINT poi_references_pkey, ADD PRIMARY KEY (source_poi_id, type, name);
CREATE INDEX poi_references_key_resolved_round_idx ON poi_references (key, resolved_round);
CREATE INDEX poi_references_target_poi_id_idx ON poi_references (target_poi_id) WHERE target_poi_id IS NOT NULL;

DROP INDEX pois_file_id_idx, pois_name_idx;
ALTER TABLE pois DROP CONSTRAINT pois_repository_file_id_fkey;
ALTER TABLE pois DROP CONSTRAINT pois_pkey, ADD PRIMARY KEY (poi_id);
CREATE INDEX pois_file_id_idx ON pois (file_id);
CREATE INDEX pois_name_idx ON pois (name);
ALTER TABLE files DROP CONSTRAINT files_pkey, ADD PRIMARY KEY (file_id);
ALTER TABLE pois ADD CONSTRAINT pois_file_id_fkey FOREIGN KEY (file_id) REFERENCES files (file_id) ON DELETE CASCADE;
ALTER TABLE poi_references ADD CONSTRAINT poi_references_target_poi_id_fkey
    FOREIGN KEY (target_poi_id) REFERENCES pois (poi_id) ON DELETE SET NULL;

ALTER TABLE failed_pois DROP COLUMN repository;
ALTER TABLE rejected_analyses DROP COLUMN repository;
ALTER TABLE publish_queue DROP COLUMN repository;
ALTER TABLE link_queue DROP COLUMN repository;
ALTER TABLE poi_references DROP COLUMN target_repository, DROP COLUMN repository;
ALTER TABLE pois DROP COLUMN repository;
ALTER TABLE files DROP COLUMN repository;
