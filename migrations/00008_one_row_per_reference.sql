-- +goose Up
-- One row per reference. Until now each resolved reference was written
-- twice: a poi_references row (kept so that a name published later can
-- resolve it) and a relationships row (the edge). The second write cost
-- almost as much as the first (relay-bench: 1.3 ms against 1.7 ms per batch
-- of 50 POIs), and a reference resolves to at most one target, whose name is
-- the reference's name, so (source, type, name) identifies the edge too.
--
-- poi_references now carries its resolution: target_poi_id (NULL while the
-- name resolves to nothing, or to several candidates), target_file_id, the
-- job that resolved it and when. Deleting a target POI sets target_poi_id
-- back to NULL, keeping the reference for the next publish of its name, as
-- the separate table did. target_file_id, job_id and resolved_at describe
-- the current target; while target_poi_id is NULL they may still describe
-- the last one.
--
-- relationships becomes a view of the resolved references with the
-- table's columns (created_at is resolved_at), so analysts' queries read
-- the same rows. Grants on the table are carried over to the view.
ALTER TABLE poi_references
    ADD COLUMN target_poi_id  text REFERENCES pois (poi_id) ON DELETE SET NULL,
    ADD COLUMN target_file_id text,
    ADD COLUMN job_id         bigint,
    ADD COLUMN resolved_at    timestamptz;

UPDATE poi_references r
SET target_poi_id = e.target_poi_id, target_file_id = e.target_file_id, job_id = e.job_id, resolved_at = e.created_at
FROM relationships e
WHERE e.source_poi_id = r.source_poi_id AND e.type = r.type AND e.name = r.name;

-- Edges without a stored reference (none are written that way, but an
-- operator may have inserted some) keep existing, resolved under an unknown
-- snapshot (resolved_xmin 0), so the next publish of their name revisits
-- them.
INSERT INTO poi_references (source_poi_id, source_file_id, name, type, target_poi_id, target_file_id, job_id, resolved_at)
SELECT source_poi_id, source_file_id, name, type, target_poi_id, target_file_id, job_id, created_at
FROM relationships
ON CONFLICT (source_poi_id, type, name) DO NOTHING;

-- Who points at a POI: the foreign key's ON DELETE action, and analysts'
-- "who calls X". Unresolved references have no entry.
CREATE INDEX poi_references_target_poi_id_idx ON poi_references (target_poi_id) WHERE target_poi_id IS NOT NULL;

CREATE TEMPORARY TABLE relay_relationships_grants ON COMMIT DROP AS
SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END AS grantee
FROM pg_class c, aclexplode(c.relacl) a
WHERE c.oid = 'relationships'::regclass AND a.privilege_type = 'SELECT' AND a.grantee <> c.relowner;

DROP TABLE relationships;

CREATE VIEW relationships AS
SELECT source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id, resolved_at AS created_at
FROM poi_references
WHERE target_poi_id IS NOT NULL;

-- +goose StatementBegin
DO $$
DECLARE g text;
BEGIN
    FOR g IN SELECT grantee FROM relay_relationships_grants LOOP
        EXECUTE format('GRANT SELECT ON relationships TO %s', g);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_delete_source_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM poi_references r USING deleted_pois d WHERE r.source_poi_id = d.poi_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_delete_source_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM poi_references r USING deleted_pois d WHERE r.source_poi_id = d.poi_id;
    DELETE FROM relationships r USING deleted_pois d WHERE r.source_poi_id = d.poi_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP VIEW relationships;

CREATE TABLE relationships (
    source_poi_id  text        NOT NULL,
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

INSERT INTO relationships (source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id, created_at)
SELECT source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id, coalesce(resolved_at, now())
FROM poi_references
WHERE target_poi_id IS NOT NULL
ON CONFLICT DO NOTHING;

ALTER TABLE poi_references
    DROP COLUMN target_poi_id,
    DROP COLUMN target_file_id,
    DROP COLUMN job_id,
    DROP COLUMN resolved_at;
