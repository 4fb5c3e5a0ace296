-- +goose Up
-- MapReduce jobs (`relay mapreduce run`): one row per job, holding what every
-- item of the job is run with. docs/dead_lettered_items.md documents it.
CREATE TABLE mapreduce_jobs (
    job_id             text        PRIMARY KEY CHECK (job_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
    agent              text        NOT NULL CHECK (agent <> ''),
    input_path         text        NOT NULL DEFAULT '',
    item_count         integer     NOT NULL CHECK (item_count >= 0),
    max_retries        integer     NOT NULL CHECK (max_retries BETWEEN 0 AND 100),
    parallel           integer     NOT NULL CHECK (parallel >= 1),
    timeout_ms         bigint      NOT NULL CHECK (timeout_ms > 0),
    retry_backoff_ms   bigint      NOT NULL CHECK (retry_backoff_ms >= 0),
    dlq_max_items      integer     NOT NULL CHECK (dlq_max_items >= 1),
    dlq_include_errors text[]      NOT NULL DEFAULT '{}',
    dlq_exclude_errors text[]      NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now()
);

-- mapreduce_items: one row per work item. status is pending until the item
-- succeeds or is dead-lettered; whether a pending item is queued, running or
-- waiting for a retry is its River job's state (river_job_id, the item's
-- current job). failure_history holds every failed attempt, across retries.
CREATE TABLE mapreduce_items (
    job_id          text        NOT NULL REFERENCES mapreduce_jobs (job_id) ON DELETE CASCADE,
    item_id         text        NOT NULL CHECK (item_id <> ''),
    position        integer     NOT NULL,
    item_data       jsonb       NOT NULL,
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'dead_lettered')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    failure_history jsonb       NOT NULL DEFAULT '[]',
    result          bytea,
    river_job_id    bigint,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    PRIMARY KEY (job_id, item_id)
);
CREATE INDEX mapreduce_items_river_job_id_idx ON mapreduce_items (river_job_id);
CREATE INDEX mapreduce_items_pending_idx ON mapreduce_items (job_id) WHERE status = 'pending';

-- dead_lettered_items gains the last attempt's exit code (for --filter and
-- CSV), how many times the item was dead-lettered (a retry from the DLQ that
-- fails again counts), and when the row last changed.
ALTER TABLE dead_lettered_items
    ADD COLUMN exit_code         integer,
    ADD COLUMN dead_letter_count integer     NOT NULL DEFAULT 1 CHECK (dead_letter_count >= 1),
    ADD COLUMN updated_at        timestamptz NOT NULL DEFAULT now();
-- `relay dlq purge --older-than-days`.
CREATE INDEX dead_lettered_items_dead_lettered_at_idx ON dead_lettered_items (dead_lettered_at);
-- `relay dlq list`: newest failures first, per job.
CREATE INDEX dead_lettered_items_job_last_attempt_idx ON dead_lettered_items (job_id, last_attempt);

-- dead_lettered_item_counts: how many rows each job has in the DLQ (status
-- other than reprocessed), kept by a trigger so that the capacity check on
-- every dead-lettering reads one row instead of counting up to 10,000+.
CREATE TABLE dead_lettered_item_counts (
    job_id text    PRIMARY KEY,
    items  integer NOT NULL DEFAULT 0
);
INSERT INTO dead_lettered_item_counts (job_id, items)
SELECT job_id, count(*) FROM dead_lettered_items WHERE status <> 'reprocessed' GROUP BY job_id;

-- +goose StatementBegin
CREATE FUNCTION dead_lettered_items_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status <> 'reprocessed' THEN
        UPDATE dead_lettered_item_counts SET items = items - 1 WHERE job_id = OLD.job_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status <> 'reprocessed' THEN
        INSERT INTO dead_lettered_item_counts AS c (job_id, items) VALUES (NEW.job_id, 1)
        ON CONFLICT (job_id) DO UPDATE SET items = c.items + 1;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER dead_lettered_items_count AFTER INSERT OR DELETE OR UPDATE OF status, job_id ON dead_lettered_items
    FOR EACH ROW EXECUTE FUNCTION dead_lettered_items_count();

-- +goose Down
DROP TRIGGER dead_lettered_items_count ON dead_lettered_items;
DROP FUNCTION dead_lettered_items_count();
DROP TABLE dead_lettered_item_counts;
DROP INDEX dead_lettered_items_job_last_attempt_idx;
DROP INDEX dead_lettered_items_dead_lettered_at_idx;
ALTER TABLE dead_lettered_items
    DROP COLUMN updated_at,
    DROP COLUMN dead_letter_count,
    DROP COLUMN exit_code;
DROP TABLE mapreduce_items;
DROP TABLE mapreduce_jobs;
