-- +goose Up
-- failed_pois_counts (00009) counts by repository too, so that `relay failed
-- stats --repository` and `relay status --repository` sum a handful of rows
-- instead of counting a repository's rows: with 900,000 of relay-bench's
-- 1,000,000 rows in one repository, counting them took 279 ms against the
-- 100 ms target. The counts are derived: they are recomputed here, with
-- failed_pois locked against writes until this migration commits.
ALTER TABLE failed_pois_counts ADD COLUMN repository text NOT NULL DEFAULT '';
LOCK TABLE failed_pois IN SHARE ROW EXCLUSIVE MODE;
DELETE FROM failed_pois_counts;
INSERT INTO failed_pois_counts (repository, status, error_class, n)
SELECT repository, status, error_class, count(*) FROM failed_pois GROUP BY repository, status, error_class;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_failed_pois_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_counts (repository, status, error_class, n)
    SELECT repository, status, error_class, count(*) FROM new_rows GROUP BY repository, status, error_class;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_failed_pois_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_counts (repository, status, error_class, n)
    SELECT repository, status, error_class, -count(*) FROM old_rows GROUP BY repository, status, error_class;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_failed_pois_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_counts (repository, status, error_class, n)
    SELECT repository, status, error_class, sum(d) FROM (
        SELECT repository, status, error_class, -1 AS d FROM old_rows
        UNION ALL
        SELECT repository, status, error_class, 1 FROM new_rows) c
    GROUP BY repository, status, error_class
    HAVING sum(d) <> 0;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_failed_pois_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_counts (status, error_class, n)
    SELECT status, error_class, count(*) FROM new_rows GROUP BY status, error_class;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_failed_pois_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_counts (status, error_class, n)
    SELECT status, error_class, -count(*) FROM old_rows GROUP BY status, error_class;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_failed_pois_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_counts (status, error_class, n)
    SELECT status, error_class, sum(d) FROM (
        SELECT status, error_class, -1 AS d FROM old_rows
        UNION ALL
        SELECT status, error_class, 1 FROM new_rows) c
    GROUP BY status, error_class
    HAVING sum(d) <> 0;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- A group's count is the sum of its rows, whatever their repository.
ALTER TABLE failed_pois_counts DROP COLUMN repository;
