-- The schema relay's migrations leave a database in, for reading: each table
-- with its columns, constraints, indexes, triggers and the trigger functions
-- only it uses, then views and the other functions, in name order; relay's
-- objects first, then River's and goose's.
--
-- Generated, do not edit. TestSchemaFile_MatchesMigrations fails while this
-- file differs from a freshly migrated database; after changing a migration,
-- regenerate it with
--
--   make schema
--
-- (UPDATE_DOCS=1 go test ./migrations -run TestSchemaFile) and commit it with
-- the migration.
--
-- This is not a script to run: relay migrate up creates and upgrades a
-- database. Names are unqualified: relay's and River's objects share one
-- schema, database_schema's or else the first in search_path (a function's
-- pinned search_path shows the test database's, relay). Owners and
-- privileges are left out: docs/sql/ has the roles. Definitions are as
-- PostgreSQL 15's pg_get_* functions write them.
--
-- Contents:
--   relay's objects
--     table dead_letter_events
--     table dead_lettered_items
--     table dead_lettered_items_counts
--     table failed_pois
--     table failed_pois_counts
--     table failed_pois_hourly_counts
--     table failed_pois_signature_counts
--     table files
--     table link_queue
--     table link_rounds
--     table mapreduce_items
--     table mapreduce_jobs
--     table poi_references
--     table pois
--     table publish_queue
--     table rejected_analyses
--     table relay_workers
--     view failed_pois_by_file
--     view failed_pois_by_signature
--     view failed_pois_stuck
--     view relationships
--   River's objects (River's migrations to its version 8, which relay's migration 1 runs)
--     table river_job
--     table river_leader
--     table river_migration
--     table river_notification
--     table river_queue
--   goose's version table (which of relay's migrations are applied)
--     table relay_goose_db_version


-- =============================================================================
-- relay's objects
-- =============================================================================

--------------------------------------------------------------------------------
-- Sequences
--------------------------------------------------------------------------------

CREATE SEQUENCE publish_queue_seq;

--------------------------------------------------------------------------------
-- Table dead_letter_events
--------------------------------------------------------------------------------

CREATE TABLE dead_letter_events (
    id bigint GENERATED ALWAYS AS IDENTITY,
    occurred_at timestamp with time zone NOT NULL DEFAULT now(),
    actor text NOT NULL,
    action text NOT NULL,
    target text NOT NULL,
    item_count integer NOT NULL DEFAULT 0,
    details jsonb NOT NULL DEFAULT '{}'::jsonb,
    CONSTRAINT dead_letter_events_pkey PRIMARY KEY (id),
    CONSTRAINT dead_letter_events_target_check CHECK (target = ANY (ARRAY['failed_pois'::text, 'dead_lettered_items'::text]))
);

CREATE INDEX dead_letter_events_occurred_at_idx ON dead_letter_events USING btree (occurred_at);

--------------------------------------------------------------------------------
-- Table dead_lettered_items
--------------------------------------------------------------------------------

CREATE TABLE dead_lettered_items (
    id bigint GENERATED ALWAYS AS IDENTITY,
    job_id text NOT NULL,
    item_id text NOT NULL,
    item_data jsonb NOT NULL,
    first_attempt timestamp with time zone NOT NULL,
    last_attempt timestamp with time zone NOT NULL,
    failure_count integer NOT NULL,
    failure_history jsonb NOT NULL DEFAULT '[]'::jsonb,
    error_signature text NOT NULL DEFAULT ''::text,
    error_type text NOT NULL DEFAULT 'Unknown'::text,
    worktree_artifacts jsonb,
    reprocess_eligible boolean NOT NULL DEFAULT true,
    manual_review_required boolean NOT NULL DEFAULT false,
    status text NOT NULL DEFAULT 'dead_lettered'::text,
    dead_lettered_at timestamp with time zone NOT NULL DEFAULT now(),
    exit_code integer,
    dead_letter_count integer NOT NULL DEFAULT 1,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT dead_lettered_items_pkey PRIMARY KEY (id),
    CONSTRAINT dead_lettered_items_job_item_key UNIQUE (job_id, item_id),
    CONSTRAINT dead_lettered_items_dead_letter_count_check CHECK (dead_letter_count >= 1),
    CONSTRAINT dead_lettered_items_failure_count_check CHECK (failure_count >= 0),
    CONSTRAINT dead_lettered_items_status_check CHECK (status = ANY (ARRAY['dead_lettered'::text, 'reprocessing'::text, 'reprocessed'::text, 'ignored'::text]))
);

CREATE INDEX dead_lettered_items_dead_lettered_at_idx ON dead_lettered_items USING btree (dead_lettered_at);
CREATE INDEX dead_lettered_items_error_signature_idx ON dead_lettered_items USING btree (error_signature);
CREATE INDEX dead_lettered_items_first_attempt_idx ON dead_lettered_items USING btree (job_id, first_attempt);
CREATE INDEX dead_lettered_items_job_last_attempt_idx ON dead_lettered_items USING btree (job_id, last_attempt);

CREATE TRIGGER dead_lettered_items_count_delete AFTER DELETE ON dead_lettered_items REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_dead_lettered_items_count_delete();
CREATE TRIGGER dead_lettered_items_count_insert AFTER INSERT ON dead_lettered_items REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_dead_lettered_items_count_insert();
CREATE TRIGGER dead_lettered_items_count_truncate AFTER TRUNCATE ON dead_lettered_items FOR EACH STATEMENT EXECUTE FUNCTION relay_dead_lettered_items_count_truncate();
CREATE TRIGGER dead_lettered_items_count_update AFTER UPDATE ON dead_lettered_items REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_dead_lettered_items_count_update();

CREATE FUNCTION relay_dead_lettered_items_count_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO dead_lettered_items_counts (job_id, n)
    SELECT job_id, -count(*) FROM old_rows WHERE status <> 'reprocessed' GROUP BY job_id;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_dead_lettered_items_count_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO dead_lettered_items_counts (job_id, n)
    SELECT job_id, count(*) FROM new_rows WHERE status <> 'reprocessed' GROUP BY job_id;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_dead_lettered_items_count_truncate()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    DELETE FROM dead_lettered_items_counts;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_dead_lettered_items_count_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO dead_lettered_items_counts (job_id, n)
    SELECT job_id, sum(d) FROM (
        SELECT job_id, -1 AS d FROM old_rows WHERE status <> 'reprocessed'
        UNION ALL
        SELECT job_id, 1 FROM new_rows WHERE status <> 'reprocessed') c
    GROUP BY job_id
    HAVING sum(d) <> 0;
    RETURN NULL;
END
$function$;

--------------------------------------------------------------------------------
-- Table dead_lettered_items_counts
--------------------------------------------------------------------------------

CREATE TABLE dead_lettered_items_counts (
    id bigint GENERATED ALWAYS AS IDENTITY,
    job_id text NOT NULL,
    n bigint NOT NULL,
    CONSTRAINT dead_lettered_items_counts_pkey PRIMARY KEY (id)
);

CREATE INDEX dead_lettered_items_counts_job_id_idx ON dead_lettered_items_counts USING btree (job_id);

--------------------------------------------------------------------------------
-- Table failed_pois
--------------------------------------------------------------------------------

CREATE TABLE failed_pois (
    id bigint GENERATED ALWAYS AS IDENTITY,
    original_job_id bigint NOT NULL,
    file_id text NOT NULL,
    poi_id text,
    poi_index integer NOT NULL,
    failed_at timestamp with time zone NOT NULL DEFAULT now(),
    error_message text NOT NULL,
    error_context text NOT NULL DEFAULT ''::text,
    error_class text NOT NULL,
    error_signature text NOT NULL,
    error_history jsonb NOT NULL DEFAULT '[]'::jsonb,
    original_poi_data jsonb NOT NULL,
    status text NOT NULL DEFAULT 'new'::text,
    attempts integer NOT NULL DEFAULT 1,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    reprocess_job_id bigint,
    reprocess_requested_at timestamp with time zone,
    reprocessed_at timestamp with time zone,
    manual_review_required boolean NOT NULL DEFAULT false,
    ignored_reason text,
    repository text COLLATE "C" NOT NULL DEFAULT ''::text,
    file_version bigint,
    superseded_at timestamp with time zone,
    superseded_reason text,
    CONSTRAINT failed_pois_pkey PRIMARY KEY (repository, id),
    CONSTRAINT failed_pois_job_poi_key UNIQUE (repository, original_job_id, poi_index),
    CONSTRAINT failed_pois_attempts_check CHECK (attempts >= 1),
    CONSTRAINT failed_pois_error_class_check CHECK (error_class = ANY (ARRAY['validation'::text, 'panic'::text, 'timeout'::text, 'resolver'::text, 'storage'::text])),
    CONSTRAINT failed_pois_status_check CHECK (status = ANY (ARRAY['new'::text, 'reprocessing'::text, 'reprocessed'::text, 'ignored'::text, 'superseded'::text]))
);

CREATE UNIQUE INDEX failed_pois_actionable_idx ON failed_pois USING btree (repository, file_id, poi_id) WHERE (status = ANY (ARRAY['new'::text, 'reprocessing'::text, 'ignored'::text]));
CREATE INDEX failed_pois_failed_at_idx ON failed_pois USING btree (failed_at, id);
CREATE INDEX failed_pois_file_id_idx ON failed_pois USING btree (repository, file_id);
CREATE INDEX failed_pois_manual_review_idx ON failed_pois USING btree (failed_at) WHERE manual_review_required;
CREATE INDEX failed_pois_poi_id_idx ON failed_pois USING btree (repository, poi_id);
CREATE INDEX failed_pois_signature_failed_at_idx ON failed_pois USING btree (error_signature, failed_at);
CREATE INDEX failed_pois_status_class_idx ON failed_pois USING btree (status, error_class) INCLUDE (reprocess_job_id);
CREATE INDEX failed_pois_status_failed_at_idx ON failed_pois USING btree (status, failed_at);
CREATE INDEX failed_pois_status_file_id_idx ON failed_pois USING btree (status, repository, file_id, id);

CREATE TRIGGER failed_pois_count_delete AFTER DELETE ON failed_pois REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_count_delete();
CREATE TRIGGER failed_pois_count_insert AFTER INSERT ON failed_pois REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_count_insert();
CREATE TRIGGER failed_pois_count_truncate AFTER TRUNCATE ON failed_pois FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_count_truncate();
CREATE TRIGGER failed_pois_count_update AFTER UPDATE ON failed_pois REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_count_update();
CREATE TRIGGER failed_pois_summary_delete AFTER DELETE ON failed_pois REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_summary_delete();
CREATE TRIGGER failed_pois_summary_insert AFTER INSERT ON failed_pois REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_summary_insert();
CREATE TRIGGER failed_pois_summary_truncate AFTER TRUNCATE ON failed_pois FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_summary_truncate();
CREATE TRIGGER failed_pois_summary_update AFTER UPDATE ON failed_pois REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_summary_update();

CREATE FUNCTION relay_failed_pois_count_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO failed_pois_counts (repository, status, error_class, n)
    SELECT repository, status, error_class, -count(*) FROM old_rows GROUP BY repository, status, error_class;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_failed_pois_count_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO failed_pois_counts (repository, status, error_class, n)
    SELECT repository, status, error_class, count(*) FROM new_rows GROUP BY repository, status, error_class;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_failed_pois_count_truncate()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    DELETE FROM failed_pois_counts;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_failed_pois_count_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO failed_pois_counts (repository, status, error_class, n)
    SELECT repository, status, error_class, sum(d) FROM (
        SELECT repository, status, error_class, -1 AS d FROM old_rows
        UNION ALL
        SELECT repository, status, error_class, 1 FROM new_rows) c
    GROUP BY repository, status, error_class
    HAVING sum(d) <> 0;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_failed_pois_summary_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO failed_pois_signature_counts (error_signature, error_class, status, n)
    SELECT error_signature, error_class, status, -count(*) FROM old_rows GROUP BY 1, 2, 3;
    INSERT INTO failed_pois_hourly_counts (hour, status, n)
    SELECT date_trunc('hour', failed_at, 'UTC'), status, -count(*) FROM old_rows GROUP BY 1, 2;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_failed_pois_summary_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO failed_pois_signature_counts (error_signature, error_class, status, n)
    SELECT error_signature, error_class, status, count(*) FROM new_rows GROUP BY 1, 2, 3;
    INSERT INTO failed_pois_hourly_counts (hour, status, n)
    SELECT date_trunc('hour', failed_at, 'UTC'), status, count(*) FROM new_rows GROUP BY 1, 2;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_failed_pois_summary_truncate()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    DELETE FROM failed_pois_signature_counts;
    DELETE FROM failed_pois_hourly_counts;
    RETURN NULL;
END
$function$;

CREATE FUNCTION relay_failed_pois_summary_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO failed_pois_signature_counts (error_signature, error_class, status, n)
    SELECT error_signature, error_class, status, sum(d) FROM (
        SELECT error_signature, error_class, status, -1 AS d FROM old_rows
        UNION ALL
        SELECT error_signature, error_class, status, 1 FROM new_rows) c
    GROUP BY 1, 2, 3
    HAVING sum(d) <> 0;
    INSERT INTO failed_pois_hourly_counts (hour, status, n)
    SELECT hour, status, sum(d) FROM (
        SELECT date_trunc('hour', failed_at, 'UTC') AS hour, status, -1 AS d FROM old_rows
        UNION ALL
        SELECT date_trunc('hour', failed_at, 'UTC'), status, 1 FROM new_rows) c
    GROUP BY 1, 2
    HAVING sum(d) <> 0;
    RETURN NULL;
END
$function$;

--------------------------------------------------------------------------------
-- Table failed_pois_counts
--------------------------------------------------------------------------------

CREATE TABLE failed_pois_counts (
    id bigint GENERATED ALWAYS AS IDENTITY,
    status text NOT NULL,
    error_class text NOT NULL,
    n bigint NOT NULL,
    repository text NOT NULL DEFAULT ''::text,
    CONSTRAINT failed_pois_counts_pkey PRIMARY KEY (id)
);

--------------------------------------------------------------------------------
-- Table failed_pois_hourly_counts
--------------------------------------------------------------------------------

CREATE TABLE failed_pois_hourly_counts (
    id bigint GENERATED ALWAYS AS IDENTITY,
    hour timestamp with time zone NOT NULL,
    status text NOT NULL,
    n bigint NOT NULL,
    CONSTRAINT failed_pois_hourly_counts_pkey PRIMARY KEY (id)
);

CREATE INDEX failed_pois_hourly_counts_hour_idx ON failed_pois_hourly_counts USING btree (hour);

--------------------------------------------------------------------------------
-- Table failed_pois_signature_counts
--------------------------------------------------------------------------------

CREATE TABLE failed_pois_signature_counts (
    id bigint GENERATED ALWAYS AS IDENTITY,
    error_signature text NOT NULL,
    error_class text NOT NULL,
    status text NOT NULL,
    n bigint NOT NULL,
    CONSTRAINT failed_pois_signature_counts_pkey PRIMARY KEY (id)
);

--------------------------------------------------------------------------------
-- Table files
--------------------------------------------------------------------------------

CREATE TABLE files (
    file_id text COLLATE "C" NOT NULL,
    version bigint NOT NULL DEFAULT 1,
    poi_count integer NOT NULL DEFAULT 0,
    published_at timestamp with time zone NOT NULL DEFAULT now(),
    repository text COLLATE "C" NOT NULL DEFAULT ''::text,
    publish_xid bigint,
    CONSTRAINT files_pkey PRIMARY KEY (repository, file_id),
    CONSTRAINT files_file_id_check CHECK (file_id <> ''::text)
);

--------------------------------------------------------------------------------
-- Table link_queue
--------------------------------------------------------------------------------

CREATE TABLE link_queue (
    job_id bigint NOT NULL,
    file_id text COLLATE "C" NOT NULL,
    file_version bigint,
    publish_xid bigint NOT NULL,
    replace boolean NOT NULL,
    published_at timestamp with time zone NOT NULL,
    changed text[] COLLATE "C" NOT NULL,
    ref_sources text[] COLLATE "C" NOT NULL,
    ref_names text[] COLLATE "C" NOT NULL,
    ref_types text[] NOT NULL,
    repository text COLLATE "C" NOT NULL DEFAULT ''::text,
    lane smallint NOT NULL,
    CONSTRAINT link_queue_pkey PRIMARY KEY (repository, job_id, lane),
    CONSTRAINT link_queue_lane_check CHECK (lane >= 0 AND lane < 8)
);

CREATE INDEX link_queue_lane_job_id_idx ON link_queue USING btree (lane, job_id);

--------------------------------------------------------------------------------
-- Table link_rounds
--------------------------------------------------------------------------------

CREATE TABLE link_rounds (
    id bigint GENERATED ALWAYS AS IDENTITY,
    snapshot pg_snapshot NOT NULL,
    linked_at timestamp with time zone NOT NULL DEFAULT now(),
    files integer NOT NULL,
    reresolved integer NOT NULL,
    freshness_seconds double precision[] NOT NULL,
    lanes smallint[],
    began_at timestamp with time zone,
    locked_at timestamp with time zone,
    CONSTRAINT link_rounds_pkey PRIMARY KEY (id)
);

CREATE INDEX link_rounds_linked_at_idx ON link_rounds USING btree (linked_at);

--------------------------------------------------------------------------------
-- Table mapreduce_items
--------------------------------------------------------------------------------

CREATE TABLE mapreduce_items (
    job_id text NOT NULL,
    item_id text NOT NULL,
    "position" integer NOT NULL,
    item_data jsonb NOT NULL,
    status text NOT NULL DEFAULT 'pending'::text,
    attempts integer NOT NULL DEFAULT 0,
    failure_history jsonb NOT NULL DEFAULT '[]'::jsonb,
    result bytea,
    river_job_id bigint,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    finished_at timestamp with time zone,
    CONSTRAINT mapreduce_items_pkey PRIMARY KEY (job_id, item_id),
    CONSTRAINT mapreduce_items_attempts_check CHECK (attempts >= 0),
    CONSTRAINT mapreduce_items_item_id_check CHECK (item_id <> ''::text),
    CONSTRAINT mapreduce_items_status_check CHECK (status = ANY (ARRAY['pending'::text, 'succeeded'::text, 'dead_lettered'::text])),
    CONSTRAINT mapreduce_items_job_id_fkey FOREIGN KEY (job_id) REFERENCES mapreduce_jobs(job_id) ON DELETE CASCADE
);

CREATE INDEX mapreduce_items_pending_idx ON mapreduce_items USING btree (job_id) WHERE (status = 'pending'::text);
CREATE INDEX mapreduce_items_river_job_id_idx ON mapreduce_items USING btree (river_job_id);

--------------------------------------------------------------------------------
-- Table mapreduce_jobs
--------------------------------------------------------------------------------

CREATE TABLE mapreduce_jobs (
    job_id text NOT NULL,
    agent text NOT NULL,
    input_path text NOT NULL DEFAULT ''::text,
    item_count integer NOT NULL,
    max_retries integer NOT NULL,
    parallel integer NOT NULL,
    timeout_ms bigint NOT NULL,
    retry_backoff_ms bigint NOT NULL,
    dlq_max_items integer NOT NULL,
    dlq_include_errors text[] NOT NULL DEFAULT '{}'::text[],
    dlq_exclude_errors text[] NOT NULL DEFAULT '{}'::text[],
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    agent_env text[] NOT NULL DEFAULT '{}'::text[],
    CONSTRAINT mapreduce_jobs_pkey PRIMARY KEY (job_id),
    CONSTRAINT mapreduce_jobs_agent_check CHECK (agent <> ''::text),
    CONSTRAINT mapreduce_jobs_dlq_max_items_check CHECK (dlq_max_items >= 1),
    CONSTRAINT mapreduce_jobs_item_count_check CHECK (item_count >= 0),
    CONSTRAINT mapreduce_jobs_job_id_check CHECK (job_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'::text),
    CONSTRAINT mapreduce_jobs_max_retries_check CHECK (max_retries >= 0 AND max_retries <= 100),
    CONSTRAINT mapreduce_jobs_parallel_check CHECK (parallel >= 1),
    CONSTRAINT mapreduce_jobs_retry_backoff_ms_check CHECK (retry_backoff_ms >= 0),
    CONSTRAINT mapreduce_jobs_timeout_ms_check CHECK (timeout_ms > 0)
);

--------------------------------------------------------------------------------
-- Table poi_references
--------------------------------------------------------------------------------

CREATE TABLE poi_references (
    source_poi_id text COLLATE "C" NOT NULL,
    source_file_id text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    type text COLLATE "C" NOT NULL,
    target_poi_id text COLLATE "C",
    target_file_id text COLLATE "C",
    job_id bigint,
    resolved_at timestamp with time zone,
    depends text[] COLLATE "C",
    key text COLLATE "C" NOT NULL,
    resolved_round bigint NOT NULL DEFAULT 0,
    repository text COLLATE "C" NOT NULL DEFAULT ''::text,
    target_repository text COLLATE "C" NOT NULL DEFAULT ''::text,
    CONSTRAINT poi_references_pkey PRIMARY KEY (repository, source_poi_id, type, name)
);

CREATE INDEX poi_references_depends_idx ON poi_references USING gin (depends) WITH (fastupdate=off) WHERE (depends IS NOT NULL);
CREATE INDEX poi_references_key_resolved_round_idx ON poi_references USING btree (repository, key, resolved_round);
CREATE INDEX poi_references_symbol_key_idx ON poi_references USING btree (key, resolved_round) WHERE (key ~~ 'sym:%'::text);
CREATE INDEX poi_references_target_poi_id_idx ON poi_references USING btree (target_repository, target_poi_id) WHERE (target_poi_id IS NOT NULL);

--------------------------------------------------------------------------------
-- Table pois
--------------------------------------------------------------------------------

CREATE TABLE pois (
    poi_id text COLLATE "C" NOT NULL,
    file_id text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    type text NOT NULL,
    line_number integer NOT NULL,
    symbol text COLLATE "C",
    receiver text NOT NULL DEFAULT ''::text,
    result text NOT NULL DEFAULT ''::text,
    fields text NOT NULL DEFAULT ''::text,
    repository text COLLATE "C" NOT NULL DEFAULT ''::text,
    CONSTRAINT pois_pkey PRIMARY KEY (repository, poi_id),
    CONSTRAINT pois_line_number_check CHECK (line_number >= 0),
    CONSTRAINT pois_poi_id_check CHECK (poi_id <> ''::text),
    CONSTRAINT pois_repository_file_id_fkey FOREIGN KEY (repository, file_id) REFERENCES files(repository, file_id) ON DELETE CASCADE
);

CREATE INDEX pois_file_id_idx ON pois USING btree (repository, file_id);
CREATE INDEX pois_name_idx ON pois USING btree (repository, name);
CREATE INDEX pois_symbol_idx ON pois USING btree (symbol) WHERE (symbol IS NOT NULL);

--------------------------------------------------------------------------------
-- Table publish_queue
--------------------------------------------------------------------------------

CREATE TABLE publish_queue (
    file_id text NOT NULL,
    analysis jsonb NOT NULL,
    seq bigint NOT NULL,
    queued_at timestamp with time zone NOT NULL,
    repository text COLLATE "C" NOT NULL DEFAULT ''::text,
    CONSTRAINT publish_queue_pkey PRIMARY KEY (repository, file_id)
);

CREATE INDEX publish_queue_seq_idx ON publish_queue USING btree (seq);

--------------------------------------------------------------------------------
-- Table rejected_analyses
--------------------------------------------------------------------------------

CREATE TABLE rejected_analyses (
    id bigint NOT NULL DEFAULT nextval('rejected_analyses_id_seq'::regclass),
    file_id text NOT NULL,
    analysis jsonb NOT NULL,
    reason text NOT NULL,
    poi_id text,
    file_version bigint NOT NULL,
    queued_at timestamp with time zone NOT NULL,
    rejected_at timestamp with time zone NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 1,
    repository text COLLATE "C" NOT NULL DEFAULT ''::text,
    CONSTRAINT rejected_analyses_pkey PRIMARY KEY (repository, id)
);

CREATE SEQUENCE rejected_analyses_id_seq OWNED BY rejected_analyses.id;

CREATE INDEX rejected_analyses_file_id_idx ON rejected_analyses USING btree (repository, file_id);
CREATE INDEX rejected_analyses_id_idx ON rejected_analyses USING btree (id);

--------------------------------------------------------------------------------
-- Table relay_workers
--------------------------------------------------------------------------------

CREATE TABLE relay_workers (
    client_id text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    started_at timestamp with time zone NOT NULL DEFAULT now(),
    heartbeat_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT relay_workers_pkey PRIMARY KEY (client_id)
);

--------------------------------------------------------------------------------
-- View failed_pois_by_file
--------------------------------------------------------------------------------

CREATE VIEW failed_pois_by_file AS
 SELECT failed_pois.file_id,
    count(*) AS failures,
    count(*) FILTER (WHERE failed_pois.status = 'new'::text) AS new,
    count(*) FILTER (WHERE failed_pois.status = 'reprocessing'::text) AS reprocessing,
    count(*) FILTER (WHERE failed_pois.status = 'reprocessed'::text) AS reprocessed,
    count(*) FILTER (WHERE failed_pois.status = 'ignored'::text) AS ignored,
    min(failed_pois.failed_at) AS first_failed_at,
    max(failed_pois.failed_at) AS last_failed_at,
    failed_pois.repository,
    count(*) FILTER (WHERE failed_pois.status = 'superseded'::text) AS superseded
   FROM failed_pois
  GROUP BY failed_pois.repository, failed_pois.file_id;

--------------------------------------------------------------------------------
-- View failed_pois_by_signature
--------------------------------------------------------------------------------

CREATE VIEW failed_pois_by_signature AS
 SELECT failed_pois.error_signature,
    failed_pois.error_class,
    count(*) AS failures,
    count(*) FILTER (WHERE failed_pois.status = 'new'::text) AS new,
    count(*) FILTER (WHERE failed_pois.status = 'new'::text AND failed_pois.manual_review_required) AS manual_review,
    count(*) FILTER (WHERE failed_pois.status = 'reprocessed'::text) AS reprocessed,
    count(DISTINCT failed_pois.file_id) AS files,
    min(failed_pois.failed_at) AS first_seen,
    max(failed_pois.failed_at) AS last_seen,
    count(*) FILTER (WHERE failed_pois.status = 'superseded'::text) AS superseded
   FROM failed_pois
  GROUP BY failed_pois.error_signature, failed_pois.error_class;

--------------------------------------------------------------------------------
-- View failed_pois_stuck
--------------------------------------------------------------------------------

CREATE VIEW failed_pois_stuck AS
 SELECT f.id,
    f.file_id,
    f.poi_id,
    f.error_signature,
    f.reprocess_job_id,
    f.reprocess_requested_at,
    j.state::text AS job_state
   FROM failed_pois f
     LEFT JOIN river_job j ON j.id = f.reprocess_job_id
  WHERE f.status = 'reprocessing'::text AND (j.id IS NULL OR (j.state <> ALL (ARRAY['available'::river_job_state, 'pending'::river_job_state, 'running'::river_job_state, 'retryable'::river_job_state, 'scheduled'::river_job_state])));

--------------------------------------------------------------------------------
-- View relationships
--------------------------------------------------------------------------------

CREATE VIEW relationships AS
 SELECT DISTINCT ON (poi_references.repository, poi_references.source_poi_id, poi_references.target_repository, poi_references.target_poi_id, poi_references.type) poi_references.source_poi_id,
    poi_references.target_poi_id,
    poi_references.type,
    poi_references.name,
    poi_references.source_file_id,
    poi_references.target_file_id,
    poi_references.job_id,
    poi_references.resolved_at AS created_at,
    poi_references.repository,
    poi_references.target_repository
   FROM poi_references
  WHERE poi_references.target_poi_id IS NOT NULL
  ORDER BY poi_references.repository, poi_references.source_poi_id, poi_references.target_repository, poi_references.target_poi_id, poi_references.type, poi_references.name;

--------------------------------------------------------------------------------
-- Functions
--------------------------------------------------------------------------------

CREATE FUNCTION relay_callees(poi text, depth integer DEFAULT 1, repo text DEFAULT ''::text, rel_type text DEFAULT 'CALLS'::text)
 RETURNS TABLE(level integer, repository text, poi_id text, name text, type text, file_id text, line_number integer, symbol text, via_repository text, via_poi_id text, repeated boolean, cycle boolean)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'relay', 'pg_temp'
 SET plan_cache_mode TO 'auto'
 SET enable_seqscan TO 'on'
AS $function$
BEGIN
    -- set_config(..., true) lasts to the end of the transaction, but this
    -- function's own SET clauses (below) restore both settings on return.
    IF (SELECT reltuples FROM pg_class WHERE oid = 'poi_references'::regclass) >= 1000000
       AND (SELECT reltuples FROM pg_class WHERE oid = 'pois'::regclass) >= 100000 THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true),
                set_config('enable_seqscan', 'off', true);
    END IF;
    RETURN QUERY SELECT * FROM relay_graph_walk(poi, depth, repo, rel_type, false);
END
$function$;

CREATE FUNCTION relay_callers(poi text, depth integer DEFAULT 1, repo text DEFAULT ''::text, rel_type text DEFAULT 'CALLS'::text)
 RETURNS TABLE(level integer, repository text, poi_id text, name text, type text, file_id text, line_number integer, symbol text, via_repository text, via_poi_id text, repeated boolean, cycle boolean)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'relay', 'pg_temp'
 SET plan_cache_mode TO 'auto'
 SET enable_seqscan TO 'on'
AS $function$
BEGIN
    -- set_config(..., true) lasts to the end of the transaction, but this
    -- function's own SET clauses (below) restore both settings on return.
    IF (SELECT reltuples FROM pg_class WHERE oid = 'poi_references'::regclass) >= 1000000
       AND (SELECT reltuples FROM pg_class WHERE oid = 'pois'::regclass) >= 100000 THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true),
                set_config('enable_seqscan', 'off', true);
    END IF;
    RETURN QUERY SELECT * FROM relay_graph_walk(poi, depth, repo, rel_type, true);
END
$function$;

CREATE FUNCTION relay_dependents(file text, depth integer DEFAULT NULL::integer, repo text DEFAULT ''::text)
 RETURNS TABLE(level integer, repository text, file_id text, via_repository text, via_file_id text)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'relay', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    v_repo text[];
    v_file text[];
    lo integer := 1;
    hi integer := 1;
    lvl integer := 0;
    e record;
BEGIN
    IF depth IS NOT NULL AND depth < 1 THEN
        RAISE EXCEPTION 'depth must be 1 or more (or null for every level), not %', depth
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM files f WHERE f.repository = repo AND f.file_id = file) THEN
        RAISE EXCEPTION 'no file % in repository %', quote_literal(coalesce(file, '')), quote_literal(coalesce(repo, ''))
            USING ERRCODE = 'no_data_found';
    END IF;
    v_repo := ARRAY[repo];
    v_file := ARRAY[file];
    WHILE (depth IS NULL OR lvl < depth) AND lo <= hi LOOP
        lvl := lvl + 1;
        -- As in relay_graph_walk, the query has read the level before the
        -- loop appends to v_repo and v_file.
        FOR e IN
            SELECT DISTINCT ON (r.repository, r.source_file_id) f.i AS up, r.repository AS repo, r.source_file_id AS file
            FROM generate_series(lo, hi) AS f(i)
            JOIN pois p ON p.repository = v_repo[f.i] AND p.file_id = v_file[f.i]
            JOIN poi_references r ON r.target_repository = p.repository AND r.target_poi_id = p.poi_id
            WHERE NOT EXISTS (SELECT 1 FROM unnest(v_repo, v_file) AS v(repo, file)
                              WHERE v.repo = r.repository AND v.file = r.source_file_id)
            ORDER BY r.repository, r.source_file_id, f.i
        LOOP
            level := lvl;
            repository := e.repo;
            file_id := e.file;
            via_repository := v_repo[e.up];
            via_file_id := v_file[e.up];
            v_repo := v_repo || e.repo;
            v_file := v_file || e.file;
            RETURN NEXT;
        END LOOP;
        lo := hi + 1;
        hi := cardinality(v_file);
    END LOOP;
END
$function$;

CREATE FUNCTION relay_file_lock_key(repo text, file text)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'relay', 'pg_temp'
AS $function$
    SELECT hashtextextended(length(repo)::text || ':' || repo || file, 1919249520)
$function$;

CREATE FUNCTION relay_graph_walk(poi text, depth integer, repo text, rel_type text, incoming boolean)
 RETURNS TABLE(level integer, repository text, poi_id text, name text, type text, file_id text, line_number integer, symbol text, via_repository text, via_poi_id text, repeated boolean, cycle boolean)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'relay', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    -- Every item listed as expanded, index 1 the root; up is the index of
    -- the item it was reached through (0 for the root).
    v_repo text[];
    v_poi text[];
    v_up integer[];
    lo integer := 1;
    hi integer := 1;
    lvl integer := 0;
    e record;
    a integer;
BEGIN
    IF depth IS NULL OR depth < 1 THEN
        RAISE EXCEPTION 'depth must be 1 or more, not %', coalesce(depth::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF rel_type IS NULL OR rel_type NOT IN ('CALLS', 'EXTENDS', 'IMPLEMENTS', 'IMPORTS') THEN
        RAISE EXCEPTION 'relationship type % is not one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS', coalesce(quote_literal(rel_type), 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pois p WHERE p.repository = repo AND p.poi_id = poi) THEN
        RAISE EXCEPTION 'no POI % in repository %', quote_literal(coalesce(poi, '')), quote_literal(coalesce(repo, ''))
            USING ERRCODE = 'no_data_found';
    END IF;
    v_repo := ARRAY[repo];
    v_poi := ARRAY[poi];
    v_up := ARRAY[0];
    WHILE lvl < depth AND lo <= hi LOOP
        lvl := lvl + 1;
        -- The ORDER BY reads every edge of the level before the loop's
        -- first row, so the appends below do not change what it reads.
        FOR e IN
            WITH edge AS (
                SELECT f.i AS up, r.repository AS repo, r.source_poi_id AS poi
                FROM generate_series(lo, hi) AS f(i)
                JOIN poi_references r ON r.target_repository = v_repo[f.i] AND r.target_poi_id = v_poi[f.i]
                WHERE incoming AND r.type = rel_type
                UNION
                SELECT f.i, r.target_repository, r.target_poi_id
                FROM generate_series(lo, hi) AS f(i)
                JOIN poi_references r ON r.repository = v_repo[f.i] AND r.source_poi_id = v_poi[f.i]
                WHERE NOT incoming AND r.type = rel_type AND r.target_poi_id IS NOT NULL
            )
            SELECT edge.up, edge.repo, edge.poi, p.name, p.type, p.file_id, p.line_number, p.symbol,
                   v.j::integer AS seen,
                   row_number() OVER (PARTITION BY edge.repo, edge.poi ORDER BY edge.up) AS nth
            FROM edge
            LEFT JOIN pois p ON p.repository = edge.repo AND p.poi_id = edge.poi
            LEFT JOIN unnest(v_repo, v_poi) WITH ORDINALITY AS v(repo, poi, j)
                ON v.repo = edge.repo AND v.poi = edge.poi
            ORDER BY edge.up, p.file_id, p.line_number, edge.repo, edge.poi
        LOOP
            level := lvl;
            repository := e.repo;
            poi_id := e.poi;
            name := e.name;
            type := e.type;
            file_id := e.file_id;
            line_number := e.line_number;
            symbol := e.symbol;
            via_repository := v_repo[e.up];
            via_poi_id := v_poi[e.up];
            repeated := e.seen IS NOT NULL OR e.nth > 1;
            cycle := false;
            IF e.seen IS NOT NULL THEN
                -- A cycle when the item is the root or an item the path
                -- from the root to this one went through.
                a := e.up;
                WHILE a > 0 LOOP
                    IF a = e.seen THEN
                        cycle := true;
                        EXIT;
                    END IF;
                    a := v_up[a];
                END LOOP;
            ELSIF e.nth = 1 THEN
                v_repo := v_repo || e.repo;
                v_poi := v_poi || e.poi;
                v_up := v_up || e.up;
            END IF;
            RETURN NEXT;
        END LOOP;
        lo := hi + 1;
        hi := cardinality(v_poi);
    END LOOP;
END
$function$;

CREATE FUNCTION relay_lock_files(repos text[], files text[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'relay', 'pg_temp'
AS $function$
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
$function$;

CREATE FUNCTION relay_lock_repository(repo text)
 RETURNS void
 LANGUAGE sql
 SET search_path TO 'relay', 'pg_temp'
AS $function$
    SELECT pg_advisory_xact_lock(relay_repository_lock_key(repo))
$function$;

CREATE FUNCTION relay_publish(analysis jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'relay', 'pg_temp'
AS $function$
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
$function$;

CREATE FUNCTION relay_publish_check(analysis jsonb)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'relay', 'pg_temp'
AS $function$
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
$function$;

CREATE FUNCTION relay_publish_many(analyses jsonb)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'relay', 'pg_temp'
AS $function$
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
$function$;

CREATE FUNCTION relay_publish_repository(analysis jsonb)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'relay', 'pg_temp'
AS $function$
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
$function$;

CREATE FUNCTION relay_repository_lock_key(repo text)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'relay', 'pg_temp'
AS $function$
    SELECT hashtextextended(repo, 1919249521)
$function$;

CREATE FUNCTION relay_try_lock_files(repos text[], files text[])
 RETURNS SETOF integer
 LANGUAGE sql
 SET search_path TO 'relay', 'pg_temp'
AS $function$
    SELECT u.i::integer FROM unnest(repos, files) WITH ORDINALITY AS u(repo, file, i)
    WHERE NOT (pg_try_advisory_xact_lock_shared(relay_repository_lock_key(u.repo))
               AND pg_try_advisory_xact_lock(relay_file_lock_key(u.repo, u.file)))
$function$;


-- =============================================================================
-- River's objects (River's migrations to its version 8, which relay's migration 1 runs)
-- =============================================================================

--------------------------------------------------------------------------------
-- Types
--------------------------------------------------------------------------------

CREATE TYPE river_job_state AS ENUM ('available', 'cancelled', 'completed', 'discarded', 'pending', 'retryable', 'running', 'scheduled');

--------------------------------------------------------------------------------
-- Table river_job
--------------------------------------------------------------------------------

CREATE TABLE river_job (
    id bigint NOT NULL DEFAULT nextval('river_job_id_seq'::regclass),
    state river_job_state NOT NULL DEFAULT 'available'::river_job_state,
    attempt smallint NOT NULL DEFAULT 0,
    max_attempts smallint NOT NULL DEFAULT 25,
    attempted_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    finalized_at timestamp with time zone,
    scheduled_at timestamp with time zone NOT NULL DEFAULT now(),
    priority smallint NOT NULL DEFAULT 1,
    args jsonb NOT NULL,
    attempted_by text[],
    errors jsonb[],
    kind text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    queue text NOT NULL DEFAULT 'default'::text,
    tags character varying(255)[] NOT NULL DEFAULT '{}'::character varying[],
    unique_key bytea,
    unique_states bit(8),
    CONSTRAINT river_job_pkey PRIMARY KEY (id),
    CONSTRAINT finalized_or_finalized_at_null CHECK (finalized_at IS NULL AND (state <> ALL (ARRAY['cancelled'::river_job_state, 'completed'::river_job_state, 'discarded'::river_job_state])) OR finalized_at IS NOT NULL AND (state = ANY (ARRAY['cancelled'::river_job_state, 'completed'::river_job_state, 'discarded'::river_job_state]))),
    CONSTRAINT kind_length CHECK (char_length(kind) > 0 AND char_length(kind) < 128),
    CONSTRAINT max_attempts_is_positive CHECK (max_attempts > 0),
    CONSTRAINT priority_in_range CHECK (priority >= 1 AND priority <= 4),
    CONSTRAINT queue_length CHECK (char_length(queue) > 0 AND char_length(queue) < 128)
);

CREATE SEQUENCE river_job_id_seq OWNED BY river_job.id;

CREATE INDEX river_job_kind ON river_job USING btree (kind);
CREATE INDEX river_job_metadata_index ON river_job USING gin (metadata);
CREATE INDEX river_job_prioritized_fetching_index ON river_job USING btree (state, queue, priority, scheduled_at, id);
CREATE INDEX river_job_state_and_finalized_at_index ON river_job USING btree (state, finalized_at) WHERE (finalized_at IS NOT NULL);
CREATE UNIQUE INDEX river_job_unique_idx ON river_job USING btree (unique_key) WHERE ((unique_key IS NOT NULL) AND (unique_states IS NOT NULL) AND river_job_state_in_bitmask(unique_states, state));

--------------------------------------------------------------------------------
-- Table river_leader
--------------------------------------------------------------------------------

CREATE UNLOGGED TABLE river_leader (
    elected_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    leader_id text NOT NULL,
    name text NOT NULL DEFAULT 'default'::text,
    CONSTRAINT river_leader_pkey PRIMARY KEY (name),
    CONSTRAINT leader_id_length CHECK (char_length(leader_id) > 0 AND char_length(leader_id) < 128),
    CONSTRAINT name_length CHECK (name = 'default'::text)
);

--------------------------------------------------------------------------------
-- Table river_migration
--------------------------------------------------------------------------------

CREATE TABLE river_migration (
    line text NOT NULL,
    version bigint NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT river_migration_pkey1 PRIMARY KEY (line, version),
    CONSTRAINT line_length CHECK (char_length(line) > 0 AND char_length(line) < 128),
    CONSTRAINT version_gte_1 CHECK (version >= 1)
);

--------------------------------------------------------------------------------
-- Table river_notification
--------------------------------------------------------------------------------

CREATE TABLE river_notification (
    id bigint NOT NULL DEFAULT nextval('river_notification_id_seq'::regclass),
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    payload text NOT NULL,
    topic text NOT NULL,
    CONSTRAINT river_notification_pkey PRIMARY KEY (id),
    CONSTRAINT topic_length CHECK (length(topic) > 0 AND length(topic) < 128)
);

CREATE SEQUENCE river_notification_id_seq OWNED BY river_notification.id;

CREATE INDEX river_notification_created_at_idx ON river_notification USING btree (created_at);
CREATE INDEX river_notification_topic_id_idx ON river_notification USING btree (topic, id);

--------------------------------------------------------------------------------
-- Table river_queue
--------------------------------------------------------------------------------

CREATE TABLE river_queue (
    name text NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    paused_at timestamp with time zone,
    updated_at timestamp with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT river_queue_pkey PRIMARY KEY (name)
);

--------------------------------------------------------------------------------
-- Functions
--------------------------------------------------------------------------------

CREATE FUNCTION river_job_state_in_bitmask(bitmask bit, state river_job_state)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT CASE state
        WHEN 'available' THEN get_bit(bitmask, 7)
        WHEN 'cancelled' THEN get_bit(bitmask, 6)
        WHEN 'completed' THEN get_bit(bitmask, 5)
        WHEN 'discarded' THEN get_bit(bitmask, 4)
        WHEN 'pending'   THEN get_bit(bitmask, 3)
        WHEN 'retryable' THEN get_bit(bitmask, 2)
        WHEN 'running'   THEN get_bit(bitmask, 1)
        WHEN 'scheduled' THEN get_bit(bitmask, 0)
        ELSE 0
    END = 1;
$function$;


-- =============================================================================
-- goose's version table (which of relay's migrations are applied)
-- =============================================================================

--------------------------------------------------------------------------------
-- Table relay_goose_db_version
--------------------------------------------------------------------------------

CREATE TABLE relay_goose_db_version (
    id integer GENERATED BY DEFAULT AS IDENTITY,
    version_id bigint NOT NULL,
    is_applied boolean NOT NULL,
    tstamp timestamp without time zone NOT NULL DEFAULT now(),
    CONSTRAINT relay_goose_db_version_pkey PRIMARY KEY (id)
);
