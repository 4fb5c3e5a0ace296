-- The bulk linker (docs/design.md, "Resolution protocol"). A resolve_file
-- job no longer resolves its file's references itself: it hands them, with
-- the names its publish changed, to link_queue in its own transaction, and
-- one linker at a time (the `link` River job) resolves every queued file's
-- references and every stored reference that looks up a changed name, in
-- bulk, against the symbol table as its round reads it, and deletes the
-- rows it read. The stamps that ordered resolving jobs against publishes
-- (poi_references.resolved_xmin and its index) have no use left.
--
-- link_rounds keeps, per linker round, the time from each publish it made
-- final to the round's commit: the freshness `relay status` and the console
-- show. The linker deletes rounds older than a day.

-- +goose Up
CREATE TABLE link_queue (
    -- job_id is the resolve_file job that queued the row: the linker takes
    -- rows in job order, which is publish order for one file.
    job_id        bigint PRIMARY KEY,
    file_id       text COLLATE "C" NOT NULL,
    -- file_version is the version of the file the references belong to;
    -- NULL when the job's publish was superseded (the row then only carries
    -- changed names). The linker stores the references only while the file
    -- is still at this version.
    file_version  bigint,
    -- replace: the references are all of the file's (a publish). A
    -- reprocess job's row adds the references of the POIs it resolved.
    replace       boolean NOT NULL,
    published_at  timestamptz NOT NULL,
    -- changed are the reference keys whose definitions the publish changed.
    changed       text[] COLLATE "C" NOT NULL,
    ref_sources   text[] COLLATE "C" NOT NULL,
    ref_names     text[] COLLATE "C" NOT NULL,
    ref_types     text[] NOT NULL
);

CREATE TABLE link_rounds (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    linked_at         timestamptz NOT NULL DEFAULT now(),
    files             integer NOT NULL,
    reresolved        integer NOT NULL,
    freshness_seconds double precision[] NOT NULL
);
CREATE INDEX link_rounds_linked_at_idx ON link_rounds (linked_at);

CREATE INDEX poi_references_key_idx ON poi_references (key);
DROP INDEX poi_references_key_resolved_xmin_idx;
ALTER TABLE poi_references DROP COLUMN resolved_xmin;

-- +goose Down
ALTER TABLE poi_references ADD COLUMN resolved_xmin xid8 NOT NULL DEFAULT '0';
CREATE INDEX poi_references_key_resolved_xmin_idx ON poi_references (key, resolved_xmin);
DROP INDEX poi_references_key_idx;
DROP TABLE link_rounds;
DROP TABLE link_queue;
