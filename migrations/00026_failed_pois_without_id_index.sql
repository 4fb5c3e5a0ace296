-- +goose Up
-- failed_pois_id_idx (00024) goes: every lookup of failed_pois rows by id
-- now finds them through the primary key (repository, id), with the
-- repository known (reprocess, a reprocess job's outcomes) or probed for
-- each repository that has rows (`relay failed inspect`, `ignore`, the
-- console's reprocess of selected rows). Each status change of a row updates every index (status is
-- indexed), so one index fewer is less work and WAL for each.
DROP INDEX failed_pois_id_idx;

-- +goose Down
CREATE INDEX failed_pois_id_idx ON failed_pois (id);
