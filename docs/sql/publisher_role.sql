-- A role that may publish through relay's SQL API and do nothing else:
-- relay_publish and relay_publish_many are SECURITY DEFINER functions with
-- their search_path pinned to relay's schema, so this role needs no right
-- on relay's tables. It works in the schema first on search_path, relay's
-- (database_schema; public when unset):
--   psql "$RELAY_DATABASE_URL" -c 'SET search_path = public' -f docs/sql/publisher_role.sql
-- Then grant the role to the one your service logs in as:
--   GRANT relay_publisher TO my_service;
CREATE ROLE relay_publisher NOLOGIN;
DO $$ BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO relay_publisher', current_schema());
END $$;
GRANT EXECUTE ON FUNCTION relay_publish(jsonb), relay_publish_many(jsonb) TO relay_publisher;
