-- The bulk linker (docs/design.md, "Resolution protocol"). A resolve_file
-- job no longer resolves its file's references itself: it hands them, with
-- the names its publish changed, to link_queue in its own transaction, and
-- one linker at a time (the `link` River job) resolves every queued file's
-- references and every stored reference that looks up a changed name, in
-- bulk, against the symbol table as its round reads it, and deletes the
-- rows it read. poi_references.resolved_xmin is now the xmin of a snapshot
-- the linker took before it read the symbol table: a reference whose stamp
-- is above a publish's transaction id was resolved seeing that publish, and
-- is not resolved again for it.
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
    -- publish_xid is the publish's transaction id (0: unknown).
    publish_xid   bigint NOT NULL,
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

-- +goose Down
DROP TABLE link_rounds;
DROP TABLE link_queue;
