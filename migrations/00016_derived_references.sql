-- pois.result is a Go function's or method's first result type and
-- pois.fields a Go struct type's fields with their types, as their headers
-- show them (resolver.ResultType, resolver.FieldTypes), '' for any other
-- POI. A derived reference ({X}.m: a method call on the value of a call or
-- of a field) resolves through them.
--
-- poi_references.depends lists the names a derived reference's resolution
-- reads (resolver.LookupNames), NULL for any other reference: a publish
-- that changes one of them re-resolves it through the partial index. The
-- index is built without a pending list (fastupdate = off): every batch
-- writes derived references and every changer reads them, and a pending
-- list would be scanned in full by each read and merged by some writer.

-- +goose Up
ALTER TABLE pois ADD COLUMN result text NOT NULL DEFAULT '';
ALTER TABLE pois ADD COLUMN fields text NOT NULL DEFAULT '';
ALTER TABLE poi_references ADD COLUMN depends text[];
CREATE INDEX poi_references_depends_idx ON poi_references USING gin (depends) WITH (fastupdate = off)
    WHERE depends IS NOT NULL;

-- +goose Down
DROP INDEX poi_references_depends_idx;
ALTER TABLE poi_references DROP COLUMN depends;
ALTER TABLE pois DROP COLUMN fields;
ALTER TABLE pois DROP COLUMN result;
