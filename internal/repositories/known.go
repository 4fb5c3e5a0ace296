package repositories

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Exists reports whether relay holds data of repository name: files,
// failed_pois rows, or analyses queued, rejected or waiting for the linker.
// The default repository ("") always exists. Each probe reads the start of
// one repository's range of a primary key. A role that may not read the
// queues (docs/sql/analyst_role.sql's relay_analyst reads files and
// failed_pois) is answered from the tables it reads.
func (s *Store) Exists(ctx context.Context, name string) (bool, error) {
	if name == "" {
		return true, nil
	}
	var ok bool
	err := s.pool.QueryRow(ctx, existsSQL, name).Scan(&ok)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42501" /* insufficient_privilege */ {
		err = s.pool.QueryRow(ctx, existsReadSQL, name).Scan(&ok)
	}
	if err != nil {
		return false, fmt.Errorf("error looking up repository %q: %w", name, err)
	}
	return ok, nil
}

const (
	existsReadSQL = `SELECT EXISTS (SELECT 1 FROM files WHERE repository = $1)
		OR EXISTS (SELECT 1 FROM failed_pois WHERE repository = $1)`
	existsSQL = existsReadSQL + `
		OR EXISTS (SELECT 1 FROM publish_queue WHERE repository = $1)
		OR EXISTS (SELECT 1 FROM rejected_analyses WHERE repository = $1)
		OR EXISTS (SELECT 1 FROM link_queue WHERE repository = $1)`
)

// namesSQL lists the repositories with files or failed_pois rows, in byte
// order, by skipping from one repository to the next along each table's
// primary key (one index probe per repository, not a scan of the rows).
const namesSQL = `
	WITH RECURSIVE f(repo) AS (
	    SELECT min(repository) FROM files
	    UNION ALL
	    SELECT (SELECT min(repository) FROM files WHERE repository > f.repo) FROM f WHERE f.repo IS NOT NULL),
	x(repo) AS (
	    SELECT min(repository) FROM failed_pois
	    UNION ALL
	    SELECT (SELECT min(repository) FROM failed_pois WHERE repository > x.repo) FROM x WHERE x.repo IS NOT NULL)
	SELECT repo FROM (SELECT repo FROM f UNION SELECT repo FROM x) u
	WHERE repo IS NOT NULL
	ORDER BY repo COLLATE "C"`

// Names returns the repositories relay list shows (those with files or
// failed_pois rows), in byte order; "" is the default repository.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, namesSQL)
	if err != nil {
		return nil, fmt.Errorf("error listing repository names: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("error listing repository names: %w", err)
	}
	return names, nil
}
