package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/pgbouncer"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// SQLLatency is the sqllatency phase: with an idle worker (River client
// and publish-queue drainer, relay's default settings), one small analysis
// at a time published through relay_publish in a transaction of its own,
// and the time from the caller's COMMIT returning until its resolve_file
// job's first attempt started (river_job.attempted_at, which PostgreSQL
// sets from its clock when River fetches the job: the benchmark and the
// server share a host). Measured twice: connected to PostgreSQL, and with
// the caller and the worker behind PgBouncer in transaction mode (relay's
// database_pooler: transaction, so River polls instead of listening).
type SQLLatency struct {
	Direct    *LatencyRun `json:"direct"`
	PgBouncer *LatencyRun `json:"pgbouncer"`
}

// LatencyRun is one way of connecting's samples, in seconds.
type LatencyRun struct {
	Samples int `json:"samples"`
	// GapSeconds is the bound of the random pause (uniform in [0, gap))
	// before each publish, once the previous job completed: it spreads the
	// publishes over the phases of the drainer's and River's timers.
	GapSeconds float64 `json:"gap_seconds"`
	// PollOnly says River fetched on its poll interval (FetchPollInterval)
	// rather than on insert notifications.
	PollOnly bool    `json:"poll_only"`
	Min      float64 `json:"min_seconds"`
	P50      float64 `json:"p50_seconds"`
	P99      float64 `json:"p99_seconds"`
	Max      float64 `json:"max_seconds"`
}

// latencyPOIs is the size of each analysis the sqllatency phase publishes.
const latencyPOIs = 3

// sqlLatency is the sqllatency phase (see SQLLatency).
func (b *bench) sqlLatency(ctx context.Context, res *Result) error {
	l := &SQLLatency{}
	var err error
	b.progress("  connected to PostgreSQL: %d publishes", b.cfg.SQLLatencySamples)
	if l.Direct, err = b.latencyRun(ctx, b.url, b.pool, b.riverPool, worker.ConfigFrom(b.workerConfig())); err != nil {
		return err
	}
	b.progress("  direct: p50 %.3fs, p99 %.3fs, max %.3fs", l.Direct.P50, l.Direct.P99, l.Direct.Max)
	b.progress("  through PgBouncer (transaction mode): %d publishes", b.cfg.SQLLatencySamples)
	if l.PgBouncer, err = b.latencyBehindPgBouncer(ctx); err != nil {
		return err
	}
	b.progress("  PgBouncer: p50 %.3fs, p99 %.3fs, max %.3fs", l.PgBouncer.P50, l.PgBouncer.P99, l.PgBouncer.Max)
	res.SQLLatency = l
	return nil
}

// latencyBehindPgBouncer starts PgBouncer in front of the bench database's
// server and measures with relay configured for it (database_pooler:
// transaction): the worker's pools and the caller's connection go through
// it. The session settings relay cannot send through the pooler are made
// the role's defaults in the bench database first, as an operator does
// (docs/operations.md), and removed afterwards.
func (b *bench) latencyBehindPgBouncer(ctx context.Context) (_ *LatencyRun, err error) {
	cfg := b.workerConfig()
	cfg.DatabasePooler = config.PoolerTransaction
	opts := database.OptionsFromConfig(cfg, "bench")
	if err := database.SetSessionDefaults(ctx, b.url, opts); err != nil {
		return nil, err
	}
	defer func() {
		_, rerr := b.pool.Exec(context.WithoutCancel(ctx), "ALTER ROLE CURRENT_USER IN DATABASE "+pgx.Identifier{b.dbName}.Sanitize()+" RESET ALL")
		if rerr != nil && err == nil {
			err = fmt.Errorf("error removing the session defaults set for PgBouncer: %w", rerr)
		}
	}()
	bouncer, err := pgbouncer.Start(ctx, b.url)
	if err != nil {
		return nil, err
	}
	defer bouncer.Close()
	url := bouncer.URL(b.url)
	pool, err := database.Open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	riverPool, err := database.Open(ctx, url, database.RiverOptionsFromConfig(cfg, "bench"))
	if err != nil {
		return nil, err
	}
	defer riverPool.Close()
	return b.latencyRun(ctx, url, pool, riverPool, worker.ConfigFrom(cfg))
}

// latencyRun starts a worker on pool and riverPool with wcfg, then
// publishes SQLLatencySamples analyses one at a time from a caller
// connected to url, each after the previous one's job completed and a
// random pause, and returns the latencies. One publish before them, not
// counted, lets the worker settle (its first fetch, LISTEN).
func (b *bench) latencyRun(ctx context.Context, url string, pool, riverPool *pgxpool.Pool, wcfg *worker.Config) (*LatencyRun, error) {
	if err := b.resetSQL(ctx); err != nil {
		return nil, err
	}
	caller, err := b.callerConn(ctx, url, wcfg.TransactionPooler)
	if err != nil {
		return nil, err
	}
	defer caller.Close(context.WithoutCancel(ctx))
	wcfg.RiverPool = riverPool
	w, err := worker.New(pool, wcfg, b.cfg.Logger)
	if err != nil {
		return nil, err
	}
	events, unsubscribe := w.Client().Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer unsubscribe()
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = w.Stop(context.WithoutCancel(ctx)) }()

	n := b.cfg.SQLLatencySamples
	c := corpus{files: n + 1, poisPerFile: latencyPOIs}
	run := &LatencyRun{Samples: n, GapSeconds: b.cfg.SQLLatencyGap.Seconds(), PollOnly: wcfg.TransactionPooler}
	samples := make([]time.Duration, 0, n)
	lastLog := time.Now()
	for k := range n + 1 {
		if err := sleep(ctx, randomGap(b.cfg.SQLLatencyGap)); err != nil {
			return nil, err
		}
		a, err := c.analysis(k)
		if err != nil {
			return nil, err
		}
		d, err := publishAndWait(ctx, caller, events, a)
		if err != nil {
			return nil, err
		}
		if k > 0 {
			samples = append(samples, d)
		}
		if time.Since(lastLog) > 5*time.Second {
			b.progress("  %d of %d published and worked", k, n)
			lastLog = time.Now()
		}
	}
	if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	run.Min, run.P50, run.P99, run.Max = percentile(samples, 0), percentile(samples, 0.5), percentile(samples, 0.99), percentile(samples, 1)
	return run, nil
}

// publishAndWait publishes a through relay_publish in a transaction of its
// own on conn, waits for its job to complete, and returns the time from
// COMMIT returning until the job's first attempt.
func publishAndWait(ctx context.Context, conn *pgx.Conn, events <-chan *river.Event, a outbox.Analysis) (time.Duration, error) {
	data, err := json.Marshal(a)
	if err != nil {
		return 0, fmt.Errorf("error encoding analysis %q: %w", a.FileID, err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("error publishing %q: %w", a.FileID, err)
	}
	if _, err := tx.Exec(ctx, `SELECT relay_publish($1::jsonb)`, string(data)); err != nil {
		_ = tx.Rollback(ctx)
		return 0, fmt.Errorf("error publishing %q through relay_publish: %w", a.FileID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("error committing the publish of %q: %w", a.FileID, err)
	}
	// Wall clock only (Round(0) drops the monotonic reading): attempted_at
	// is PostgreSQL's clock, on this host.
	committed := time.Now().Round(0)
	timeout := time.After(time.Minute)
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-timeout:
			return 0, fmt.Errorf("the job of %q did not complete within a minute", a.FileID)
		case ev, ok := <-events:
			if !ok {
				return 0, errors.New("the River client's event subscription closed")
			}
			if ev.Job.Kind != outbox.KindResolveFile {
				continue
			}
			var args struct {
				FileID string `json:"fileId"`
			}
			if err := json.Unmarshal(ev.Job.EncodedArgs, &args); err != nil {
				return 0, fmt.Errorf("error decoding job %d's arguments: %w", ev.Job.ID, err)
			}
			if args.FileID != a.FileID {
				continue
			}
			if ev.Kind != river.EventKindJobCompleted || ev.Job.Attempt != 1 || ev.Job.AttemptedAt == nil {
				return 0, fmt.Errorf("the job of %q did not complete at its first attempt (event %s, attempt %d); run with --log-level debug",
					a.FileID, ev.Kind, ev.Job.Attempt)
			}
			return ev.Job.AttemptedAt.Sub(committed), nil
		}
	}
}

// randomGap is uniform in [0, gap).
func randomGap(gap time.Duration) time.Duration {
	if gap <= 0 {
		return 0
	}
	return rand.N(gap)
}

// sleep pauses for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
