-- The SQL publish API: relay_publish(analysis jsonb) and
-- relay_publish_many(analyses jsonb), which any language calls inside its
-- own transaction (README.md, "Publishing from any language").
--
-- A call checks what can be checked at once (raising SQLSTATE RL001 for the
-- analysis, RL002 for one of its POIs, in the caller's transaction) and
-- queues the analysis in publish_queue, one row per file: a later publish of
-- the file replaces the queued one, and concurrent publishes of a file
-- queue behind each other's row lock, so the last to commit is the one
-- left. Relay's workers take the committed rows (FOR UPDATE SKIP LOCKED) and
-- publish them with the Go publisher, deleting them in the same
-- transaction; a publish of the file by any other path deletes a queued row
-- too, so the last committed publish wins whatever the path. What the
-- publisher rejects then (a POI id owned by another file, a POI above
-- max_poi_bytes) moves to rejected_analyses with the reason, for
-- `relay outbox retry` after a fix.
--
-- Both functions are SECURITY DEFINER with search_path pinned to this
-- schema: a role granted EXECUTE on them alone (docs/sql/publisher_role.sql) can
-- publish without any right on relay's tables. EXECUTE is revoked from
-- PUBLIC.

-- +goose Up
CREATE SEQUENCE publish_queue_seq;

CREATE TABLE publish_queue (
    file_id   text PRIMARY KEY,
    analysis  jsonb NOT NULL,
    -- seq orders the drain: the latest publish of a file takes a new one.
    seq       bigint NOT NULL,
    queued_at timestamptz NOT NULL
);
CREATE INDEX publish_queue_seq_idx ON publish_queue (seq);

CREATE TABLE rejected_analyses (
    id           bigserial PRIMARY KEY,
    file_id      text NOT NULL,
    analysis     jsonb NOT NULL,
    reason       text NOT NULL,
    -- poi_id names the POI at fault, when one is.
    poi_id       text,
    -- file_version is the file's version when the analysis was rejected
    -- (0: never published): a retry refuses an analysis that a later
    -- publish of its file superseded.
    file_version bigint NOT NULL,
    queued_at    timestamptz NOT NULL,
    rejected_at  timestamptz NOT NULL DEFAULT now(),
    attempts     integer NOT NULL DEFAULT 1
);
CREATE INDEX rejected_analyses_file_id_idx ON rejected_analyses (file_id);

-- relay_publish_check raises, in the caller's transaction, what the Go
-- publisher (outbox.Publisher) would reject at once and SQL can decide
-- alone; TestSQLPublish_ChecksAsTheGoPublisher holds the two together. It
-- returns the file id.
-- +goose StatementBegin
CREATE FUNCTION relay_publish_check(analysis jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    fid text;
    bad record;
    -- Go's unicode.IsSpace, which the Go publisher trims an empty fileId by.
    spaces constant text := E' \t\n\r\v\f' || U&'\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000';
    max_name constant integer := 1024; -- resolver.MaxNameBytes
BEGIN
    IF analysis IS NULL OR jsonb_typeof(analysis) <> 'object' THEN
        RAISE EXCEPTION 'an analysis must be a JSON object with fileId and pois'
            USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', NULL)::text;
    END IF;
    IF analysis->'fileId' IS NULL OR jsonb_typeof(analysis->'fileId') = 'null' THEN
        RAISE EXCEPTION 'fileId is required' USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', NULL)::text;
    END IF;
    IF jsonb_typeof(analysis->'fileId') <> 'string' THEN
        RAISE EXCEPTION 'fileId must be a string, got %', left((analysis->'fileId')::text, 40)
            USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', NULL)::text;
    END IF;
    fid := analysis->>'fileId';
    IF fid = '' THEN
        RAISE EXCEPTION 'fileId is empty' USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', fid)::text;
    END IF;
    IF btrim(fid, spaces) = '' THEN
        RAISE EXCEPTION 'file "%": fileId is empty', fid USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', fid)::text;
    END IF;
    IF octet_length(fid) > max_name THEN
        RAISE EXCEPTION 'file "%…": fileId is % bytes, more than the %-byte limit for ids and names', left(fid, 64), octet_length(fid), max_name
            USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', left(fid, 64))::text;
    END IF;
    IF analysis->'pois' IS NULL OR jsonb_typeof(analysis->'pois') = 'null' THEN
        RAISE EXCEPTION 'file "%": pois is required (an array; [] for a file without POIs)', fid
            USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', fid)::text;
    END IF;
    IF jsonb_typeof(analysis->'pois') <> 'array' THEN
        RAISE EXCEPTION 'file "%": pois must be an array, got %', fid, left((analysis->'pois')::text, 40)
            USING ERRCODE = 'RL001', DETAIL = jsonb_build_object('fileId', fid)::text;
    END IF;

    -- The first POI, in array order, that breaks a rule, checked in the Go
    -- publisher's order: id length, filePath, duplicate id, name length. A
    -- POI that is not an object, or lacks a field, is not a publish error:
    -- the worker records it in failed_pois.
    SELECT p.i, CASE WHEN octet_length(p.id) > 64 THEN left(p.id, 64) || '…' ELSE p.id END AS id, p.reason INTO bad
    FROM (
        SELECT e.i - 1 AS i, e.id,
               CASE
                   WHEN octet_length(e.id) > max_name THEN
                       format('id is %s bytes, more than the %s-byte limit for ids and names', octet_length(e.id), max_name)
                   WHEN e.path IS NOT NULL AND e.path <> '' AND e.path <> fid THEN
                       format('filePath "%s" does not match the analysis fileId "%s"', e.path, fid)
                   WHEN e.id <> '' AND row_number() OVER (PARTITION BY e.id ORDER BY e.i) > 1 THEN
                       format('duplicate POI id (also POI #%s of this file)', min(e.i) OVER (PARTITION BY e.id) - 1)
                   WHEN octet_length(e.name) > max_name THEN
                       format('name is %s bytes, more than the %s-byte limit for ids and names', octet_length(e.name), max_name)
               END AS reason
        FROM (
            SELECT o.i,
                   CASE WHEN jsonb_typeof(o.poi->'id') = 'string' THEN o.poi->>'id' END AS id,
                   CASE WHEN jsonb_typeof(o.poi->'filePath') = 'string' THEN o.poi->>'filePath' END AS path,
                   CASE WHEN jsonb_typeof(o.poi->'name') = 'string' THEN o.poi->>'name' END AS name
            FROM jsonb_array_elements(analysis->'pois') WITH ORDINALITY AS o(poi, i)
            WHERE jsonb_typeof(o.poi) = 'object'
        ) e
    ) p
    WHERE p.reason IS NOT NULL
    ORDER BY p.i
    LIMIT 1;
    IF FOUND THEN
        IF bad.id <> '' THEN
            RAISE EXCEPTION 'poi "%" (file "%"): %', bad.id, fid, bad.reason
                USING ERRCODE = 'RL002', DETAIL = jsonb_build_object('fileId', fid, 'poiId', bad.id, 'poiIndex', bad.i)::text;
        END IF;
        RAISE EXCEPTION 'poi #% (file "%"): %', bad.i, fid, bad.reason
            USING ERRCODE = 'RL002', DETAIL = jsonb_build_object('fileId', fid, 'poiIndex', bad.i)::text;
    END IF;
    RETURN fid;
END
$fn$;
-- +goose StatementEnd

-- relay_publish queues one analysis in the caller's transaction.
-- +goose StatementBegin
CREATE FUNCTION relay_publish(analysis jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $fn$
BEGIN
    INSERT INTO publish_queue (file_id, analysis, seq, queued_at)
    VALUES (relay_publish_check(analysis), analysis, nextval('publish_queue_seq'), clock_timestamp())
    ON CONFLICT (file_id) DO UPDATE
        SET analysis = EXCLUDED.analysis, seq = EXCLUDED.seq, queued_at = EXCLUDED.queued_at;
END
$fn$;
-- +goose StatementEnd

-- relay_publish_many queues a JSON array of analyses in the caller's
-- transaction, as relay_publish would one after the other (of two analyses
-- of one file, the later one is kept), and returns how many it took. An
-- error names the analysis's position in the array.
-- +goose StatementBegin
CREATE FUNCTION relay_publish_many(analyses jsonb) RETURNS integer
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

-- Pin the functions' search_path to this schema, so a caller's search_path
-- cannot redirect what a SECURITY DEFINER function reads or writes.
-- +goose StatementBegin
DO $do$
BEGIN
    EXECUTE format('ALTER FUNCTION relay_publish_check(jsonb) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_publish(jsonb) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_publish_many(jsonb) SET search_path = %I, pg_temp', current_schema());
END
$do$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION relay_publish_check(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION relay_publish(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION relay_publish_many(jsonb) FROM PUBLIC;

-- +goose Down
DROP FUNCTION relay_publish_many(jsonb);
DROP FUNCTION relay_publish(jsonb);
DROP FUNCTION relay_publish_check(jsonb);
DROP TABLE rejected_analyses;
DROP TABLE publish_queue;
DROP SEQUENCE publish_queue_seq;
