// Package repositories lists the repositories relay holds data of and
// deletes one of them: the store behind `relay repository list` and
// `relay repository delete` (README.md, "Repositories").
//
// A repository is listed while it has files or failed_pois rows, and
// exists (Exists) while it has those or analyses queued, rejected or waiting
// for the linker; "" is the default repository, which always exists. Every table of a repository's data has a repository
// column that begins its key (migration 00024), so each query here reads
// one repository's range of an index, or groups by the leading column.
package repositories

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/relay-dev/relay/internal/citus"
)

// JobInserter inserts a River job in a transaction; *river.Client[pgx.Tx]
// is one (an insert-only client is enough).
type JobInserter interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Store reads and deletes repositories.
type Store struct {
	pool   *pgxpool.Pool
	jobs   JobInserter
	logger *slog.Logger
	// layout says whether relay's tables are distributed (Citus), for the
	// statements that have a form of their own there (Preview).
	layout *citus.Layout
}

// New returns a Store over pool. jobs inserts the link jobs a Delete needs;
// it may be nil for a Store that only lists.
func New(pool *pgxpool.Pool, jobs JobInserter, logger *slog.Logger) *Store {
	return &Store{pool: pool, jobs: jobs, logger: logger, layout: citus.NewLayout(pool)}
}

// Summary is one repository's size.
type Summary struct {
	// Repository is the repository's name, "" for the default one.
	Repository string `json:"repository"`
	Files      int64  `json:"files"`
	POIs       int64  `json:"pois"`
	// Relationships counts the repository's resolved references: the
	// poi_references rows whose source is in it and that have a target
	// (in it, or in another repository for a supplied reference by symbol).
	Relationships int64 `json:"relationships"`
	// NewFailed counts its failed_pois rows in status new.
	NewFailed int64 `json:"new_failed"`
}

// listSQL counts each table by repository: each count groups by the
// leading column of the table's key (files, pois, poi_references) or of
// failed_pois_status_file_id_idx. A repository appears when it has files
// or failed_pois rows.
const listSQL = `
	WITH f AS (SELECT repository, count(*) AS n FROM files GROUP BY repository),
	     p AS (SELECT repository, count(*) AS n FROM pois GROUP BY repository),
	     r AS (SELECT repository, count(*) AS n FROM poi_references WHERE target_poi_id IS NOT NULL GROUP BY repository),
	     x AS (SELECT repository, count(*) FILTER (WHERE status = 'new') AS n FROM failed_pois GROUP BY repository)
	SELECT repository, coalesce(f.n, 0), coalesce(p.n, 0), coalesce(r.n, 0), coalesce(x.n, 0)
	FROM f FULL JOIN x USING (repository)
	LEFT JOIN p USING (repository)
	LEFT JOIN r USING (repository)
	ORDER BY repository`

// List returns every repository with files or failed_pois rows, in name
// order (byte order), with its counts. None: an empty slice.
func (s *Store) List(ctx context.Context) ([]Summary, error) {
	rows, err := s.pool.Query(ctx, listSQL)
	if err != nil {
		return nil, fmt.Errorf("error listing repositories: %w", err)
	}
	out, err := pgx.AppendRows(make([]Summary, 0), rows, func(row pgx.CollectableRow) (Summary, error) {
		var r Summary
		err := row.Scan(&r.Repository, &r.Files, &r.POIs, &r.Relationships, &r.NewFailed)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("error listing repositories: %w", err)
	}
	return out, nil
}
