package worker

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/indexplan"
	"github.com/relay-dev/relay/internal/testdb"
)

// countingTracer counts the round trips a connection makes: one per query
// sent alone, one per batch.
type countingTracer struct {
	mu    sync.Mutex
	trips int
}

func (c *countingTracer) trip(ctx context.Context) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
	return ctx
}

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return c.trip(ctx)
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *countingTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return c.trip(ctx)
}

func (c *countingTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *countingTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (c *countingTracer) reset() (trips int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	trips, c.trips = c.trips, 0
	return trips
}

// setupPipe creates table pipe (columns) in a database of the test's own,
// and a one-connection pool on it whose round trips the tracer counts.
func setupPipe(t *testing.T, columns string) (*testdb.DB, *pgxpool.Pool, *countingTracer) {
	t.Helper()
	db := testdb.New(t)
	_, err := db.Pool.Exec(context.Background(), `CREATE TABLE pipe (`+columns+`)`)
	require.NoError(t, err)
	tr := &countingTracer{}
	cfg := db.Pool.Config().Copy()
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return db, pool, tr
}

var pipeBegin = []string{"BEGIN", indexplan.TxSetSQL}

// A pipelined transaction spends no round trip on BEGIN or COMMIT: BEGIN
// and the settings go with the first statement, COMMIT with the last
// batch. The statements run in one transaction, under the settings, and
// its writes are committed when the batch returns.
func TestPipeTx_BeginAndCommitRideWithStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, pool, tr := setupPipe(t, `x int`)

	for _, first := range []string{"query", "queryrow", "exec", "batch"} {
		t.Run(first, func(t *testing.T) {
			tr.reset()
			tx, err := beginPipelined(ctx, pool, pipeBegin)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()

			var xid1 int64
			var mode string
			const q = `SELECT pg_current_xact_id()::text::bigint, current_setting('plan_cache_mode')`
			switch first {
			case "query":
				rows, err := tx.Query(ctx, q)
				require.NoError(t, err)
				require.True(t, rows.Next())
				require.NoError(t, rows.Scan(&xid1, &mode))
				require.False(t, rows.Next())
				require.NoError(t, rows.Err())
				rows.Close()
			case "queryrow":
				require.NoError(t, tx.QueryRow(ctx, q).Scan(&xid1, &mode))
			case "exec":
				_, err := tx.Exec(ctx, `INSERT INTO pipe VALUES (0)`)
				require.NoError(t, err)
				require.NoError(t, tx.QueryRow(ctx, q).Scan(&xid1, &mode))
			case "batch":
				b := &pgx.Batch{}
				b.Queue(q).QueryRow(func(row pgx.Row) error { return row.Scan(&xid1, &mode) })
				require.NoError(t, tx.SendBatch(ctx, b).Close())
			}
			require.Equal(t, "force_generic_plan", mode)

			b := &pgx.Batch{}
			var xid2 int64
			b.Queue(`INSERT INTO pipe VALUES (1)`)
			b.Queue(`SELECT pg_current_xact_id()::text::bigint`).QueryRow(func(row pgx.Row) error { return row.Scan(&xid2) })
			tx.queueCommit(b)
			require.NoError(t, tx.SendBatch(ctx, b).Close())
			require.Equal(t, xid1, xid2, "one transaction")
			require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM pipe WHERE x = 1`), "committed by the batch")
			require.NoError(t, tx.Commit(ctx))

			trips := 2
			if first == "exec" {
				trips = 3
			}
			require.Equal(t, trips, tr.reset(), "no round trip for BEGIN or COMMIT")
			require.Equal(t, int32(0), pool.Stat().AcquiredConns(), "connection released")
			_, err = db.Pool.Exec(ctx, `DELETE FROM pipe`)
			require.NoError(t, err)
		})
	}
}

// When a statement of the last batch fails, the server skips the queued
// COMMIT: nothing is committed, and after a ROLLBACK TO SAVEPOINT the
// transaction goes on and Commit commits it. The results of the batch
// that carried BEGIN are the caller's own, read in order.
func TestPipeTx_FailedBatchSkipsCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, pool, _ := setupPipe(t, `x int PRIMARY KEY`)

	tx, err := beginPipelined(ctx, pool, pipeBegin)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO pipe VALUES (1)`)
	b.Queue(`SELECT 42`)
	br := tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	require.NoError(t, err)
	require.Equal(t, "INSERT 0 1", tag.String(), "the first result read is the caller's first statement")
	var v int
	require.NoError(t, br.QueryRow().Scan(&v))
	require.Equal(t, 42, v)
	require.NoError(t, br.Close())

	b = &pgx.Batch{}
	b.Queue(`SAVEPOINT s`)
	b.Queue(`INSERT INTO pipe VALUES (1)`) // duplicate key
	tx.queueCommit(b)
	err = tx.SendBatch(ctx, b).Close()
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23505", pgErr.Code)
	require.False(t, tx.committed)
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM pipe`), "nothing committed")

	_, err = tx.Exec(ctx, `ROLLBACK TO SAVEPOINT s`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO pipe VALUES (2)`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM pipe`))
	require.ErrorIs(t, tx.Rollback(ctx), pgx.ErrTxClosed)
	require.Equal(t, int32(0), pool.Stat().AcquiredConns())
}

// Rollback undoes the transaction and leaves the pooled connection outside
// any transaction; a transaction that sent nothing sends nothing to end.
// A transaction that failed before its queued COMMIT reports the rollback.
func TestPipeTx_Rollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, pool, tr := setupPipe(t, `x int`)

	tx, err := beginPipelined(ctx, pool, pipeBegin)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Zero(t, tr.reset(), "nothing sent")
	_, err = tx.Exec(ctx, `SELECT 1`)
	require.ErrorIs(t, err, pgx.ErrTxClosed)

	tx, err = beginPipelined(ctx, pool, pipeBegin)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO pipe VALUES (1)`)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM pipe`))

	// The pool's one connection is outside a transaction again.
	var status string
	require.NoError(t, pool.QueryRow(ctx, `SELECT CASE WHEN pg_current_xact_id_if_assigned() IS NULL THEN 'idle' ELSE 'tx' END`).Scan(&status))
	require.Equal(t, "idle", status)

	tx, err = beginPipelined(ctx, pool, pipeBegin)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1/0`)
	require.Error(t, err)
	require.ErrorIs(t, tx.Commit(ctx), pgx.ErrTxCommitRollback)

	tx, err = beginPipelined(ctx, pool, pipeBegin)
	require.NoError(t, err)
	_, err = tx.Begin(ctx)
	require.ErrorContains(t, err, "savepoints")
	require.NoError(t, tx.Rollback(ctx))
}
