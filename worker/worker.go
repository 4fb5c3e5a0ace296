// Package worker runs relay's POI work on a River client: the resolve_file
// jobs of package resolvefile, the link jobs of package link, the SQL
// publish API's drain beside them, and relay's own maintenance (the
// periodic sweep that captures discarded jobs into dead_lettered_items
// before River deletes them). New builds a Worker from a Config; Run works
// until told to stop, RunUntilIdle until no work is left.
//
// Work of other packages that a worker process carries on the same client
// (MapReduce's agents, for relay worker) comes in as an Extension: this
// package knows its queues and nothing else of it.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/relay-dev/relay/internal/liveness"
	"github.com/relay-dev/relay/internal/slotwait"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker/link"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// QueueMaintenance runs relay's own periodic jobs.
const QueueMaintenance = "relay_maintenance"

// Observer is told about every resolve_file batch and link round.
type Observer interface {
	resolvefile.Observer
	link.Observer
}

// Extension is work of another package that a Worker's River client
// carries beside relay's queues (relay worker's MapReduce agents).
type Extension interface {
	// Queues are the queues the extension's jobs go to, each with the
	// number of jobs a client works at once (at least 1).
	Queues() map[string]river.QueueConfig
	// AddWorkers registers the River workers of the extension's jobs; they
	// write with pool and log to logger.
	AddWorkers(workers *river.Workers, pool *pgxpool.Pool, logger *slog.Logger)
	// Sweep captures what the extension's discarded jobs left behind. It
	// runs with the worker's periodic sweep and when RunUntilIdle ends.
	Sweep(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error
}

// A Worker works relay's queues with one River client: the jobs of the
// queues its Config names, the SQL publish API's drain when it works the
// resolve queue, and its extensions' jobs. Start (or Run, or RunUntilIdle)
// and Stop are called from one goroutine; Running and ID from any.
type Worker struct {
	client     *river.Client[pgx.Tx]
	drain      *outbox.Drainer
	pool       *pgxpool.Pool
	logger     *slog.Logger
	extensions []Extension
	// work lists the worked queues whose jobs RunUntilIdle waits for:
	// every worked queue but QueueMaintenance.
	work []string
	// stopped is the client's Stopped channel once Start has returned.
	stopped   atomic.Pointer[<-chan struct{}]
	stopDrain func()
}

// New builds a Worker that works, with cfg, the queues cfg.Queues names
// (every one of relay's and its extensions' when empty): River's rescuer
// retries a killed worker's jobs after cfg.RescueStuckJobsAfter, and
// discarded jobs are kept for cfg.DiscardedJobRetention while a periodic
// sweep captures them into dead_lettered_items. Whoever works the resolve
// queue works the link queue its jobs feed, and drains the SQL publish
// API's queue. A queue cfg cannot run (a zero Concurrency for the resolve
// queue, say) is an error naming the Config field.
func New(pool *pgxpool.Pool, cfg *Config, logger *slog.Logger) (*Worker, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, resolvefile.NewWorker(pool, resolvefile.Config{
		POITimeout: cfg.POITimeout, JobTimeout: cfg.JobTimeout, Extract: cfg.Extract,
		ReprocessMaxAttempts: cfg.ReprocessMaxAttempts,
	}, logger, cfg.Observer))
	river.AddWorker(workers, link.NewWorker(pool, link.Config{Delay: cfg.LinkDelay}, logger, cfg.Observer))
	river.AddWorker(workers, &sweepDiscardedWorker{pool: pool, logger: logger, extensions: cfg.Extensions})
	all := map[string]river.QueueConfig{
		outbox.QueueResolve: {MaxWorkers: cfg.Concurrency},
		link.QueueLink:      {MaxWorkers: link.Workers()},
		QueueMaintenance:    {MaxWorkers: 1},
	}
	for _, ext := range cfg.Extensions {
		ext.AddWorkers(workers, pool, logger)
		for name, qc := range ext.Queues() {
			if _, taken := all[name]; taken {
				return nil, fmt.Errorf("error creating worker: queue %q is worked twice", name)
			}
			all[name] = qc
		}
	}
	queues, err := cfg.worked(all)
	if err != nil {
		return nil, fmt.Errorf("error creating worker: %w", err)
	}
	var periodic []*river.PeriodicJob
	if _, ok := queues[QueueMaintenance]; ok {
		periodic = []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(cfg.SweepInterval),
			func() (river.JobArgs, *river.InsertOpts) { return SweepDiscardedArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true, ID: "sweep_discarded"})}
	}
	riverPool := pool
	if cfg.RiverPool != nil {
		riverPool = cfg.RiverPool
	}
	client, err := river.NewClient(riverpgxv5.New(riverPool), &river.Config{
		ID:                          cfg.ID,
		Logger:                      riverLogger(logger),
		Schema:                      cfg.Schema,
		Workers:                     workers,
		Queues:                      queues,
		JobTimeout:                  cfg.JobTimeout,
		MaxAttempts:                 cfg.MaxAttempts,
		RescueStuckJobsAfter:        cfg.RescueStuckJobsAfter,
		DiscardedJobRetentionPeriod: cfg.DiscardedJobRetention,
		SoftStopTimeout:             cfg.ShutdownTimeout,
		FetchCooldown:               cfg.FetchCooldown,
		FetchPollInterval:           cfg.FetchPollInterval,
		PeriodicJobs:                periodic,
		ReindexerIndexNames:         ReindexerIndexNames(),
		// LISTEN needs a session of its own, which a transaction pooler
		// does not give: River then fetches every FetchPollInterval.
		PollOnly: cfg.TransactionPooler,
	})
	if err != nil {
		return nil, fmt.Errorf("error creating River client: %w", err)
	}
	w := &Worker{client: client, pool: pool, logger: logger, extensions: cfg.Extensions, stopDrain: func() {}}
	for name := range queues {
		if name != QueueMaintenance {
			w.work = append(w.work, name)
		}
	}
	slices.Sort(w.work)
	if _, ok := queues[outbox.QueueResolve]; ok {
		w.drain = outbox.NewDrainer(pool, outbox.New(client, &cfg.Publish, logger),
			outbox.DrainConfig{Interval: cfg.PublishQueueInterval, Loops: cfg.DrainLoops}, logger)
	}
	return w, nil
}

// droppedRiverIndex is the River index migration 00007 drops: the GIN
// index on river_job.args, which every resolve_file job's batch of POIs
// made expensive to maintain and nothing in relay reads.
const droppedRiverIndex = "river_job_args_index"

// ReindexerIndexNames is the set of indexes River's reindexer rebuilds for
// relay: River's default without the index relay drops, which River would
// otherwise warn about every run.
func ReindexerIndexNames() []string {
	return slices.DeleteFunc(river.ReindexerIndexNamesDefault(), func(n string) bool { return n == droppedRiverIndex })
}

// NewInsertClient builds an insert-only River client (no queues worked), as
// the publisher and the CLI's write commands need. Of cfg it uses Schema
// and TransactionPooler.
func NewInsertClient(pool *pgxpool.Pool, cfg *Config, logger *slog.Logger) (*river.Client[pgx.Tx], error) {
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: logger, Schema: cfg.Schema,
		PollOnly: cfg.TransactionPooler})
	if err != nil {
		return nil, fmt.Errorf("error creating River client: %w", err)
	}
	return client, nil
}

// ID is the worker's River client id, which names it in River's jobs
// (attempted_by) and in relay_workers.
func (w *Worker) ID() string { return w.client.ID() }

// Client is the worker's River client, for inserting jobs with it
// (outbox.New) or subscribing to its events. Start and stop the Worker,
// not the client.
func (w *Worker) Client() *river.Client[pgx.Tx] { return w.client }

// Start starts the River client, waiting while the server refuses its
// first connection for want of a free slot (slotwait.Wait;
// TestRunUntilIdle_WaitsForAFreeSlotToStartRiver), and the drain beside
// it. Jobs do not inherit ctx: cancelling it does not cancel in-flight
// batches; Stop does, after its grace.
func (w *Worker) Start(ctx context.Context) error {
	err := slotwait.Wait(ctx, 0, w.logger, "River's client", func() error {
		return w.client.Start(context.WithoutCancel(ctx))
	})
	if err != nil {
		return fmt.Errorf("error starting River client: %w", err)
	}
	stopped := w.client.Stopped()
	w.stopped.Store(&stopped)
	w.stopDrain = startDrain(ctx, w.drain)
	return nil
}

// Stop stops the drain, which finishes or rolls back the drain in
// progress (its analyses are published or still queued), then the client
// gracefully: no new fetches, and in-flight jobs get Config.ShutdownTimeout
// to finish before their contexts are cancelled (a cancelled batch rolls
// back and is retried later).
func (w *Worker) Stop(ctx context.Context) error {
	w.stopDrain()
	if err := w.client.Stop(ctx); err != nil {
		return fmt.Errorf("error stopping River client: %w", err)
	}
	return nil
}

// Running reports whether the worker has started and not yet stopped. It is
// safe to call from any goroutine, which River's Client.Stopped is not while
// Start runs.
func (w *Worker) Running() bool {
	p := w.stopped.Load()
	if p == nil {
		return false
	}
	select {
	case <-*p:
		return false
	default:
		return true
	}
}

// Run starts the worker and works until ctx ends (SIGINT/SIGTERM), then
// stops gracefully (Stop). When ctx ends because the worker's heartbeat
// lease was lost (liveness.ErrLeaseLost), it stops at once instead,
// cancelling in-flight jobs: other workers may already be retrying them.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	if errors.Is(context.Cause(ctx), liveness.ErrLeaseLost) {
		w.stopDrain()
		w.logger.Error("stopping at once: cancelling in-flight batches", slog.String("error", context.Cause(ctx).Error()))
		if err := w.client.StopAndCancel(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("error stopping River client: %w", err)
		}
		return nil
	}
	w.logger.Info("stopping: finishing in-flight batches")
	if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	w.logger.Info("worker stopped")
	return nil
}

// RunUntilIdle starts the worker and stops it once its queues are idle: no
// job of a queue it works (QueueMaintenance aside) available, running or due
// within IdleGrace, and, when it drains, no analysis queued by the SQL
// publish API. progress (may be nil) is told the queues' state as it goes
// (see WaitIdle for how often). Then it captures any discarded jobs (the
// sweep, its extensions' included). It returns early, with ctx's error, if
// ctx ends first.
func (w *Worker) RunUntilIdle(ctx context.Context, progress func(Progress)) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	err := waitIdle(ctx, w.pool, progress, w.work, w.drain != nil)
	if err != nil {
		_ = w.Stop(context.WithoutCancel(ctx))
		return err
	}
	if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return sweepDiscarded(ctx, w.pool, w.logger, w.extensions)
}

// startDrain runs drain (none when nil) until the returned function is
// called, which returns once drain has stopped: a drain in progress
// finishes or rolls back, so its analyses are published or still queued.
// Calling the function again does nothing.
func startDrain(ctx context.Context, drain *outbox.Drainer) (stop func()) {
	if drain == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = drain.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
