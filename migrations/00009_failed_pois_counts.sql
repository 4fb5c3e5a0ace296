-- +goose Up
-- failed_pois_counts: the rows of failed_pois per status and error class,
-- kept as deltas so that `relay failed stats` (and the metrics behind the
-- dashboards) need not count a million rows: counting them took 84-115 ms
-- with relay-bench's 1,000,000 rows, at the edge of its 100 ms target, and
-- grows with the table.
--
-- Every statement that writes failed_pois appends one delta row per
-- (status, error_class) it changed (statement-level triggers over the
-- transition tables); nothing is updated in place, so concurrent writers
-- never wait for each other here. The count of a group is the sum of its
-- deltas. Compact (deadletter.CompactCounts, run by the worker's periodic
-- sweep) folds the deltas into one row per group in one transaction:
-- readers see the rows before or after, never a mix, and deltas committed
-- meanwhile are outside its snapshot, so they stay, uncounted by it.
CREATE TABLE failed_pois_counts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    status      text   NOT NULL,
    error_class text   NOT NULL,
    n           bigint NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION relay_failed_pois_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_counts (status, error_class, n)
    SELECT status, error_class, count(*) FROM new_rows GROUP BY status, error_class;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_failed_pois_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_counts (status, error_class, n)
    SELECT status, error_class, -count(*) FROM old_rows GROUP BY status, error_class;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_failed_pois_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE FUNCTION relay_failed_pois_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM failed_pois_counts;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER failed_pois_count_insert AFTER INSERT ON failed_pois
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_count_insert();
CREATE TRIGGER failed_pois_count_delete AFTER DELETE ON failed_pois
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_count_delete();
CREATE TRIGGER failed_pois_count_update AFTER UPDATE ON failed_pois
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_count_update();
CREATE TRIGGER failed_pois_count_truncate AFTER TRUNCATE ON failed_pois
    FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_count_truncate();

-- The rows already there: CREATE TRIGGER locked failed_pois against
-- writes until this migration commits, so the count is exact.
INSERT INTO failed_pois_counts (status, error_class, n)
SELECT status, error_class, count(*) FROM failed_pois GROUP BY status, error_class;

-- +goose Down
DROP TRIGGER failed_pois_count_truncate ON failed_pois;
DROP TRIGGER failed_pois_count_update ON failed_pois;
DROP TRIGGER failed_pois_count_delete ON failed_pois;
DROP TRIGGER failed_pois_count_insert ON failed_pois;
DROP FUNCTION relay_failed_pois_count_truncate();
DROP FUNCTION relay_failed_pois_count_update();
DROP FUNCTION relay_failed_pois_count_delete();
DROP FUNCTION relay_failed_pois_count_insert();
DROP TABLE failed_pois_counts;
