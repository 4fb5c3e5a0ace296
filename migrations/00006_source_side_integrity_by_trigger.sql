-- +goose Up
-- References and relationships belong to their source POI's file. Every
-- batch writes them only for its own file's POIs, under a share lock on the
-- file's row that every publish of the file holds exclusively, and a publish
-- deletes all of them for its files before it replaces their POIs: a source
-- POI cannot vanish under a batch that writes from it. So the source-side
-- foreign keys checked a fact the protocol already guarantees, and checked
-- it on every row written (an SPI query per row: about 40% of the cost of
-- an edge in relay-bench). They are replaced by a statement-level trigger
-- that keeps the ON DELETE CASCADE behaviour for any other delete of POIs
-- (by hand, or through DELETE FROM files) at no cost to inserts. The
-- target-side foreign key stays: a target POI belongs to another file,
-- which another transaction may be re-publishing.
ALTER TABLE poi_references DROP CONSTRAINT poi_references_source_poi_id_fkey;
ALTER TABLE relationships DROP CONSTRAINT relationships_source_poi_id_fkey;

-- +goose StatementBegin
CREATE FUNCTION relay_delete_source_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM poi_references r USING deleted_pois d WHERE r.source_poi_id = d.poi_id;
    DELETE FROM relationships r USING deleted_pois d WHERE r.source_poi_id = d.poi_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER pois_delete_source_rows
    AFTER DELETE ON pois
    REFERENCING OLD TABLE AS deleted_pois
    FOR EACH STATEMENT EXECUTE FUNCTION relay_delete_source_rows();

-- +goose Down
DROP TRIGGER pois_delete_source_rows ON pois;
DROP FUNCTION relay_delete_source_rows();
DELETE FROM poi_references r WHERE NOT EXISTS (SELECT 1 FROM pois p WHERE p.poi_id = r.source_poi_id);
DELETE FROM relationships r WHERE NOT EXISTS (SELECT 1 FROM pois p WHERE p.poi_id = r.source_poi_id);
ALTER TABLE poi_references ADD CONSTRAINT poi_references_source_poi_id_fkey
    FOREIGN KEY (source_poi_id) REFERENCES pois (poi_id) ON DELETE CASCADE;
ALTER TABLE relationships ADD CONSTRAINT relationships_source_poi_id_fkey
    FOREIGN KEY (source_poi_id) REFERENCES pois (poi_id) ON DELETE CASCADE;
