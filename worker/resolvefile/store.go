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

// fileVersion returns the file's current version and the transaction that
// published it (0 when unknown), and takes a share lock on its row, so a
// re-publish of the file waits for this batch to commit: a batch whose
// publish was replaced writes neither failed POIs nor references.
func (s store) fileVersion(ctx context.Context, repository, fileID string) (version, xid int64, exists bool, err error) {
	var x *int64
	err = s.tx.QueryRow(ctx, fileVersionSQL, repository, fileID).Scan(&version, &x)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("error reading version of file %q: %w", fileID, err)
	}
	if x != nil {
		xid = *x
	}
	return version, xid, true, nil
}

const fileVersionSQL = `SELECT version, publish_xid FROM files WHERE repository = $1 AND file_id = $2 FOR SHARE`

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

// idsOfOtherFiles returns, of ok's POI ids, those that another file of
// repository holds, with that file: read after the upsert, so an id taken
// by a publish that committed meanwhile is found.
func (s store) idsOfOtherFiles(ctx context.Context, repository, fileID string, ok []poiResult) (map[string]string, error) {
	if len(ok) == 0 {
		return nil, nil
	}
	ids := make([]string, len(ok))
	for i, r := range ok {
		ids[i] = r.poi.ID
	}
	rows, err := s.tx.Query(ctx, `SELECT poi_id, file_id FROM pois WHERE repository = $1 AND poi_id = ANY($2) AND file_id <> $3`,
		repository, ids, fileID)
	if err != nil {
		return nil, fmt.Errorf("error looking up the files of %d reprocessed POIs: %w", len(ids), err)
	}
	out := map[string]string{}
	var id, file string
	if _, err := pgx.ForEachRow(rows, []any{&id, &file}, func() error { out[id] = file; return nil }); err != nil {
		return nil, fmt.Errorf("error looking up the files of %d reprocessed POIs: %w", len(ids), err)
	}
	return out, nil
}
