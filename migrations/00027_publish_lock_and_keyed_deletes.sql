-- +goose Up
-- The last committed publish of a file wins, whatever its path, and a
-- re-publish removes every reference of the version it replaces.
--
-- relay_lock_files takes the publish lock of each file: a transaction-level
-- advisory lock keyed by (repository, file_id), taken in the order of the
-- keys' hashes so that two publishes of the same files cannot deadlock on
-- them. Every publish takes it before it writes anything of the file: the
-- Go publisher (outbox.store.write) before it deletes the file's queued
-- SQL publish and locks the file's row, relay_publish and
-- relay_publish_many before they queue the analysis, and the SQL API's
-- drain (which tries it, and leaves a file whose lock is taken for its next
-- drain). So the publishes of a file commit in the order they took its lock,
-- and each one (in READ COMMITTED, where each statement reads what committed
-- before it began; the Go publisher refuses other isolation levels) sees
-- every publish of the file that committed before it: a
-- Go publish deletes every queued SQL publish that committed before it, and
-- a SQL publish queued after a Go publish committed is newer than it.
-- relay_publish_many queues its analyses in the order of its array (seq).
--
-- relay_delete_source_rows deletes and updates poi_references by key, no
-- longer by the ctid it found: a row another transaction updated while the
-- statement waited for it (a link round's re-resolution, another publish's
-- trigger clearing a target) has a new ctid, and a ctid join skipped it,
-- leaving a reference of a removed POI.
--
-- A publish also holds its files' repositories' locks shared, and `relay
-- repository delete` holds its repository's exclusively
-- (relay_lock_repository): a publish of a repository commits before its
-- delete starts, and is then deleted, or after the delete commits.
-- The keys are 64-bit hashes (hashtextextended) of the repository, and of
-- the repository's length, the repository and the file id, with seeds of
-- their own; two files whose keys collide only publish one at a time. The
-- lock functions keep PostgreSQL's default EXECUTE for PUBLIC: the Go
-- publisher calls relay_lock_files as the caller's role (advisory locks are
-- PUBLIC's anyway).
--
-- relay_delete_source_rows plans its statements for each call (EXECUTE):
-- the transition table's size decides between index lookups and a hash
-- join, and a plan kept from a large delete would scan poi_references for
-- every small one.
--
-- Rollback: the functions go back to their 00024 bodies and the lock
-- functions go (a relay built with this migration then fails to publish);
-- no data is lost.
-- +goose StatementBegin
CREATE FUNCTION relay_file_lock_key(repo text, file text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT hashtextextended(length(repo)::text || ':' || repo || file, 1919249520)
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_repository_lock_key(repo text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT hashtextextended(repo, 1919249521)
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_lock_files(repos text[], files text[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    k bigint;
BEGIN
    FOR k IN SELECT DISTINCT relay_repository_lock_key(u.repo) AS h FROM unnest(repos) AS u(repo) ORDER BY h LOOP
        PERFORM pg_advisory_xact_lock_shared(k);
    END LOOP;
    FOR k IN SELECT DISTINCT relay_file_lock_key(u.repo, u.file) AS h
             FROM unnest(repos, files) AS u(repo, file) ORDER BY h LOOP
        PERFORM pg_advisory_xact_lock(k);
    END LOOP;
END
$fn$;
-- +goose StatementEnd

-- relay_try_lock_files takes the publish locks (and the repositories'
-- locks, shared) of the files it can take at once, and returns the index
-- (1-based) of each file whose lock, or whose repository's, another
-- transaction holds. A repository's lock taken for a file whose own lock
-- was not is kept until commit, as every transaction-level lock is.
-- +goose StatementBegin
CREATE FUNCTION relay_try_lock_files(repos text[], files text[]) RETURNS SETOF integer
LANGUAGE sql AS $fn$
    SELECT u.i::integer FROM unnest(repos, files) WITH ORDINALITY AS u(repo, file, i)
    WHERE NOT (pg_try_advisory_xact_lock_shared(relay_repository_lock_key(u.repo))
               AND pg_try_advisory_xact_lock(relay_file_lock_key(u.repo, u.file)))
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_lock_repository(repo text) RETURNS void
LANGUAGE sql AS $fn$
    SELECT pg_advisory_xact_lock(relay_repository_lock_key(repo))
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_delete_source_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE $q$
    DELETE FROM poi_references t USING (
        SELECT r.repository, r.source_poi_id FROM deleted_pois d
        CROSS JOIN LATERAL (SELECT DISTINCT repository, source_poi_id FROM poi_references
                            WHERE repository = d.repository AND source_poi_id = d.poi_id OFFSET 0) r) x
    WHERE t.repository = x.repository AND t.source_poi_id = x.source_poi_id$q$;
    EXECUTE $q$
    UPDATE poi_references t SET target_poi_id = NULL, target_file_id = NULL
    FROM (
        SELECT r.repository, r.source_poi_id, r.type, r.name, d.repository AS target_repository, d.poi_id AS target_poi_id
        FROM deleted_pois d
        CROSS JOIN LATERAL (SELECT repository, source_poi_id, type, name FROM poi_references
                            WHERE target_repository = d.repository AND target_poi_id = d.poi_id OFFSET 0) r) x
    WHERE t.repository = x.repository AND t.source_poi_id = x.source_poi_id AND t.type = x.type AND t.name = x.name
      AND t.target_repository = x.target_repository AND t.target_poi_id = x.target_poi_id$q$;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_publish(analysis jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $fn$
DECLARE
    fid text := relay_publish_check(analysis);
    repo text := relay_publish_repository(analysis);
BEGIN
    PERFORM relay_lock_files(ARRAY[repo], ARRAY[fid]);
    INSERT INTO publish_queue (repository, file_id, analysis, seq, queued_at)
    VALUES (repo, fid, analysis, nextval('publish_queue_seq'), clock_timestamp())
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
    PERFORM relay_lock_files(array_agg(coalesce(e.value->>'repository', '')), array_agg(e.value->>'fileId'))
    FROM jsonb_array_elements(analyses) AS e(value);
    -- One row per file, its last analysis in the array; the rows queued in
    -- the array's order (seq), which the drain publishes them in.
    INSERT INTO publish_queue (repository, file_id, analysis, seq, queued_at)
    SELECT d.repo, d.file, d.value, nextval('publish_queue_seq'), clock_timestamp()
    FROM (SELECT DISTINCT ON (1, 2) coalesce(e.value->>'repository', '') AS repo, e.value->>'fileId' AS file, e.value, e.i
          FROM jsonb_array_elements(analyses) WITH ORDINALITY AS e(value, i)
          ORDER BY 1, 2, e.i DESC) d
    ORDER BY d.i
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
    EXECUTE format('ALTER FUNCTION relay_publish(jsonb) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_publish_many(jsonb) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_lock_files(text[], text[]) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_try_lock_files(text[], text[]) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_lock_repository(text) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_file_lock_key(text, text) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_repository_lock_key(text) SET search_path = %I, pg_temp', current_schema());
END
$do$;
-- +goose StatementEnd

-- +goose Down
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

-- +goose StatementBegin
DO $do$
BEGIN
    EXECUTE format('ALTER FUNCTION relay_publish(jsonb) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_publish_many(jsonb) SET search_path = %I, pg_temp', current_schema());
END
$do$;
-- +goose StatementEnd
DROP FUNCTION relay_lock_repository(text);
DROP FUNCTION relay_try_lock_files(text[], text[]);
DROP FUNCTION relay_lock_files(text[], text[]);
DROP FUNCTION relay_repository_lock_key(text);
DROP FUNCTION relay_file_lock_key(text, text);
