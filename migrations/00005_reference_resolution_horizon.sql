-- +goose Up
-- resolved_xmin: the xmin of the snapshot a reference was first resolved
-- under (pg_snapshot_xmin(pg_current_snapshot()) when its batch stored it).
-- Every transaction with an id below it had ended by then, so a publish whose
-- transaction id is below it was visible to that resolution: the publish's
-- own job need not resolve the reference again. Rows that existed before
-- this migration get 0, "resolved under an unknown snapshot", so they are
-- always re-resolved.
ALTER TABLE poi_references ADD COLUMN resolved_xmin xid8 NOT NULL DEFAULT '0';

-- +goose Down
ALTER TABLE poi_references DROP COLUMN resolved_xmin;
