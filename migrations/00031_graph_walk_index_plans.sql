-- +goose Up
-- relay_callers and relay_callees walk on an index plan kept for the
-- session once the graph is large: when the statistics (pg_class.reltuples,
-- which ANALYZE sets) say poi_references has 1,000,000 rows or more and
-- pois 100,000 or more, they set, for the walk only, plan_cache_mode =
-- force_generic_plan and enable_seqscan = off, so relay_graph_walk plans
-- its level query once per session. Otherwise PL/pgSQL plans it at every
-- call (its generic plan's estimate, generate_series over the level's
-- bounds at 1,000 rows, costs more than the one-row custom plans): 0.3-1.1
-- ms of planning for 0.05-0.3 ms of execution. At 1,000,000 POIs one level
-- took 1.6-2.4 ms (p50) planned per call and 0.36 ms on the kept plan
-- (relay-bench's graph phase; BENCHMARKS.md).
--
-- Why the sizes: a plan is kept as made, so it must be made from
-- statistics under which the index plan is the cheapest whatever the
-- level's size. With 1,000 items estimated for a level, probing
-- poi_references_target_poi_id_idx (or poi_references_pkey) per item costs
-- about 10,000; hashing the level against a scan of poi_references costs
-- less below about a million rows, and a plan made then would scan the
-- whole table at every call as it grows. Seq scans are off so that a scan
-- of the table is never the cheaper side; hash and merge joins stay on: the
-- level's join with the items already listed needs one. A plan made from no
-- statistics (an empty table) would read pois by repository alone
-- (pois_name_idx): below the sizes, nothing is kept. TRUNCATE or ANALYZE of
-- either table makes the session plan again.
--
-- The settings are the functions' own (SET clauses): restored when they
-- return, so the caller's transaction keeps its own. The check is in each
-- function's body, not in a function of its own: one that set them with
-- set_config(..., true) and no SET clause would, called directly, leave
-- them on for the rest of the caller's transaction. relay_callers and
-- relay_callees become PL/pgSQL to set them; their signature, rows and
-- errors are unchanged.
--
-- Rollback: the functions plan every call again; no data is lost.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_callers(poi text, depth integer DEFAULT 1, repo text DEFAULT '', rel_type text DEFAULT 'CALLS')
RETURNS TABLE (level integer, repository text, poi_id text, name text, type text, file_id text,
               line_number integer, symbol text, via_repository text, via_poi_id text,
               repeated boolean, cycle boolean)
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
    -- set_config(..., true) lasts to the end of the transaction, but this
    -- function's own SET clauses (below) restore both settings on return.
    IF (SELECT reltuples FROM pg_class WHERE oid = 'poi_references'::regclass) >= 1000000
       AND (SELECT reltuples FROM pg_class WHERE oid = 'pois'::regclass) >= 100000 THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true),
                set_config('enable_seqscan', 'off', true);
    END IF;
    RETURN QUERY SELECT * FROM relay_graph_walk(poi, depth, repo, rel_type, true);
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_callees(poi text, depth integer DEFAULT 1, repo text DEFAULT '', rel_type text DEFAULT 'CALLS')
RETURNS TABLE (level integer, repository text, poi_id text, name text, type text, file_id text,
               line_number integer, symbol text, via_repository text, via_poi_id text,
               repeated boolean, cycle boolean)
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
    -- set_config(..., true) lasts to the end of the transaction, but this
    -- function's own SET clauses (below) restore both settings on return.
    IF (SELECT reltuples FROM pg_class WHERE oid = 'poi_references'::regclass) >= 1000000
       AND (SELECT reltuples FROM pg_class WHERE oid = 'pois'::regclass) >= 100000 THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true),
                set_config('enable_seqscan', 'off', true);
    END IF;
    RETURN QUERY SELECT * FROM relay_graph_walk(poi, depth, repo, rel_type, false);
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['relay_callers(text, integer, text, text)', 'relay_callees(text, integer, text, text)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp SET plan_cache_mode = auto SET enable_seqscan = on',
                       f, current_schema());
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_callers(poi text, depth integer DEFAULT 1, repo text DEFAULT '', rel_type text DEFAULT 'CALLS')
RETURNS TABLE (level integer, repository text, poi_id text, name text, type text, file_id text,
               line_number integer, symbol text, via_repository text, via_poi_id text,
               repeated boolean, cycle boolean)
LANGUAGE sql STABLE AS $fn$
    SELECT * FROM relay_graph_walk(poi, depth, repo, rel_type, true)
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION relay_callees(poi text, depth integer DEFAULT 1, repo text DEFAULT '', rel_type text DEFAULT 'CALLS')
RETURNS TABLE (level integer, repository text, poi_id text, name text, type text, file_id text,
               line_number integer, symbol text, via_repository text, via_poi_id text,
               repeated boolean, cycle boolean)
LANGUAGE sql STABLE AS $fn$
    SELECT * FROM relay_graph_walk(poi, depth, repo, rel_type, false)
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION relay_callers(text, integer, text, text) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_callees(text, integer, text, text) SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd
