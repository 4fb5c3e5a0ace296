package citus

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Querier runs queries: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// queryValue runs sql, which returns one value, into dst.
func queryValue[T any](ctx context.Context, q Querier, sql string, args ...any) (T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		var zero T
		return zero, err
	}
	return pgx.CollectExactlyOneRow(rows, pgx.RowTo[T])
}

// TablesDistributed reports whether any of Tables, found through q's search_path,
// is a Citus distributed table. It is false on plain PostgreSQL, where
// Citus's catalog table pg_dist_partition does not exist (looked up with
// to_regclass, so a database without the extension needs nothing), and on a
// Citus database before relay migrate distribute. Any table counts: a
// distribute that stopped half way leaves the first tables distributed, and
// the statements that read them must take their distributed forms.
func TablesDistributed(ctx context.Context, q Querier) (bool, error) {
	catalog, err := queryValue[bool](ctx, q, `SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL`)
	if err != nil {
		return false, fmt.Errorf("error looking for Citus's catalog: %w", err)
	}
	if !catalog {
		return false, nil
	}
	dist, err := queryValue[bool](ctx, q, `
		SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p JOIN unnest($1::text[]) AS t(name) ON p.logicalrelid = to_regclass(t.name))`,
		Tables)
	if err != nil {
		return false, fmt.Errorf("error reading whether relay's tables are distributed: %w", err)
	}
	return dist, nil
}

// Layout remembers TablesDistributed's answer for a store: it asks the database
// once, the first time a statement needs to know, and never again. A store
// opened before relay migrate distribute keeps the plain forms until it is
// opened again (relay's commands open theirs for each run; a worker or the
// console is restarted after distributing).
type Layout struct {
	q           Querier
	mu          sync.Mutex
	known, dist bool
}

// NewLayout returns the Layout of the database q reads.
func NewLayout(q Querier) *Layout { return &Layout{q: q} }

// Distributed is TablesDistributed, asked once: an error is returned and
// asked again next time, an answer is kept.
func (l *Layout) Distributed(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.known {
		return l.dist, nil
	}
	dist, err := TablesDistributed(ctx, l.q)
	if err != nil {
		return false, err
	}
	l.known, l.dist = true, dist
	return dist, nil
}
