package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/resolver"
)

// Ceiling is phase 1: the rows relay writes for the main corpus (its POI
// rows and relationship rows), written the fastest way PostgreSQL allows:
// COPY into the same tables, with the same indexes and constraints, in one
// transaction. A relationship row is a resolved poi_references row (the
// relationships view shows them).
type Ceiling struct {
	POIRows          int64   `json:"poi_rows"`
	RelationshipRows int64   `json:"relationship_rows"`
	Seconds          float64 `json:"seconds"`
	RowsPerSec       float64 `json:"rows_per_sec"`
}

func (b *bench) ceiling(ctx context.Context, res *Result) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	c := b.mainCorpus()
	var files, pois, rels [][]any
	for k := range c.files {
		files = append(files, []any{fileID(k), int64(1), int32(c.poisPerFile)})
		for i := range c.poisPerFile {
			if !c.isMalformed(k*c.poisPerFile + i) {
				pois = append(pois, []any{poiID(k, i), fileID(k), poiName(k, i), typeOf(i), int32(i*12 + 3)})
			}
		}
	}
	now := time.Now()
	err := c.edges(func(src, tgt, name, srcFile, tgtFile string) error {
		rels = append(rels, []any{src, srcFile, name, resolver.ReferenceKey(name), "CALLS", tgt, tgtFile, int64(1), now})
		return nil
	})
	if err != nil {
		return err
	}
	start := time.Now()
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		for _, t := range []struct {
			table string
			cols  []string
			rows  [][]any
		}{
			{"files", []string{"file_id", "version", "poi_count"}, files},
			{"pois", []string{"poi_id", "file_id", "name", "type", "line_number"}, pois},
			{"poi_references", []string{"source_poi_id", "source_file_id", "name", "key", "type", "target_poi_id", "target_file_id", "job_id", "resolved_at"}, rels},
		} {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{t.table}, t.cols, pgx.CopyFromRows(t.rows)); err != nil {
				return fmt.Errorf("error copying into %s: %w", t.table, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	res.Ceiling = &Ceiling{POIRows: int64(len(pois)), RelationshipRows: int64(len(rels)), Seconds: secs,
		RowsPerSec: ratio(float64(len(pois)+len(rels)), secs)}
	b.progress("  COPY of %d POI rows and %d relationship rows in %.2fs", len(pois), len(rels), secs)
	return nil
}
