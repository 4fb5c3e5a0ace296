// Package liveness announces relay's worker processes (one River client
// each) in relay_workers and returns the running jobs of those that are gone
// to the queue within seconds, instead of after River's rescuer window.
package liveness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ReturnedMessage begins the error entry of an attempt whose worker was gone
// and whose job Liveness returned to the queue.
const ReturnedMessage = "returned to the queue: its worker stopped renewing its heartbeat"

// Liveness announces one worker process (one River client) in
// relay_workers and returns the running jobs of workers that are gone to the
// queue, so that a killed worker's batches run again within seconds rather
// than after River's rescuer window (rescue_stuck_jobs_after, which must
// exceed the longest job).
//
// Guarantees:
//   - A worker is gone when its heartbeat is older than Timeout by the
//     database's clock. The first live worker to see that deletes its row
//     and, in the same statement, makes its running jobs available again
//     (or discards those out of attempts), each with an error entry naming
//     the worker: exactly once, however many workers look.
//   - The heartbeat does not depend on the pool having a connection to
//     give: Run renews it, and looks for gone workers, over the connection
//     Announce took, held for as long as Run runs (another is taken when
//     it breaks). A live
//     worker whose pooled connections are all busy, or whose pool cannot
//     open a new one because the server refuses it (max_connections
//     reached by other clients), keeps its lease
//     (TestLiveness_RunRenewsItsHeartbeatWhileThePoolIsExhausted).
//   - A worker that cannot renew its heartbeat for Timeout minus one
//     Interval (by its own clock) may already be declared gone: Run
//     returns ErrLeaseLost, and the caller stops working at once. A batch
//     whose job was returned meanwhile cannot commit: its completion, in
//     its own transaction, finds the job no longer its attempt (the
//     workers check what River's JobCompleteTx returns).
//   - River's time-based rescuer stays as the last resort for clients that
//     do not announce themselves.
type Liveness struct {
	Pool     *pgxpool.Pool
	ClientID string // the River client's id (river.Config.ID)
	Interval time.Duration
	Timeout  time.Duration
	Logger   *slog.Logger

	conn *pgxpool.Conn // Announce's, which Run holds on to
}

// ErrLeaseLost is returned by Liveness.Run when the worker could not renew
// its heartbeat in time: other workers may have returned its jobs.
var ErrLeaseLost = errors.New("worker heartbeat not renewed in time: other workers may have returned its running jobs to the queue")

// Announce inserts the worker's row, over a connection of the pool that
// it keeps for Run's heartbeat. Call it before the River client starts, so
// that no job of the client runs unannounced, and call Run after it.
func (l *Liveness) Announce(ctx context.Context) error {
	host, _ := os.Hostname()
	conn, err := l.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error announcing worker %s: %w", l.ClientID, err)
	}
	if _, err := conn.Exec(ctx, `
		INSERT INTO relay_workers (client_id, host, pid) VALUES ($1, $2, $3)
		ON CONFLICT (client_id) DO UPDATE SET heartbeat_at = now()`, l.ClientID, host, os.Getpid()); err != nil {
		conn.Release()
		return fmt.Errorf("error announcing worker %s: %w", l.ClientID, err)
	}
	if l.conn != nil {
		l.conn.Release()
	}
	l.conn = conn
	return nil
}

// Run renews the announced worker's heartbeat and returns gone workers'
// jobs every Interval until ctx ends (it then removes the worker's row and
// returns nil) or the lease is lost (ErrLeaseLost). It does both over one
// connection of the pool that it holds until it returns (Announce's, or
// another taken when that one breaks), so that a pool with no connection
// to give cannot stop the heartbeat.
func (l *Liveness) Run(ctx context.Context) error {
	conn := l.conn // held between beats; nil after it failed, until another is taken
	l.conn = nil
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		var err error
		if conn != nil {
			_, err = conn.Exec(ctx, deleteWorker, l.ClientID)
			conn.Release()
		} else {
			_, err = l.Pool.Exec(ctx, deleteWorker, l.ClientID)
		}
		if err != nil {
			l.Logger.WarnContext(ctx, "error removing worker's heartbeat", slog.String("client_id", l.ClientID),
				slog.String("error", err.Error()))
		}
	}()
	renewed := time.Now()
	tick := time.NewTicker(l.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		var ok bool
		var err error
		if conn == nil {
			conn, err = l.Pool.Acquire(ctx)
		}
		if err == nil {
			ok, err = l.beat(ctx, conn)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			l.Logger.WarnContext(ctx, "error renewing worker heartbeat", slog.String("error", err.Error()))
		case !ok:
			return fmt.Errorf("%w (worker %s was declared gone)", ErrLeaseLost, l.ClientID)
		default:
			renewed = time.Now()
		}
		if time.Since(renewed) > l.Timeout-l.Interval {
			return fmt.Errorf("%w (last renewed %s ago)", ErrLeaseLost, time.Since(renewed).Round(time.Millisecond))
		}
		if err == nil {
			_, err = l.rescueGone(ctx, conn)
			if err != nil && ctx.Err() == nil {
				l.Logger.WarnContext(ctx, "error returning gone workers' jobs", slog.String("error", err.Error()))
			}
		}
		if err != nil && conn != nil {
			// A broken connection is closed on release; the next beat
			// takes another.
			conn.Release()
			conn = nil
		}
	}
}

const deleteWorker = `DELETE FROM relay_workers WHERE client_id = $1`

// querier is what the heartbeat's statements run on: the pool, or the
// connection Run holds.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// beat renews the heartbeat; false means the row is gone (declared dead).
func (l *Liveness) beat(ctx context.Context, q querier) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE relay_workers SET heartbeat_at = now() WHERE client_id = $1`, l.ClientID)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// Rescued is what one RescueGone did.
type Rescued struct {
	Workers int // workers found gone
	Jobs    int // their running jobs returned to the queue (or discarded, out of attempts)
}

// RescueGone deletes the workers whose heartbeat is older than Timeout and
// returns their running jobs to the queue, in one statement.
func (l *Liveness) RescueGone(ctx context.Context) (Rescued, error) {
	return l.rescueGone(ctx, l.Pool)
}

func (l *Liveness) rescueGone(ctx context.Context, q querier) (Rescued, error) {
	var r Rescued
	err := q.QueryRow(ctx, `
		WITH gone AS (
			DELETE FROM relay_workers WHERE heartbeat_at < now() - make_interval(secs => $1)
			RETURNING client_id, host, pid),
		returned AS (
			UPDATE river_job j SET
				state = CASE WHEN j.attempt >= j.max_attempts THEN 'discarded'::river_job_state ELSE 'available'::river_job_state END,
				finalized_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
				scheduled_at = now(),
				errors = array_append(j.errors, jsonb_build_object(
					'at', now(), 'attempt', j.attempt, 'trace', '',
					'error', format('%s (worker %s, host %s, pid %s)', $2::text, g.client_id, g.host, g.pid)))
			FROM gone g
			WHERE j.state = 'running' AND j.attempted_by[cardinality(j.attempted_by)] = g.client_id
			RETURNING j.id)
		SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM returned)`, l.Timeout.Seconds(), ReturnedMessage).Scan(&r.Workers, &r.Jobs)
	if err != nil {
		return r, fmt.Errorf("error returning gone workers' jobs: %w", err)
	}
	if r.Workers > 0 {
		l.Logger.WarnContext(ctx, "workers stopped renewing their heartbeat: their running jobs are back in the queue",
			slog.Int("workers", r.Workers), slog.Int("jobs", r.Jobs))
	}
	return r, nil
}

// LiveWorker is one row of relay_workers, as `relay status` shows it.
type LiveWorker struct {
	ClientID       string    `json:"client_id"`
	Host           string    `json:"host"`
	PID            int       `json:"pid"`
	Since          time.Time `json:"since"`
	Heartbeat      time.Time `json:"heartbeat_at"`
	BatchesRunning int       `json:"batches_running"`
}

// LiveWorkers lists the workers whose heartbeat is within timeout, oldest
// first, with how many jobs each is running.
func LiveWorkers(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) ([]LiveWorker, error) {
	rows, err := pool.Query(ctx, `
		SELECT w.client_id, w.host, w.pid, w.started_at, w.heartbeat_at,
		       (SELECT count(*) FROM river_job j WHERE j.state = 'running'
		          AND j.attempted_by[cardinality(j.attempted_by)] = w.client_id)::int
		FROM relay_workers w
		WHERE w.heartbeat_at >= now() - make_interval(secs => $1)
		ORDER BY w.started_at, w.client_id`, timeout.Seconds())
	if err != nil {
		return nil, fmt.Errorf("error listing live workers: %w", err)
	}
	defer rows.Close()
	out := []LiveWorker{}
	for rows.Next() {
		var w LiveWorker
		if err := rows.Scan(&w.ClientID, &w.Host, &w.PID, &w.Since, &w.Heartbeat, &w.BatchesRunning); err != nil {
			return nil, fmt.Errorf("error listing live workers: %w", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error listing live workers: %w", err)
	}
	return out, nil
}
