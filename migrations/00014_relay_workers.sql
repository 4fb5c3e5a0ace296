-- relay_workers: the worker processes (one River client each) that are
-- alive. Each announces itself every worker_heartbeat_interval; a row whose
-- heartbeat is older than worker_heartbeat_timeout belongs to a worker that
-- is gone (killed, out of memory, its node lost), and the first live worker
-- to see it deletes it and returns that worker's running jobs to the queue
-- (worker.Liveness). `relay status` lists the rows.

-- +goose Up
CREATE TABLE relay_workers (
    client_id    text        PRIMARY KEY, -- River's client id: river_job.attempted_by
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE relay_workers;
