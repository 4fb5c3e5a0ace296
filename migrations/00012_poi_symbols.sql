-- pois.symbol is the stable fully qualified name an analyzer may give a POI
-- (resolver.POI.Symbol). Supplied references name their targets by symbol
-- ("sym:<symbol>"); the worker reads a symbol's candidates through the
-- partial index, which holds only the POIs that have one.

-- +goose Up
ALTER TABLE pois ADD COLUMN symbol text;
CREATE INDEX pois_symbol_idx ON pois (symbol) WHERE symbol IS NOT NULL;

-- +goose Down
DROP INDEX pois_symbol_idx;
ALTER TABLE pois DROP COLUMN symbol;
