-- link_rounds records how long each round waited for the linker lock and
-- held it: began_at is the round's transaction start, locked_at when it
-- had the lock and read its rows, and linked_at (now the clock at its last
-- statement, just before it commits) when it was done. relay-bench reports
-- their sums over a run's wall time as the linker's serial share
-- (docs/scaling.md). Rounds from before this migration have neither.
-- Rollback: drops the two columns; no data lost (the rounds are kept a day
-- and only their timing goes).

-- +goose Up
ALTER TABLE link_rounds ADD COLUMN began_at timestamptz, ADD COLUMN locked_at timestamptz;

-- +goose Down
ALTER TABLE link_rounds DROP COLUMN began_at, DROP COLUMN locked_at;
