-- +goose Up
-- files: one row per published file; version increases on every publish so a
-- batch job for an older analysis of the file knows it has been superseded.
CREATE TABLE files (
    file_id      text        PRIMARY KEY CHECK (file_id <> ''),
    version      bigint      NOT NULL DEFAULT 1,
    poi_count    integer     NOT NULL DEFAULT 0,
    published_at timestamptz NOT NULL DEFAULT now()
);

-- pois: the symbol table the resolver looks names up in. Only POIs that pass
-- structural validation are symbols; the rest travel in the job and are
-- dead-lettered by the worker.
CREATE TABLE pois (
    poi_id      text    PRIMARY KEY CHECK (poi_id <> ''),
    file_id     text    NOT NULL REFERENCES files (file_id) ON DELETE CASCADE,
    name        text    NOT NULL,
    type        text    NOT NULL,
    line_number integer NOT NULL CHECK (line_number >= 0)
);
CREATE INDEX pois_file_id_idx ON pois (file_id);
CREATE INDEX pois_name_idx ON pois (name);

-- poi_references: the names each resolved POI refers to. Kept so that a name
-- published later resolves references that arrived earlier.
CREATE TABLE poi_references (
    source_poi_id  text NOT NULL REFERENCES pois (poi_id) ON DELETE CASCADE,
    source_file_id text NOT NULL,
    name           text NOT NULL,
    type           text NOT NULL,
    PRIMARY KEY (source_poi_id, type, name)
);
CREATE INDEX poi_references_name_idx ON poi_references (name, type);

-- relationships: resolved edges between POIs.
CREATE TABLE relationships (
    source_poi_id  text        NOT NULL REFERENCES pois (poi_id) ON DELETE CASCADE,
    target_poi_id  text        NOT NULL REFERENCES pois (poi_id) ON DELETE CASCADE,
    type           text        NOT NULL CHECK (type IN ('CALLS', 'EXTENDS', 'IMPLEMENTS', 'IMPORTS')),
    name           text        NOT NULL,
    source_file_id text        NOT NULL,
    target_file_id text        NOT NULL,
    job_id         bigint,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_poi_id, target_poi_id, type)
);
CREATE INDEX relationships_target_poi_id_idx ON relationships (target_poi_id);
CREATE INDEX relationships_name_idx ON relationships (name, type);

-- failed_pois: the analyst-facing dead-letter table for POIs. Its columns are
-- a documented, stable contract (README.md, docs/failed_pois.md).
CREATE TABLE failed_pois (
    id                     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    original_job_id        bigint      NOT NULL,
    file_id                text        NOT NULL,
    poi_id                 text,
    poi_index              integer     NOT NULL,
    failed_at              timestamptz NOT NULL DEFAULT now(),
    error_message          text        NOT NULL,
    error_context          text        NOT NULL DEFAULT '',
    error_class            text        NOT NULL CHECK (error_class IN ('validation', 'panic', 'timeout', 'resolver', 'storage')),
    error_signature        text        NOT NULL,
    error_history          jsonb       NOT NULL DEFAULT '[]',
    original_poi_data      jsonb       NOT NULL,
    status                 text        NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'reprocessing', 'reprocessed', 'ignored')),
    attempts               integer     NOT NULL DEFAULT 1 CHECK (attempts >= 1),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    -- One row per failure of one POI (by its position) in one job: a retried
    -- batch cannot write the same failure twice.
    CONSTRAINT failed_pois_job_poi_key UNIQUE (original_job_id, poi_index)
);
CREATE INDEX failed_pois_status_failed_at_idx ON failed_pois (status, failed_at);
CREATE INDEX failed_pois_error_signature_idx ON failed_pois (error_signature);
CREATE INDEX failed_pois_file_id_idx ON failed_pois (file_id);
CREATE INDEX failed_pois_poi_id_idx ON failed_pois (poi_id);

-- dead_lettered_items: work items that exhausted their retries. MapReduce
-- items use their job and item ids; resolve_file batches that River discarded
-- are captured with job_id 'resolve_file' and item_id the River job id.
CREATE TABLE dead_lettered_items (
    id                     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id                 text        NOT NULL,
    item_id                text        NOT NULL,
    item_data              jsonb       NOT NULL,
    first_attempt          timestamptz NOT NULL,
    last_attempt           timestamptz NOT NULL,
    failure_count          integer     NOT NULL CHECK (failure_count >= 0),
    failure_history        jsonb       NOT NULL DEFAULT '[]',
    error_signature        text        NOT NULL DEFAULT '',
    error_type             text        NOT NULL DEFAULT 'Unknown',
    worktree_artifacts     jsonb,
    reprocess_eligible     boolean     NOT NULL DEFAULT true,
    manual_review_required boolean     NOT NULL DEFAULT false,
    status                 text        NOT NULL DEFAULT 'dead_lettered' CHECK (status IN ('dead_lettered', 'reprocessing', 'reprocessed', 'ignored')),
    dead_lettered_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT dead_lettered_items_job_item_key UNIQUE (job_id, item_id)
);
CREATE INDEX dead_lettered_items_first_attempt_idx ON dead_lettered_items (job_id, first_attempt);
CREATE INDEX dead_lettered_items_error_signature_idx ON dead_lettered_items (error_signature);

-- dead_letter_events: the audit trail of everything done to the dead-letter
-- tables: who, what, when, how many.
CREATE TABLE dead_letter_events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    actor       text        NOT NULL,
    action      text        NOT NULL,
    target      text        NOT NULL CHECK (target IN ('failed_pois', 'dead_lettered_items')),
    item_count  integer     NOT NULL DEFAULT 0,
    details     jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX dead_letter_events_occurred_at_idx ON dead_letter_events (occurred_at);

-- +goose Down
DROP TABLE dead_letter_events;
DROP TABLE dead_lettered_items;
DROP TABLE failed_pois;
DROP TABLE relationships;
DROP TABLE poi_references;
DROP TABLE pois;
DROP TABLE files;
