-- A role that may publish through relay's SQL API and do nothing else:
-- relay_publish and relay_publish_many are SECURITY DEFINER functions with
-- their search_path pinned to relay's schema, so this role needs no right
-- on relay's tables. Replace relay with the schema relay migrated
-- (database_schema; public when unset) and my_service with the role your
-- service logs in as.
CREATE ROLE relay_publisher NOLOGIN;
GRANT USAGE ON SCHEMA relay TO relay_publisher;
GRANT EXECUTE ON FUNCTION relay.relay_publish(jsonb), relay.relay_publish_many(jsonb) TO relay_publisher;
-- GRANT relay_publisher TO my_service;
