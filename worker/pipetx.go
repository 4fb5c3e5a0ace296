package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeTx is a batch transaction that spends no round trip of its own on
// BEGIN or COMMIT: BEGIN (with the transaction's settings) goes ahead of the
// first pipelined batch, and COMMIT can go at the end of the last one
// (queueCommit). A batch is worked in three round trips instead of five,
// and each round trip costs both processes a wake-up and the kernel two
// trips through the loopback (relay-bench: two extra round trips per batch
// cost about 7% of the concurrent run's rows/s).
//
// The first statement, sent alone (Exec, Query, QueryRow) or in a batch,
// carries BEGIN; only CopyFrom and Prepare pay for BEGIN in a round trip of
// their own, as in a pgx transaction. Savepoints (Begin) and large objects are not offered:
// the batch transaction uses neither. pipeTx is not safe for concurrent
// use, as no pgx connection is.
type pipeTx struct {
	conn *pgxpool.Conn
	// beginSQL are the statements that begin the transaction: BEGIN and
	// SET LOCALs, each alone (a batch runs them as prepared statements,
	// which take one command each).
	beginSQL []string
	begun    bool // BEGIN has been sent
	// committed: a queued COMMIT succeeded.
	committed bool
	closed    bool
}

// beginPipelined acquires a connection from pool for a pipeTx that runs
// beginSQL (statements to send, in order, before the transaction's first).
// Nothing is sent yet.
func beginPipelined(ctx context.Context, pool *pgxpool.Pool, beginSQL []string) (*pipeTx, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &pipeTx{conn: conn, beginSQL: beginSQL}, nil
}

var errPipeTxSavepoint = errors.New("the batch transaction does not support savepoints (pgx.Tx.Begin)")

// Begin is not supported: see pipeTx.
func (t *pipeTx) Begin(context.Context) (pgx.Tx, error) { return nil, errPipeTxSavepoint }

// ensureBegun sends BEGIN in a round trip of its own if no statement has
// been sent yet.
func (t *pipeTx) ensureBegun(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	if t.begun {
		return nil
	}
	t.begun = true
	b := &pgx.Batch{}
	for _, s := range t.beginSQL {
		b.Queue(s)
	}
	if err := t.conn.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("error beginning transaction: %w", err)
	}
	return nil
}

// SendBatch sends b, preceded by BEGIN when it is the transaction's first.
func (t *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.closed {
		return errBatchResults{pgx.ErrTxClosed}
	}
	if t.begun {
		return t.conn.SendBatch(ctx, b)
	}
	t.begun = true
	nb := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(t.beginSQL)+len(b.QueuedQueries))}
	for _, s := range t.beginSQL {
		nb.Queue(s)
	}
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	return &prefixedResults{br: t.conn.SendBatch(ctx, nb), skip: len(t.beginSQL)}
}

// queueCommit queues COMMIT at the end of b, to be sent with SendBatch: when
// the batch's results are read without error, the transaction is committed
// (and Commit only releases the connection). When a statement before it
// fails, the server skips the COMMIT and the transaction stays open, to be
// rolled back (or, after a ROLLBACK TO SAVEPOINT, committed by Commit).
func (t *pipeTx) queueCommit(b *pgx.Batch) {
	b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
		if tag.String() != "COMMIT" {
			// The transaction had failed before: COMMIT rolled it back.
			return pgx.ErrTxCommitRollback
		}
		t.committed = true
		return nil
	})
}

// Commit commits the transaction unless a queued COMMIT already did, and
// releases the connection.
func (t *pipeTx) Commit(ctx context.Context) error { return t.end(ctx, "COMMIT") }

// Rollback rolls the transaction back unless it has ended, and releases the
// connection.
func (t *pipeTx) Rollback(ctx context.Context) error { return t.end(ctx, "ROLLBACK") }

// end sends sql (COMMIT or ROLLBACK) unless nothing was sent or a queued
// COMMIT succeeded, and releases the connection. A connection the statement
// failed to take out of the transaction is closed, so that the pool never
// hands out a connection inside a transaction.
func (t *pipeTx) end(ctx context.Context, sql string) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	defer t.release()
	if t.committed || !t.begun {
		return nil
	}
	tag, err := t.conn.Exec(ctx, sql)
	if err != nil {
		if t.conn.Conn().PgConn().TxStatus() != 'I' {
			_ = t.conn.Conn().Close(ctx)
		}
		return err
	}
	if sql == "COMMIT" && tag.String() != "COMMIT" {
		// The transaction had failed before: COMMIT rolled it back.
		return pgx.ErrTxCommitRollback
	}
	return nil
}

func (t *pipeTx) release() {
	t.closed = true
	t.conn.Release()
}

func (t *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.closed || t.begun {
		if t.closed {
			return pgconn.CommandTag{}, pgx.ErrTxClosed
		}
		return t.conn.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, b)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.closed {
		return nil, pgx.ErrTxClosed
	}
	if t.begun {
		return t.conn.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (t *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.closed {
		return errRow{pgx.ErrTxClosed}
	}
	if t.begun {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	rows, err := t.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return rowOf{rows}
}

func (t *pipeTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.ensureBegun(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, columns, src)
}

func (t *pipeTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.ensureBegun(ctx); err != nil {
		return nil, err
	}
	return t.conn.Conn().Prepare(ctx, name, sql)
}

// LargeObjects is not supported: see pipeTx. The zero value it returns
// fails every call.
func (t *pipeTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (t *pipeTx) Conn() *pgx.Conn { return t.conn.Conn() }

// batchRows are the rows of a statement sent in a batch behind BEGIN: the
// batch ends when the rows do.
type batchRows struct {
	pgx.Rows
	br   pgx.BatchResults
	err  error
	done bool
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *batchRows) finish() {
	if r.done {
		return
	}
	r.done = true
	r.Rows.Close()
	if err := r.br.Close(); err != nil && r.err == nil {
		r.err = err
	}
}

func (r *batchRows) Close() { r.finish() }

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// rowOf is the first row of rows, as pgx.Conn.QueryRow gives it.
type rowOf struct{ rows pgx.Rows }

func (r rowOf) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// prefixedResults reads past the results of the statements SendBatch put
// ahead of the caller's, so that the caller reads its own.
type prefixedResults struct {
	br   pgx.BatchResults
	skip int
	err  error
}

func (r *prefixedResults) skipPrefix() error {
	for ; r.skip > 0 && r.err == nil; r.skip-- {
		if _, err := r.br.Exec(); err != nil {
			r.err = fmt.Errorf("error beginning transaction: %w", err)
		}
	}
	return r.err
}

func (r *prefixedResults) Exec() (pgconn.CommandTag, error) {
	if err := r.skipPrefix(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return r.br.Exec()
}

func (r *prefixedResults) Query() (pgx.Rows, error) {
	if err := r.skipPrefix(); err != nil {
		return nil, err
	}
	return r.br.Query()
}

func (r *prefixedResults) QueryRow() pgx.Row {
	if err := r.skipPrefix(); err != nil {
		return errRow{err}
	}
	return r.br.QueryRow()
}

// Tx is nil: the transaction is the pipeTx, not one pgx began
// (pgx.Batch.BeginTx).
func (r *prefixedResults) Tx() pgx.Tx { return nil }

// Close reads the remaining results (running the callbacks of the queued
// queries) and returns the first error, the prefix's included.
func (r *prefixedResults) Close() error {
	err := r.skipPrefix()
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errBatchResults struct{ err error }

func (e errBatchResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, e.err }
func (e errBatchResults) Query() (pgx.Rows, error)         { return nil, e.err }
func (e errBatchResults) QueryRow() pgx.Row                { return errRow(e) }
func (e errBatchResults) Close() error                     { return e.err }
func (e errBatchResults) Tx() pgx.Tx                       { return nil }

type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }
