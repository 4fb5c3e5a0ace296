-- The linker runs in lanes (worker/link: Lanes, LaneOf). A stored
-- reference belongs to the lane of its key, and only that lane's rounds
-- write it: the lanes link side by side, each one round at a time, where
-- before one linker lock made every round of every repository wait for
-- the one before.
--
-- link_queue: a job's hand-over is now one row per lane (lane is part of
-- the key), each with the job's references of that lane's keys and every
-- name its publish changed. Rows queued before this migration are copied
-- to every lane: a lane links only the references of its own keys
-- (link.LaneOf), so each copy links its share. link_queue_lane_job_id_idx
-- serves a lane's rounds, which read their rows in job order.
--
-- link_rounds: lanes are the lanes the round held (a round holds its job's
-- lane and every other lane no round holds). Rounds from before this
-- migration keep lanes NULL: they ran one at a time before any lane's
-- round, so every lane counts them as its own when it finds the rounds
-- that missed a publish. began_at (the round's transaction start) and locked_at (when it
-- had its lane's lock and read its rows), with linked_at (now the clock at
-- its last statement, just before it commits), say how long each round
-- waited for its lane and held it: relay-bench's serial shares.
--
-- Stop the workers of an older relay before migrating: an older linker's
-- round does not take a lane's lock.
-- Rollback: the rows of each job are merged back into one (the lane-0 row
-- keeps every lane's references); no data lost.

-- +goose Up
ALTER TABLE link_queue ADD COLUMN lane smallint NOT NULL DEFAULT 0,
    DROP CONSTRAINT link_queue_pkey, ADD PRIMARY KEY (repository, job_id, lane),
    ADD CONSTRAINT link_queue_lane_check CHECK (lane >= 0 AND lane < 8);
INSERT INTO link_queue (job_id, file_id, file_version, publish_xid, replace, published_at, changed, ref_sources, ref_names,
                        ref_types, repository, lane)
SELECT q.job_id, q.file_id, q.file_version, q.publish_xid, q.replace, q.published_at, q.changed, q.ref_sources, q.ref_names,
       q.ref_types, q.repository, l
FROM link_queue q CROSS JOIN generate_series(1, 7) AS l;
ALTER TABLE link_queue ALTER COLUMN lane DROP DEFAULT;
DROP INDEX link_queue_job_id_idx;
CREATE INDEX link_queue_lane_job_id_idx ON link_queue (lane, job_id);

ALTER TABLE link_rounds ADD COLUMN lanes smallint[], ADD COLUMN began_at timestamptz, ADD COLUMN locked_at timestamptz;

-- +goose Down
ALTER TABLE link_rounds DROP COLUMN lanes, DROP COLUMN began_at, DROP COLUMN locked_at;

WITH refs AS (
    -- A reference held by several of a job's rows (rows copied to every lane
    -- by the up) is kept once.
    SELECT repository, job_id, array_agg(src ORDER BY lane, o) AS srcs, array_agg(name ORDER BY lane, o) AS names,
           array_agg(typ ORDER BY lane, o) AS types
    FROM (SELECT DISTINCT ON (q.repository, q.job_id, u.src, u.name, u.typ) q.repository, q.job_id, q.lane, u.o, u.src, u.name, u.typ
          FROM link_queue q CROSS JOIN LATERAL unnest(q.ref_sources, q.ref_names, q.ref_types) WITH ORDINALITY AS u(src, name, typ, o)
          ORDER BY q.repository, q.job_id, u.src, u.name, u.typ, q.lane, u.o) d
    GROUP BY repository, job_id)
UPDATE link_queue q SET ref_sources = r.srcs, ref_names = r.names, ref_types = r.types
FROM refs r WHERE q.repository = r.repository AND q.job_id = r.job_id AND q.lane = (
    SELECT min(lane) FROM link_queue m WHERE m.repository = q.repository AND m.job_id = q.job_id);
DELETE FROM link_queue q WHERE q.lane > (SELECT min(lane) FROM link_queue m WHERE m.repository = q.repository AND m.job_id = q.job_id);
DROP INDEX link_queue_lane_job_id_idx;
ALTER TABLE link_queue DROP CONSTRAINT link_queue_pkey, ADD PRIMARY KEY (repository, job_id),
    DROP CONSTRAINT link_queue_lane_check;
ALTER TABLE link_queue DROP COLUMN lane;
CREATE INDEX link_queue_job_id_idx ON link_queue (job_id);
