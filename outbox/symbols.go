package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/resolver"
)

// upsertSymbolsSQL adds or updates symbols of the repository $1 ($2-$10
// the POIs' ids, files, names, types, line numbers, symbols (” for none),
// receivers, result types and field types). An id owned by another file is
// left alone (the caller checks), and an unchanged row is not rewritten.
// On Citus the SELECT runs on the coordinator and its rows go to the
// repository's shard (an INSERT ... SELECT through the coordinator).
const upsertSymbolsSQL = `
	INSERT INTO pois (repository, poi_id, file_id, name, type, line_number, symbol, receiver, result, fields)
	SELECT $1, id, file, name, type, line, nullif(symbol, ''), receiver, result, fields
	FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[])
		AS u(id, file, name, type, line, symbol, receiver, result, fields)
	ON CONFLICT (repository, poi_id) DO UPDATE
		SET name = excluded.name, type = excluded.type, line_number = excluded.line_number, symbol = excluded.symbol,
		    receiver = excluded.receiver, result = excluded.result, fields = excluded.fields
		WHERE pois.file_id = excluded.file_id
		  AND (pois.name, pois.type, pois.line_number, pois.symbol, pois.receiver, pois.result, pois.fields)
		      IS DISTINCT FROM (excluded.name, excluded.type, excluded.line_number, excluded.symbol, excluded.receiver,
		                        excluded.result, excluded.fields)`

// UpsertSymbolsTx puts syms into the symbol table as POIs of fileID (of
// repository),
// creating the file's row if it has none, without touching the file's other
// symbols. The worker uses it for reprocessed POIs that were invalid when
// their file was published.
func UpsertSymbolsTx(ctx context.Context, tx pgx.Tx, repository, fileID string, syms []resolver.POI) error {
	if len(syms) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO files (repository, file_id) VALUES ($1, $2) ON CONFLICT (repository, file_id) DO NOTHING`,
		repository, fileID); err != nil {
		return fmt.Errorf("error recording file %q: %w", fileID, err)
	}
	n := len(syms)
	ids, files, names, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	lines, symbols, receivers, results, fields := make([]int32, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, p := range syms {
		ids[i], files[i], names[i], types[i], lines[i] = p.ID, fileID, p.Name, p.Type, int32(p.LineNumber)
		symbols[i], receivers[i], results[i], fields[i] = p.Symbol, resolver.Receiver(p), resolver.ResultType(p), resolver.FieldTypes(p)
	}
	if _, err := tx.Exec(ctx, upsertSymbolsSQL, repository, ids, files, names, types, lines, symbols, receivers, results, fields); err != nil {
		return fmt.Errorf("error recording symbols of file %q: %w", fileID, err)
	}
	return nil
}
