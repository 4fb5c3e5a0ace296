-- pois.receiver is the type a Go method is declared on, as its header shows
-- it (resolver.Receiver), '' for any other POI. A member call on a value of
-- a known type resolves among that type's methods (resolver.Lookup).

-- +goose Up
ALTER TABLE pois ADD COLUMN receiver text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE pois DROP COLUMN receiver;
