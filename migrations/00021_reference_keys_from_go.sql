-- poi_references.key becomes a plain column that the worker writes with
-- resolver.ReferenceKey, the one definition of a reference's key (the name
-- whose change can change its resolution); migration 19's SQL function
-- goes. The keys already stored keep their values, which equal
-- ReferenceKey's (migrations_test.go checks it). Up changes no row.

-- +goose Up
ALTER TABLE poi_references ALTER COLUMN key DROP EXPRESSION;
ALTER TABLE poi_references ALTER COLUMN key SET NOT NULL;
DROP FUNCTION relay_reference_key(text);

-- +goose Down
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
ALTER TABLE poi_references DROP COLUMN key;
ALTER TABLE poi_references ADD COLUMN key text COLLATE "C" GENERATED ALWAYS AS (relay_reference_key(name)) STORED;
CREATE INDEX poi_references_key_resolved_xmin_idx ON poi_references (key, resolved_xmin);
