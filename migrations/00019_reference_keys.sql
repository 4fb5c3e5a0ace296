-- poi_references.key is the name a reference is indexed by for the
-- worker's read of the references a publish may change: its name without
-- the forms a Go reference's name carries (resolver.ReferenceNames lists
-- them for one changed name). "n", ".n", "().n", "(.).n", "pkg.n",
-- "(pkg).n" and "^.n" have the key "n"; "(.T).m" and "(q.T).m" have
-- "T.m"; a derived reference ({X}.m) and a supplied one ("sym:…", "id:…")
-- are their own key. Every form of one changed name has one key, so the
-- read descends the index on (key, resolved_xmin) once per changed name
-- instead of once per form, and filters by the exact names. The key only
-- narrows an index range: which references are read again is decided by
-- their names, and how they resolve by the resolver.
--
-- relay_reference_key is the column's one definition; it is simple enough
-- for the planner to inline into the column and into the worker's read.
-- Adding the column rewrites poi_references and building the index blocks
-- writes to it while they run.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION relay_reference_key(name text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
SELECT CASE
    WHEN left(name, 1) = '(' AND strpos(split_part(name, ')', 1), '.') > 0
         AND split_part(split_part(name, ')', 1), '.', -1) <> ''
        THEN split_part(split_part(name, ')', 1), '.', -1) || '.' || split_part(name, '.', -1)
    WHEN left(name, 1) = '{' OR strpos(name, ':') > 0 THEN name
    ELSE split_part(name, '.', -1)
END
$$;
-- +goose StatementEnd
ALTER TABLE poi_references ADD COLUMN key text COLLATE "C" GENERATED ALWAYS AS (relay_reference_key(name)) STORED;
CREATE INDEX poi_references_key_resolved_xmin_idx ON poi_references (key, resolved_xmin);
DROP INDEX poi_references_name_resolved_xmin_idx;

-- +goose Down
CREATE INDEX poi_references_name_resolved_xmin_idx ON poi_references (name, resolved_xmin);
DROP INDEX poi_references_key_resolved_xmin_idx;
ALTER TABLE poi_references DROP COLUMN key;
DROP FUNCTION relay_reference_key(text);
