-- +goose Up
-- River indexes every job's args with a GIN index, for filtering jobs by
-- their arguments in River UI. A resolve_file job carries its file's whole
-- batch of POIs (about 26 KB of JSON for 50 POIs, some 300 index entries),
-- and every change of a job's state is an update that is not HOT, so each
-- job wrote its args into the index three times (insert, fetch, completion):
-- relay-bench measured 13% more POIs per second without it. Nothing in
-- relay queries args by content (relay looks jobs up by id, kind and state,
-- which River's btree indexes serve), so relay drops the index and tells
-- River's reindexer not to rebuild it (worker.ReindexerIndexNames). To
-- filter jobs by args in River UI on a large table, create it again:
--   CREATE INDEX CONCURRENTLY river_job_args_index ON river_job USING GIN (args);
DROP INDEX IF EXISTS river_job_args_index;

-- +goose Down
CREATE INDEX IF NOT EXISTS river_job_args_index ON river_job USING GIN (args);
