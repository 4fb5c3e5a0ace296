-- +goose Up
-- The index on poi_references' names also orders each name's references by
-- resolved_xmin. A batch whose publish changed names looks for the other
-- files' references to them resolved under a snapshot that may not have
-- seen the publish (resolved_xmin at or below its transaction id, see
-- worker.link): with (name, type) it read every reference to every name
-- from the heap to test its resolved_xmin, though on a first publish of a
-- corpus nearly all were resolved after the publish; with (name,
-- resolved_xmin) the index range stops at the publish, and only the
-- references that may need resolving again are read. Lookups by name alone
-- (re-resolution's ambiguity check, analysts' queries by name) use it as
-- before. CREATE INDEX blocks writes to poi_references while it builds.
CREATE INDEX poi_references_name_resolved_xmin_idx ON poi_references (name, resolved_xmin);
DROP INDEX poi_references_name_idx;

-- +goose Down
CREATE INDEX poi_references_name_idx ON poi_references (name, type);
DROP INDEX poi_references_name_resolved_xmin_idx;
