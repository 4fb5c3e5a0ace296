-- relationships shows one row per edge (source POI, target POI, type), as the
-- table it replaced did (its primary key). poi_references keeps one row per
-- reference, and two references of one POI under different names can resolve
-- to the same target (a Go method called through its receiver and through
-- another variable of its type); they are one relationship. The row shown is
-- the one whose name sorts first.

-- +goose Up
CREATE OR REPLACE VIEW relationships AS
SELECT DISTINCT ON (source_poi_id, target_poi_id, type)
       source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id, resolved_at AS created_at
FROM poi_references
WHERE target_poi_id IS NOT NULL
ORDER BY source_poi_id, target_poi_id, type, name;

-- +goose Down
CREATE OR REPLACE VIEW relationships AS
SELECT source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id, resolved_at AS created_at
FROM poi_references
WHERE target_poi_id IS NOT NULL;
