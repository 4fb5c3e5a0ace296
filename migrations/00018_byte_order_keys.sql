-- The text keys of files, pois and poi_references (identifiers and names,
-- never sorted for people) compare byte by byte, COLLATE "C": an index
-- descent compares with memcmp instead of the database's locale (strcoll),
-- and a batch descends these indexes for every POI, reference and name it
-- looks up. Equality is the same under every deterministic collation, so
-- no lookup, join or constraint changes; only ORDER BY on these columns
-- sorts by bytes (the same order as C.UTF-8's). The relationships view is
-- recreated around the change, unchanged, with the grants it had.
--
-- The ALTERs rebuild the tables' indexes and block writes to the three
-- tables while they run.

-- +goose Up
CREATE TEMP TABLE relay_view_grants ON COMMIT DROP AS
SELECT a.grantee, a.privilege_type, a.is_grantable
FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) AS a
WHERE c.oid = 'relationships'::regclass AND a.grantee <> c.relowner;
DROP VIEW relationships;
ALTER TABLE files ALTER COLUMN file_id TYPE text COLLATE "C";
ALTER TABLE pois ALTER COLUMN poi_id TYPE text COLLATE "C",
                 ALTER COLUMN file_id TYPE text COLLATE "C",
                 ALTER COLUMN name TYPE text COLLATE "C",
                 ALTER COLUMN symbol TYPE text COLLATE "C";
ALTER TABLE poi_references ALTER COLUMN source_poi_id TYPE text COLLATE "C",
                           ALTER COLUMN source_file_id TYPE text COLLATE "C",
                           ALTER COLUMN name TYPE text COLLATE "C",
                           ALTER COLUMN type TYPE text COLLATE "C",
                           ALTER COLUMN target_poi_id TYPE text COLLATE "C",
                           ALTER COLUMN target_file_id TYPE text COLLATE "C",
                           ALTER COLUMN depends TYPE text[] COLLATE "C";
CREATE VIEW relationships AS
SELECT DISTINCT ON (source_poi_id, target_poi_id, type)
       source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id, resolved_at AS created_at
FROM poi_references
WHERE target_poi_id IS NOT NULL
ORDER BY source_poi_id, target_poi_id, type, name;
-- +goose StatementBegin
DO $$
DECLARE g record;
BEGIN
    FOR g IN SELECT * FROM relay_view_grants LOOP
        EXECUTE format('GRANT %s ON relationships TO %s%s', g.privilege_type,
            CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
            CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
CREATE TEMP TABLE relay_view_grants ON COMMIT DROP AS
SELECT a.grantee, a.privilege_type, a.is_grantable
FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) AS a
WHERE c.oid = 'relationships'::regclass AND a.grantee <> c.relowner;
DROP VIEW relationships;
ALTER TABLE poi_references ALTER COLUMN source_poi_id TYPE text COLLATE "default",
                           ALTER COLUMN source_file_id TYPE text COLLATE "default",
                           ALTER COLUMN name TYPE text COLLATE "default",
                           ALTER COLUMN type TYPE text COLLATE "default",
                           ALTER COLUMN target_poi_id TYPE text COLLATE "default",
                           ALTER COLUMN target_file_id TYPE text COLLATE "default",
                           ALTER COLUMN depends TYPE text[] COLLATE "default";
ALTER TABLE pois ALTER COLUMN poi_id TYPE text COLLATE "default",
                 ALTER COLUMN file_id TYPE text COLLATE "default",
                 ALTER COLUMN name TYPE text COLLATE "default",
                 ALTER COLUMN symbol TYPE text COLLATE "default";
ALTER TABLE files ALTER COLUMN file_id TYPE text COLLATE "default";
CREATE VIEW relationships AS
SELECT DISTINCT ON (source_poi_id, target_poi_id, type)
       source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id, resolved_at AS created_at
FROM poi_references
WHERE target_poi_id IS NOT NULL
ORDER BY source_poi_id, target_poi_id, type, name;
-- +goose StatementBegin
DO $$
DECLARE g record;
BEGIN
    FOR g IN SELECT * FROM relay_view_grants LOOP
        EXECUTE format('GRANT %s ON relationships TO %s%s', g.privilege_type,
            CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
            CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;
-- +goose StatementEnd
