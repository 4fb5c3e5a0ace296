-- +goose Up
-- Reading the graph from SQL, in any language: the call hierarchy of a POI
-- (relay_callers, relay_callees) and the files a change to a file affects
-- (relay_dependents). docs/relationships.md documents them; they read only
-- pois and poi_references, through the indexes that serve one POI's edges:
-- poi_references_target_poi_id_idx (target_repository, target_poi_id) for
-- callers, poi_references_pkey (repository, source_poi_id, …) for callees,
-- pois_pkey for each item, pois_file_id_idx for a file's POIs.
--
-- A walk is breadth-first and lists each item once expanded: an item reached
-- again (through a cycle, or through two paths of one DAG) is returned as a
-- leaf with repeated = true, and cycle = true when it is on the path from the
-- root to the item that reached it. So a walk of any depth ends, and returns
-- at most one row per edge within the depth.
--
-- The functions are SECURITY INVOKER (they read what the caller may read:
-- docs/sql/analyst_role.sql grants it), STABLE, and have search_path pinned
-- to this schema. Their errors: 22023 (invalid_parameter_value) for a depth
-- below 1 or an unknown relationship type, P0002 (no_data_found) for a POI or
-- file the repository does not have.
--
-- Rollback: drops the functions; no data is lost.

-- relay_graph_walk is the walk behind relay_callers (incoming) and
-- relay_callees (outgoing).
-- +goose StatementBegin
CREATE FUNCTION relay_graph_walk(poi text, depth integer, repo text, rel_type text, incoming boolean)
RETURNS TABLE (level integer, repository text, poi_id text, name text, type text, file_id text,
               line_number integer, symbol text, via_repository text, via_poi_id text,
               repeated boolean, cycle boolean)
LANGUAGE plpgsql STABLE AS $fn$
#variable_conflict use_column
DECLARE
    -- Every item listed as expanded, index 1 the root; up is the index of
    -- the item it was reached through (0 for the root).
    v_repo text[];
    v_poi text[];
    v_up integer[];
    lo integer := 1;
    hi integer := 1;
    lvl integer := 0;
    e record;
    a integer;
BEGIN
    IF depth IS NULL OR depth < 1 THEN
        RAISE EXCEPTION 'depth must be 1 or more, not %', coalesce(depth::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF rel_type IS NULL OR rel_type NOT IN ('CALLS', 'EXTENDS', 'IMPLEMENTS', 'IMPORTS') THEN
        RAISE EXCEPTION 'relationship type % is not one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS', coalesce(quote_literal(rel_type), 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pois p WHERE p.repository = repo AND p.poi_id = poi) THEN
        RAISE EXCEPTION 'no POI % in repository %', quote_literal(coalesce(poi, '')), quote_literal(coalesce(repo, ''))
            USING ERRCODE = 'no_data_found';
    END IF;
    v_repo := ARRAY[repo];
    v_poi := ARRAY[poi];
    v_up := ARRAY[0];
    WHILE lvl < depth AND lo <= hi LOOP
        lvl := lvl + 1;
        -- The ORDER BY reads every edge of the level before the loop's
        -- first row, so the appends below do not change what it reads.
        FOR e IN
            WITH edge AS (
                SELECT f.i AS up, r.repository AS repo, r.source_poi_id AS poi
                FROM generate_series(lo, hi) AS f(i)
                JOIN poi_references r ON r.target_repository = v_repo[f.i] AND r.target_poi_id = v_poi[f.i]
                WHERE incoming AND r.type = rel_type
                UNION
                SELECT f.i, r.target_repository, r.target_poi_id
                FROM generate_series(lo, hi) AS f(i)
                JOIN poi_references r ON r.repository = v_repo[f.i] AND r.source_poi_id = v_poi[f.i]
                WHERE NOT incoming AND r.type = rel_type AND r.target_poi_id IS NOT NULL
            )
            SELECT edge.up, edge.repo, edge.poi, p.name, p.type, p.file_id, p.line_number, p.symbol,
                   v.j::integer AS seen,
                   row_number() OVER (PARTITION BY edge.repo, edge.poi ORDER BY edge.up) AS nth
            FROM edge
            LEFT JOIN pois p ON p.repository = edge.repo AND p.poi_id = edge.poi
            LEFT JOIN unnest(v_repo, v_poi) WITH ORDINALITY AS v(repo, poi, j)
                ON v.repo = edge.repo AND v.poi = edge.poi
            ORDER BY edge.up, p.file_id, p.line_number, edge.repo, edge.poi
        LOOP
            level := lvl;
            repository := e.repo;
            poi_id := e.poi;
            name := e.name;
            type := e.type;
            file_id := e.file_id;
            line_number := e.line_number;
            symbol := e.symbol;
            via_repository := v_repo[e.up];
            via_poi_id := v_poi[e.up];
            repeated := e.seen IS NOT NULL OR e.nth > 1;
            cycle := false;
            IF e.seen IS NOT NULL THEN
                -- A cycle when the item is the root or an item the path
                -- from the root to this one went through.
                a := e.up;
                WHILE a > 0 LOOP
                    IF a = e.seen THEN
                        cycle := true;
                        EXIT;
                    END IF;
                    a := v_up[a];
                END LOOP;
            ELSIF e.nth = 1 THEN
                v_repo := v_repo || e.repo;
                v_poi := v_poi || e.poi;
                v_up := v_up || e.up;
            END IF;
            RETURN NEXT;
        END LOOP;
        lo := hi + 1;
        hi := cardinality(v_poi);
    END LOOP;
END
$fn$;
-- +goose StatementEnd

-- relay_callers returns the POIs that reference poi (of repository repo)
-- with a rel_type relationship, to depth levels: level 1 references poi,
-- level 2 references a level-1 item (via_poi_id), and so on. For EXTENDS
-- they are its subtypes, for IMPLEMENTS its implementers.
-- +goose StatementBegin
CREATE FUNCTION relay_callers(poi text, depth integer DEFAULT 1, repo text DEFAULT '', rel_type text DEFAULT 'CALLS')
RETURNS TABLE (level integer, repository text, poi_id text, name text, type text, file_id text,
               line_number integer, symbol text, via_repository text, via_poi_id text,
               repeated boolean, cycle boolean)
LANGUAGE sql STABLE AS $fn$
    SELECT * FROM relay_graph_walk(poi, depth, repo, rel_type, true)
$fn$;
-- +goose StatementEnd

-- relay_callees returns the POIs poi references, to depth levels: level 1
-- is what poi calls (or extends, implements, imports), level 2 what those
-- call, and so on.
-- +goose StatementBegin
CREATE FUNCTION relay_callees(poi text, depth integer DEFAULT 1, repo text DEFAULT '', rel_type text DEFAULT 'CALLS')
RETURNS TABLE (level integer, repository text, poi_id text, name text, type text, file_id text,
               line_number integer, symbol text, via_repository text, via_poi_id text,
               repeated boolean, cycle boolean)
LANGUAGE sql STABLE AS $fn$
    SELECT * FROM relay_graph_walk(poi, depth, repo, rel_type, false)
$fn$;
-- +goose StatementEnd

-- relay_dependents returns the files a change to file (of repository repo)
-- may affect: level 1 are the files with a resolved reference (of any type)
-- to one of its POIs, level 2 those with one to a level-1 file
-- (via_file_id), and so on, to depth levels (null: until none is left).
-- Each file is listed once, at the level it is first reached; file itself
-- is not listed.
-- +goose StatementBegin
CREATE FUNCTION relay_dependents(file text, depth integer DEFAULT NULL, repo text DEFAULT '')
RETURNS TABLE (level integer, repository text, file_id text, via_repository text, via_file_id text)
LANGUAGE plpgsql STABLE AS $fn$
#variable_conflict use_column
DECLARE
    v_repo text[];
    v_file text[];
    lo integer := 1;
    hi integer := 1;
    lvl integer := 0;
    e record;
BEGIN
    IF depth IS NOT NULL AND depth < 1 THEN
        RAISE EXCEPTION 'depth must be 1 or more (or null for every level), not %', depth
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM files f WHERE f.repository = repo AND f.file_id = file) THEN
        RAISE EXCEPTION 'no file % in repository %', quote_literal(coalesce(file, '')), quote_literal(coalesce(repo, ''))
            USING ERRCODE = 'no_data_found';
    END IF;
    v_repo := ARRAY[repo];
    v_file := ARRAY[file];
    WHILE (depth IS NULL OR lvl < depth) AND lo <= hi LOOP
        lvl := lvl + 1;
        -- As in relay_graph_walk, the query has read the level before the
        -- loop appends to v_repo and v_file.
        FOR e IN
            SELECT DISTINCT ON (r.repository, r.source_file_id) f.i AS up, r.repository AS repo, r.source_file_id AS file
            FROM generate_series(lo, hi) AS f(i)
            JOIN pois p ON p.repository = v_repo[f.i] AND p.file_id = v_file[f.i]
            JOIN poi_references r ON r.target_repository = p.repository AND r.target_poi_id = p.poi_id
            WHERE NOT EXISTS (SELECT 1 FROM unnest(v_repo, v_file) AS v(repo, file)
                              WHERE v.repo = r.repository AND v.file = r.source_file_id)
            ORDER BY r.repository, r.source_file_id, f.i
        LOOP
            level := lvl;
            repository := e.repo;
            file_id := e.file;
            via_repository := v_repo[e.up];
            via_file_id := v_file[e.up];
            v_repo := v_repo || e.repo;
            v_file := v_file || e.file;
            RETURN NEXT;
        END LOOP;
        lo := hi + 1;
        hi := cardinality(v_file);
    END LOOP;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION relay_graph_walk(text, integer, text, text, boolean) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_callers(text, integer, text, text) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_callees(text, integer, text, text) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION relay_dependents(text, integer, text) SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION relay_dependents(text, integer, text);
DROP FUNCTION relay_callees(text, integer, text, text);
DROP FUNCTION relay_callers(text, integer, text, text);
DROP FUNCTION relay_graph_walk(text, integer, text, text, boolean);
