-- mapreduce_jobs.agent_env names the variables (agent_env, --agent-env) a
-- job's agents are given, sorted: never their values, which relay does not
-- store. A process that runs the job's agents must give each of them again
-- (`relay mapreduce resume --wait` and `relay dlq retry --wait` refuse to
-- start without them; a worker lacking one fails the attempt saying which);
-- resume and retry may add names. `relay mapreduce status` shows them.
-- docs/dead_lettered_items.md documents it.

-- +goose Up
ALTER TABLE mapreduce_jobs ADD COLUMN agent_env text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE mapreduce_jobs DROP COLUMN agent_env;
