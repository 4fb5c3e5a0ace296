-- The pois delete trigger (relay_delete_source_rows, migrations 6, 8, 24
-- and 27) goes: what it did, relay's statements that delete POIs now do
-- themselves. On Citus, with the tables distributed by repository, the
-- trigger ran on the node holding the shard of pois, where relay's other
-- tables (and another repository's references) are not: every delete of a
-- POI failed (docs/citus.md).
--
-- - A publish (outbox.store.write) deletes the references of its files'
--   POIs before it deletes the POIs that leave their file
--   (deleteReferencesSQL, deleteRemovedSQL), and then clears the target
--   of every reference, of any repository, that resolved to one of them
--   (clearTargetsSQL), by the ids the delete returned.
-- - relay repository delete deletes the repository's references with its
--   POIs, and clears the target of the other repositories' references
--   that resolved into it in a statement of its own.
--
-- A delete of POIs by hand (or through DELETE FROM files) no longer
-- removes their references: delete them by repository and source_poi_id,
-- and clear the targets by target_repository and target_poi_id, as those
-- statements do. Stop the publishers and workers of an older relay before
-- migrating: an older publisher relies on the trigger.
--
-- Rollback: the trigger comes back (an older relay needs it); the
-- statements then find nothing left to do. No data is lost.

-- +goose Up
DROP TRIGGER pois_delete_source_rows ON pois;
DROP FUNCTION relay_delete_source_rows();

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION relay_delete_source_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE $q$
    DELETE FROM poi_references t USING (
        SELECT r.repository, r.source_poi_id FROM deleted_pois d
        CROSS JOIN LATERAL (SELECT DISTINCT repository, source_poi_id FROM poi_references
                            WHERE repository = d.repository AND source_poi_id = d.poi_id OFFSET 0) r) x
    WHERE t.repository = x.repository AND t.source_poi_id = x.source_poi_id$q$;
    EXECUTE $q$
    UPDATE poi_references t SET target_poi_id = NULL, target_file_id = NULL
    FROM (
        SELECT r.repository, r.source_poi_id, r.type, r.name, d.repository AS target_repository, d.poi_id AS target_poi_id
        FROM deleted_pois d
        CROSS JOIN LATERAL (SELECT repository, source_poi_id, type, name FROM poi_references
                            WHERE target_repository = d.repository AND target_poi_id = d.poi_id OFFSET 0) r) x
    WHERE t.repository = x.repository AND t.source_poi_id = x.source_poi_id AND t.type = x.type AND t.name = x.name
      AND t.target_repository = x.target_repository AND t.target_poi_id = x.target_poi_id$q$;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER pois_delete_source_rows
    AFTER DELETE ON pois
    REFERENCING OLD TABLE AS deleted_pois
    FOR EACH STATEMENT EXECUTE FUNCTION relay_delete_source_rows();
