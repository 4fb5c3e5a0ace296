package resolvefile

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
)

// store is the resolve worker's SQL, run inside the batch transaction.
type store struct{ tx pgx.Tx }

// fileVersion returns the file's current version and takes a share lock on
// its row, so a re-publish of the file waits for this batch to commit: a
// batch whose publish was replaced writes neither failed POIs nor
// references.
func (s store) fileVersion(ctx context.Context, repository, fileID string) (int64, bool, error) {
	var v int64
	err := s.tx.QueryRow(ctx, fileVersionSQL, repository, fileID).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("error reading version of file %q: %w", fileID, err)
	}
	return v, true, nil
}

const fileVersionSQL = `SELECT version FROM files WHERE repository = $1 AND file_id = $2 FOR SHARE`

// repositoryGone reports whether repository has no file left (relay
// repository delete deleted them all).
func (s store) repositoryGone(ctx context.Context, repository string) (bool, error) {
	var gone bool
	if err := s.tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM files WHERE repository = $1)`, repository).Scan(&gone); err != nil {
		return false, fmt.Errorf("error looking up repository %q: %w", repository, err)
	}
	return gone, nil
}

// upsertSymbols puts resolved POIs into the symbol table (for reprocessed
// POIs that were invalid when first published).
func (s store) upsertSymbols(ctx context.Context, repository, fileID string, ok []poiResult) error {
	syms := make([]resolver.POI, len(ok))
	for i, r := range ok {
		syms[i] = r.poi
	}
	return outbox.UpsertSymbolsTx(ctx, s.tx, repository, fileID, syms)
}
