-- Publishes the analyses on standard input (one JSON object per line)
-- through relay's SQL API from psql, in a transaction that also writes a
-- row of the caller's own; then a rolled-back publish and a rejected one.
-- Run: psql -v schema=SCHEMA -f publish.sql URL < CORPUS
\set ON_ERROR_STOP on
\set VERBOSITY verbose
SET search_path TO :"schema";

BEGIN;
INSERT INTO callers_own VALUES ('psql committed');
-- The lines go in as text (CSV with a quote and delimiter no JSON line
-- holds, so backslashes stay as they are), then one call publishes them.
CREATE TEMP TABLE incoming (analysis text) ON COMMIT DROP;
\copy incoming FROM pstdin WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')
SELECT relay_publish_many(jsonb_agg(analysis::jsonb)) AS published FROM incoming;
COMMIT;

BEGIN;
INSERT INTO callers_own VALUES ('psql rolled back');
SELECT relay_publish('{"fileId": "rolled/back.py", "pois": []}');
ROLLBACK;

\set ON_ERROR_STOP off
BEGIN;
SELECT relay_publish('{"fileId": "rejected.py", "pois": {}}');
ROLLBACK;
