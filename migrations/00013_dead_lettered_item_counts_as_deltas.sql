-- dead_lettered_items_counts replaces dead_lettered_item_counts: the rows
-- each job has in dead_lettered_items (status other than reprocessed), kept
-- the way failed_pois_counts is (see 00009): every statement that writes dead_lettered_items appends one delta
-- row per job it changed, and a job's count is the sum of its deltas.
-- deadletter.CompactCounts folds the deltas of both tables. The row trigger
-- this replaces updated one counter row per job in place.

-- +goose Up
DROP TRIGGER dead_lettered_items_count ON dead_lettered_items;
DROP FUNCTION dead_lettered_items_count();
DROP TABLE dead_lettered_item_counts;
CREATE TABLE dead_lettered_items_counts (
    id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id text   NOT NULL,
    n      bigint NOT NULL
);
CREATE INDEX dead_lettered_items_counts_job_id_idx ON dead_lettered_items_counts (job_id);

-- +goose StatementBegin
CREATE FUNCTION relay_dead_lettered_items_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO dead_lettered_items_counts (job_id, n)
    SELECT job_id, count(*) FROM new_rows WHERE status <> 'reprocessed' GROUP BY job_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_dead_lettered_items_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO dead_lettered_items_counts (job_id, n)
    SELECT job_id, -count(*) FROM old_rows WHERE status <> 'reprocessed' GROUP BY job_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_dead_lettered_items_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO dead_lettered_items_counts (job_id, n)
    SELECT job_id, sum(d) FROM (
        SELECT job_id, -1 AS d FROM old_rows WHERE status <> 'reprocessed'
        UNION ALL
        SELECT job_id, 1 FROM new_rows WHERE status <> 'reprocessed') c
    GROUP BY job_id
    HAVING sum(d) <> 0;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION relay_dead_lettered_items_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM dead_lettered_items_counts;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER dead_lettered_items_count_insert AFTER INSERT ON dead_lettered_items
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_dead_lettered_items_count_insert();
CREATE TRIGGER dead_lettered_items_count_delete AFTER DELETE ON dead_lettered_items
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_dead_lettered_items_count_delete();
CREATE TRIGGER dead_lettered_items_count_update AFTER UPDATE ON dead_lettered_items
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_dead_lettered_items_count_update();
CREATE TRIGGER dead_lettered_items_count_truncate AFTER TRUNCATE ON dead_lettered_items
    FOR EACH STATEMENT EXECUTE FUNCTION relay_dead_lettered_items_count_truncate();

-- The rows already there: CREATE TRIGGER locked dead_lettered_items against
-- writes until this migration commits, so the count is exact.
INSERT INTO dead_lettered_items_counts (job_id, n)
SELECT job_id, count(*) FROM dead_lettered_items WHERE status <> 'reprocessed' GROUP BY job_id;

-- +goose Down
DROP TRIGGER dead_lettered_items_count_truncate ON dead_lettered_items;
DROP TRIGGER dead_lettered_items_count_update ON dead_lettered_items;
DROP TRIGGER dead_lettered_items_count_delete ON dead_lettered_items;
DROP TRIGGER dead_lettered_items_count_insert ON dead_lettered_items;
DROP FUNCTION relay_dead_lettered_items_count_truncate();
DROP FUNCTION relay_dead_lettered_items_count_update();
DROP FUNCTION relay_dead_lettered_items_count_delete();
DROP FUNCTION relay_dead_lettered_items_count_insert();
DROP TABLE dead_lettered_items_counts;
CREATE TABLE dead_lettered_item_counts (
    job_id text    PRIMARY KEY,
    items  integer NOT NULL DEFAULT 0
);
INSERT INTO dead_lettered_item_counts (job_id, items)
SELECT job_id, count(*) FROM dead_lettered_items WHERE status <> 'reprocessed' GROUP BY job_id;

-- +goose StatementBegin
CREATE FUNCTION dead_lettered_items_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status <> 'reprocessed' THEN
        UPDATE dead_lettered_item_counts SET items = items - 1 WHERE job_id = OLD.job_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status <> 'reprocessed' THEN
        INSERT INTO dead_lettered_item_counts AS c (job_id, items) VALUES (NEW.job_id, 1)
        ON CONFLICT (job_id) DO UPDATE SET items = c.items + 1;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER dead_lettered_items_count AFTER INSERT OR DELETE OR UPDATE OF status, job_id ON dead_lettered_items
    FOR EACH ROW EXECUTE FUNCTION dead_lettered_items_count();
