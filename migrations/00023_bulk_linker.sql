-- The bulk linker (docs/design.md, "Resolution protocol"). A resolve_file
-- job no longer resolves its file's references itself: it hands them, with
-- the names its publish changed, to link_queue in its own transaction, and
-- one linker at a time (the `link` River job) resolves every queued file's
-- references and every stored reference that looks up a changed name, in
-- bulk, against the symbol table as its round reads it, and deletes the
-- rows it read.
--
-- link_rounds keeps each linker round: the snapshot it took before it read
-- the symbol table, and the time from each publish it made final to its
-- commit (the freshness `relay status` and the console show). A reference
-- records the round that resolved it (poi_references.resolved_round): for a
-- publish that changed a name it looks up, it is resolved again only when
-- that round's snapshot did not see the publish. The stamps of the protocol
-- before (resolved_xmin, a snapshot xmin that any long transaction on the
-- server held back) go. The linker deletes rounds older than a day; a
-- reference of a deleted round counts as not having seen any publish.

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
    snapshot          pg_snapshot NOT NULL,
    linked_at         timestamptz NOT NULL DEFAULT now(),
    files             integer NOT NULL,
    reresolved        integer NOT NULL,
    freshness_seconds double precision[] NOT NULL
);
CREATE INDEX link_rounds_linked_at_idx ON link_rounds (linked_at);

ALTER TABLE poi_references ADD COLUMN resolved_round bigint NOT NULL DEFAULT 0;
CREATE INDEX poi_references_key_resolved_round_idx ON poi_references (key, resolved_round);
DROP INDEX poi_references_key_resolved_xmin_idx;
ALTER TABLE poi_references DROP COLUMN resolved_xmin;

-- +goose Down
ALTER TABLE poi_references ADD COLUMN resolved_xmin xid8 NOT NULL DEFAULT '0';
CREATE INDEX poi_references_key_resolved_xmin_idx ON poi_references (key, resolved_xmin);
DROP INDEX poi_references_key_resolved_round_idx;
ALTER TABLE poi_references DROP COLUMN resolved_round;
DROP TABLE link_rounds;
DROP TABLE link_queue;
