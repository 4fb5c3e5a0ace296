-- relay_analyst: a read-only role for SQL analysts of relay's dead letters
-- and of its graph (docs/failed_pois.md, docs/relationships.md).
-- Optional, and not part of the migrations. Run it as a database owner with
-- search_path set to relay's schema (public unless database_schema is set):
--
--   psql "$RELAY_DATABASE_URL" -c 'SET search_path = public' -f docs/sql/analyst_role.sql
--
-- It is idempotent: run it again after migrations add views. Then give
-- people logins in the role:
--
--   CREATE ROLE alice LOGIN PASSWORD '...' IN ROLE relay_analyst;

DO $$
BEGIN
    CREATE ROLE relay_analyst NOLOGIN;
EXCEPTION WHEN duplicate_object THEN
    NULL; -- already there
END
$$;

-- Sessions of the role cannot write, even by mistake, and cannot run for ever.
ALTER ROLE relay_analyst SET default_transaction_read_only = on;
ALTER ROLE relay_analyst SET statement_timeout = '5min';

DO $$
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO relay_analyst', current_schema());
    EXECUTE format('GRANT SELECT ON %I.failed_pois, %I.failed_pois_by_signature, %I.failed_pois_by_file, '
                   '%I.failed_pois_stuck, %I.dead_letter_events, %I.dead_lettered_items, %I.files, %I.pois, '
                   '%I.relationships, %I.poi_references TO relay_analyst',
                   current_schema(), current_schema(), current_schema(), current_schema(), current_schema(),
                   current_schema(), current_schema(), current_schema(), current_schema(), current_schema());
END
$$;

-- The graph's functions (migrations 28 and 31) read with the caller's privileges.
DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION %I.relay_callers(text, integer, text, text), '
                   '%I.relay_callees(text, integer, text, text), %I.relay_graph_walk(text, integer, text, text, boolean), '
                   '%I.relay_dependents(text, integer, text) TO relay_analyst',
                   current_schema(), current_schema(), current_schema(), current_schema());
END
$$;
