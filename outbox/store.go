package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/resolver"
)

// store is the publisher's SQL, run in the publish transaction.
type store struct{ tx pgx.Tx }

// bumpFile creates the file's row or increases its version, locking the row
// until commit: concurrent publishes of one file, and workers checking the
// file's version, queue behind it. It also returns the publishing
// transaction's id (see ResolveFileArgs.PublishXID).
func (s store) bumpFile(ctx context.Context, fileID string, poiCount int) (existed bool, prevCount int, version, xid int64, err error) {
	var prev *int32
	err = s.tx.QueryRow(ctx, `
		WITH prev AS (SELECT poi_count FROM files WHERE file_id = $1 FOR UPDATE)
		INSERT INTO files (file_id, version, poi_count, published_at) VALUES ($1, 1, $2, now())
		ON CONFLICT (file_id) DO UPDATE
			SET version = files.version + 1, poi_count = excluded.poi_count, published_at = excluded.published_at
		RETURNING version, (SELECT poi_count FROM prev), (SELECT count(*) FROM prev) > 0,
			pg_current_xact_id()::text::bigint`,
		fileID, poiCount).Scan(&version, &prev, &existed, &xid)
	if err != nil {
		return false, 0, 0, 0, fmt.Errorf("error recording file version: %w", err)
	}
	if prev != nil {
		prevCount = int(*prev)
	}
	return existed, prevCount, version, xid, nil
}

// foreignOwner returns the file owning one of syms' ids, if another file does.
func (s store) foreignOwner(ctx context.Context, fileID string, syms []resolver.POI) (owner, poiID string, err error) {
	ids := make([]string, len(syms))
	for i, p := range syms {
		ids[i] = p.ID
	}
	err = s.tx.QueryRow(ctx, `SELECT file_id, poi_id FROM pois WHERE poi_id = ANY($1) AND file_id <> $2 ORDER BY poi_id LIMIT 1`,
		ids, fileID).Scan(&owner, &poiID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("error checking POI id ownership: %w", err)
	}
	return owner, poiID, nil
}

type symbolKey struct{ id, name, typ string }

// replaceSymbols makes syms the file's whole symbol table entry and removes
// the relationships and references that originate from the file (its job
// recreates them). POIs that stay keep their incoming relationships. It
// returns the names whose definitions changed. Import POIs never count:
// no relationship can target one (resolver.Accepts), so adding or removing
// one changes no other file's resolution.
func (s store) replaceSymbols(ctx context.Context, fileID string, syms []resolver.POI) ([]string, error) {
	rows, err := s.tx.Query(ctx, `SELECT poi_id, name, type FROM pois WHERE file_id = $1`, fileID)
	if err != nil {
		return nil, fmt.Errorf("error reading the file's symbols: %w", err)
	}
	old := map[symbolKey]bool{}
	for rows.Next() {
		var k symbolKey
		if err := rows.Scan(&k.id, &k.name, &k.typ); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error reading the file's symbols: %w", err)
		}
		old[k] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading the file's symbols: %w", err)
	}

	n := len(syms)
	ids, names, types, lines := symbolColumns(syms)
	changedSet := map[string]bool{}
	for _, p := range syms {
		k := symbolKey{p.ID, p.Name, p.Type}
		if old[k] {
			delete(old, k)
		} else if p.Type != resolver.TypeImport {
			changedSet[p.Name] = true
		}
	}
	for k := range old {
		if k.typ != resolver.TypeImport {
			changedSet[k.name] = true
		}
	}

	b := &pgx.Batch{}
	b.Queue(`DELETE FROM pois WHERE file_id = $1 AND NOT (poi_id = ANY($2))`, fileID, ids)
	b.Queue(`DELETE FROM poi_references WHERE source_file_id = $1`, fileID)
	b.Queue(`DELETE FROM relationships WHERE source_file_id = $1`, fileID)
	b.Queue(upsertSymbolsSQL, fileID, ids, names, types, lines)
	b.Queue(`SELECT count(*) FROM pois WHERE file_id = $1 AND poi_id = ANY($2)`, fileID, ids)
	br := s.tx.SendBatch(ctx, b)
	for range 4 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("error replacing the file's symbols: %w", err)
		}
	}
	var stored int
	if err := br.QueryRow().Scan(&stored); err != nil {
		_ = br.Close()
		return nil, fmt.Errorf("error replacing the file's symbols: %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("error replacing the file's symbols: %w", err)
	}
	if stored != n {
		// Another file took one of these ids concurrently.
		return nil, &RejectError{FileID: fileID, POIIndex: -1,
			Reason: fmt.Sprintf("%d of its POI ids were published by another file at the same time; POI ids must be unique across files", n-stored)}
	}
	changed := make([]string, 0, len(changedSet))
	for name := range changedSet {
		changed = append(changed, name)
	}
	slices.Sort(changed)
	return changed, nil
}
