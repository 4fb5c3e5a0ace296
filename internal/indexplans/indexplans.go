// Package indexplans keeps relay's statements on plans that follow tables
// as they grow: transactions whose statements run on index plans (Begin),
// and statements planned for each call (Unnamed).
package indexplans

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Beginner starts a transaction: a *pgxpool.Pool, or a test's pgx.Tx
// (whose Begin is a savepoint).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// txOptionsBeginner begins a transaction with its own BEGIN statement: a
// *pgxpool.Pool.
type txOptionsBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Begin begins a transaction on index plans (SQL): in the BEGIN's own
// round trip on a pool, or after it on a Beginner that only begins (a
// test's transaction, whose Begin is a savepoint).
func Begin(ctx context.Context, db Beginner) (pgx.Tx, error) {
	return BeginFor(ctx, db, false)
}

// BeginFor is Begin, with DistributedSQL instead of SQL when distributed:
// relay's tables are distributed by Citus.
func BeginFor(ctx context.Context, db Beginner, distributed bool) (pgx.Tx, error) {
	sql := SQL
	if distributed {
		sql = DistributedSQL
	}
	if b, ok := db.(txOptionsBeginner); ok {
		return b.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN; " + sql})
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}

// SQL runs the rest of a transaction on index plans, and ends with it.
// relay's workers look rows up by key sets in tables that grow (pois,
// poi_references, files, link_queue, river_job); a plan chosen while a
// table was empty or not yet analyzed (a new deployment, a table just
// truncated, before autovacuum analyzes it) would keep sequential scans as
// the table grows. With sequential scans, hash and merge joins off, the
// planner uses them only when nothing else can run a statement; JIT is off
// (an unanalyzed table's estimates can cross jit_above_cost); plans are
// generic, since an index plan does not depend on the parameters. The
// settings are the transaction's own (set_config's is_local), so they hold
// through a transaction-pooling connection pooler and end with the
// transaction.
const SQL = DistributedSQL + `, set_config('plan_cache_mode', 'force_generic_plan', true)`

// DistributedSQL is SQL on distributed tables (Citus): the same settings,
// but plans stay custom (plan_cache_mode auto). Citus plans a statement
// over distributed tables only with its parameters' values: it refuses a
// generic plan of one that it cannot route or push down without them
// ("could not create distributed plan", "Possibly this is caused by the
// use of parameters"), and under auto it makes PostgreSQL choose the
// custom plan by itself. The index settings reach the coordinator's plan
// only; each shard plans its part of a statement with its own.
const DistributedSQL = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('enable_mergejoin', 'off', true), set_config('jit', 'off', true)`
