-- failed_pois_signature_counts and failed_pois_hourly_counts: the rows of
-- failed_pois per (error signature, error class, status) and per (hour of
-- failed_at in UTC, status), kept as deltas the way failed_pois_counts is
-- (00009), so that the signature groups of `relay failed analyze` and the
-- web console, the top signatures of `relay status` and the failures per
-- hour need not read a million rows: grouping them took 262-482 ms.
--
-- Every statement that writes failed_pois appends one delta row per group
-- it changed (statement-level triggers over the transition tables); a
-- group's count is the sum of its deltas; deadletter.CompactCounts folds
-- them into one row per group.

-- +goose Up
CREATE TABLE failed_pois_signature_counts (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    error_signature text   NOT NULL,
    error_class     text   NOT NULL,
    status          text   NOT NULL,
    n               bigint NOT NULL
);
CREATE TABLE failed_pois_hourly_counts (
    id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    hour   timestamptz NOT NULL,
    status text        NOT NULL,
    n      bigint      NOT NULL
);
CREATE INDEX failed_pois_hourly_counts_hour_idx ON failed_pois_hourly_counts (hour);

-- +goose StatementBegin
CREATE FUNCTION relay_failed_pois_summary_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_signature_counts (error_signature, error_class, status, n)
    SELECT error_signature, error_class, status, count(*) FROM new_rows GROUP BY 1, 2, 3;
    INSERT INTO failed_pois_hourly_counts (hour, status, n)
    SELECT date_trunc('hour', failed_at, 'UTC'), status, count(*) FROM new_rows GROUP BY 1, 2;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_failed_pois_summary_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_signature_counts (error_signature, error_class, status, n)
    SELECT error_signature, error_class, status, -count(*) FROM old_rows GROUP BY 1, 2, 3;
    INSERT INTO failed_pois_hourly_counts (hour, status, n)
    SELECT date_trunc('hour', failed_at, 'UTC'), status, -count(*) FROM old_rows GROUP BY 1, 2;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_failed_pois_summary_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO failed_pois_signature_counts (error_signature, error_class, status, n)
    SELECT error_signature, error_class, status, sum(d) FROM (
        SELECT error_signature, error_class, status, -1 AS d FROM old_rows
        UNION ALL
        SELECT error_signature, error_class, status, 1 FROM new_rows) c
    GROUP BY 1, 2, 3
    HAVING sum(d) <> 0;
    INSERT INTO failed_pois_hourly_counts (hour, status, n)
    SELECT hour, status, sum(d) FROM (
        SELECT date_trunc('hour', failed_at, 'UTC') AS hour, status, -1 AS d FROM old_rows
        UNION ALL
        SELECT date_trunc('hour', failed_at, 'UTC'), status, 1 FROM new_rows) c
    GROUP BY 1, 2
    HAVING sum(d) <> 0;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_failed_pois_summary_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM failed_pois_signature_counts;
    DELETE FROM failed_pois_hourly_counts;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER failed_pois_summary_insert AFTER INSERT ON failed_pois
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_summary_insert();
CREATE TRIGGER failed_pois_summary_delete AFTER DELETE ON failed_pois
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_summary_delete();
CREATE TRIGGER failed_pois_summary_update AFTER UPDATE ON failed_pois
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_summary_update();
CREATE TRIGGER failed_pois_summary_truncate AFTER TRUNCATE ON failed_pois
    FOR EACH STATEMENT EXECUTE FUNCTION relay_failed_pois_summary_truncate();

-- The rows already there: CREATE TRIGGER locked failed_pois against
-- writes until this migration commits, so the counts are exact.
INSERT INTO failed_pois_signature_counts (error_signature, error_class, status, n)
SELECT error_signature, error_class, status, count(*) FROM failed_pois GROUP BY 1, 2, 3;
INSERT INTO failed_pois_hourly_counts (hour, status, n)
SELECT date_trunc('hour', failed_at, 'UTC'), status, count(*) FROM failed_pois GROUP BY 1, 2;

-- +goose Down
DROP TRIGGER failed_pois_summary_truncate ON failed_pois;
DROP TRIGGER failed_pois_summary_update ON failed_pois;
DROP TRIGGER failed_pois_summary_delete ON failed_pois;
DROP TRIGGER failed_pois_summary_insert ON failed_pois;
DROP FUNCTION relay_failed_pois_summary_truncate();
DROP FUNCTION relay_failed_pois_summary_update();
DROP FUNCTION relay_failed_pois_summary_delete();
DROP FUNCTION relay_failed_pois_summary_insert();
DROP TABLE failed_pois_hourly_counts;
DROP TABLE failed_pois_signature_counts;
