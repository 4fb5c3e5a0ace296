// Package worker runs relay's River client: the queues it works (the
// resolve_file jobs of package resolvefile, MapReduce items, relay's own
// maintenance), the settings it runs with (Config), running until idle or
// until told to stop, and the periodic sweep that captures discarded jobs
// into dead_lettered_items before River deletes them.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/internal/liveness"
	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/internal/slotwait"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker/link"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// QueueMaintenance runs relay's own periodic jobs.
const QueueMaintenance = "relay_maintenance"

// Options are the parts of a worker that do not come from relay's
// configuration.
type Options struct {
	// Extract overrides the resolver (tests).
	Extract resolvefile.ExtractFunc
	// Observer is told about each batch and link round (metrics); may be
	// nil.
	Observer Observer
	// Queues lists the queues to work: outbox.QueueResolve (with
	// link.QueueLink, the linker its jobs feed), mapreduce.Queue and
	// QueueMaintenance. Empty means all. The
	// periodic dead-letter sweep is scheduled only with QueueMaintenance.
	Queues []string
	// MapReduce tunes the MapReduce worker; nil takes cfg's
	// MapReduceWorkdir and AgentUser (agent_env's values come from the
	// caller's environment: relay worker passes them here).
	MapReduce *mapreduce.WorkerConfig
	// RiverPool, when set, runs River's own statements (fetching jobs,
	// completing them after they ran, maintenance), typically with
	// synchronous_commit off (database.RiverOptionsFromConfig). Batches
	// and everything else relay writes use the pool given to NewClient.
	RiverPool *pgxpool.Pool
}

// Observer is told about every resolve_file batch and link round.
type Observer interface {
	resolvefile.Observer
	link.Observer
}

// NewClient builds the River client that works relay's queues with cfg:
// River's rescuer retries a killed worker's jobs after
// cfg.RescueStuckJobsAfter (River's default is an hour), and discarded jobs
// are kept for cfg.DiscardedJobRetention while a periodic sweep captures
// them into dead_lettered_items.
func NewClient(pool *pgxpool.Pool, cfg *Config, logger *slog.Logger, opts *Options) (*river.Client[pgx.Tx], error) {
	if opts == nil {
		opts = &Options{}
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, resolvefile.NewWorker(pool, resolvefile.Config{
		POITimeout: cfg.POITimeout, JobTimeout: cfg.JobTimeout, Extract: opts.Extract,
		ReprocessMaxAttempts: cfg.ReprocessMaxAttempts,
	}, logger, opts.Observer))
	river.AddWorker(workers, link.NewWorker(pool, link.Config{Delay: cfg.LinkDelay}, logger, opts.Observer))
	mrCfg := mapreduce.WorkerConfig{Workdir: cfg.MapReduceWorkdir}
	if opts.MapReduce != nil {
		mrCfg = *opts.MapReduce
	} else if cfg.AgentUser != "" {
		u, err := agent.LookupUser(cfg.AgentUser)
		if err != nil {
			return nil, fmt.Errorf("error creating River client: %w", err)
		}
		mrCfg.User = u
	}
	river.AddWorker(workers, mapreduce.NewItemWorker(pool, mrCfg, logger))
	river.AddWorker(workers, &SweepDiscardedWorker{pool: pool, logger: logger})

	all := map[string]river.QueueConfig{
		outbox.QueueResolve: {MaxWorkers: cfg.Concurrency},
		link.QueueLink:      {MaxWorkers: link.Workers()},
		mapreduce.Queue:     {MaxWorkers: cfg.MapReduceParallel},
		QueueMaintenance:    {MaxWorkers: 1},
	}
	queues := all
	if len(opts.Queues) > 0 {
		queues = map[string]river.QueueConfig{}
		for _, q := range opts.Queues {
			qc, ok := all[q]
			if !ok {
				return nil, fmt.Errorf("error creating River client: unknown queue %q", q)
			}
			queues[q] = qc
			if q == outbox.QueueResolve {
				// Whoever works resolve_file jobs works the linker they feed.
				queues[link.QueueLink] = all[link.QueueLink]
			}
		}
	}
	if err := cfg.validate(queues); err != nil {
		return nil, fmt.Errorf("error creating River client: %w", err)
	}
	var periodic []*river.PeriodicJob
	if _, ok := queues[QueueMaintenance]; ok {
		periodic = []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(cfg.SweepInterval),
			func() (river.JobArgs, *river.InsertOpts) { return SweepDiscardedArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true, ID: "sweep_discarded"})}
	}

	riverPool := pool
	if opts.RiverPool != nil {
		riverPool = opts.RiverPool
	}
	client, err := river.NewClient(riverpgxv5.New(riverPool), &river.Config{
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
	return client, nil
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

// IdleGrace is how far ahead RunUntilIdle looks for retries: a job due to be
// retried within it still counts as work.
const IdleGrace = 10 * time.Second

// NewDrainer returns the Drainer that publishes, with client inserting
// the jobs, the analyses the SQL publish API queued: every process that
// works the resolve queue runs one (Run, RunUntilIdle). Of cfg it uses
// PublishQueueInterval and Publish.
func NewDrainer(pool *pgxpool.Pool, client *river.Client[pgx.Tx], cfg *Config, logger *slog.Logger) *outbox.Drainer {
	return outbox.NewDrainer(pool, outbox.New(client, &cfg.Publish, logger), outbox.DrainConfig{Interval: cfg.PublishQueueInterval}, logger)
}

// RunUntilIdle starts client, and drain (NewDrainer) beside it, and stops
// both once no analysis is queued and the resolve and MapReduce queues are
// idle (WaitIdle; with drain nil, as for a process that works only the
// MapReduce queue, queued analyses are not waited for); then it captures any discarded batches and MapReduce
// items. It returns early, with ctx's error, if ctx ends first. It records
// its client's state in state (none when nil).
func RunUntilIdle(ctx context.Context, client *river.Client[pgx.Tx], drain *outbox.Drainer, state *ClientState, pool *pgxpool.Pool, logger *slog.Logger, progress func(Progress)) error {
	// Jobs must not inherit ctx: cancelling it (SIGTERM) starts a graceful
	// stop below instead of cancelling in-flight batches at once.
	if err := startClient(ctx, client, logger); err != nil {
		return fmt.Errorf("error starting River client: %w", err)
	}
	state.started(client.Stopped())
	stopDrain := startDrain(ctx, drain)
	err := waitIdle(ctx, pool, progress, drain != nil)
	stopDrain()
	if err != nil {
		_ = client.Stop(context.WithoutCancel(ctx))
		return err
	}
	if err := client.Stop(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("error stopping River client: %w", err)
	}
	return sweepDiscarded(ctx, pool, logger)
}

// startClient starts client, waiting while the server refuses its first
// connection for want of a free slot (slotwait.Wait;
// TestRunUntilIdle_WaitsForAFreeSlotToStartRiver). Jobs must not
// inherit ctx: cancelling it (SIGTERM) starts a graceful stop instead of
// cancelling in-flight batches at once.
func startClient(ctx context.Context, client *river.Client[pgx.Tx], logger *slog.Logger) error {
	return slotwait.Wait(ctx, 0, logger, "River's client", func() error {
		return client.Start(context.WithoutCancel(ctx))
	})
}

// startDrain runs drain (none when nil) until the returned function is
// called, which returns once drain has stopped: a drain in progress
// finishes or rolls back, so its analyses are published or still queued.
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

// WaitIdle waits, while a River client and a Drainer work them, until no
// analysis is queued by the SQL publish API and the resolve and MapReduce
// queues have no job available or running and none due within IdleGrace, reporting the queues' state to progress (may be nil) as it
// goes. It reads the queues every 250ms, and every 10ms once at most
// nearlyIdle jobs are pending, so that it returns within milliseconds of
// the last job finishing (relay-bench times runs with it; River's
// completion events come in batches, up to a few hundred milliseconds
// late). It reads them over one connection of pool that it holds until it
// returns, so that a pool with no connection to give (every one busy with
// a batch, and the server refusing new ones) neither ends the wait with an
// error nor stalls it (TestWaitIdle_ReadsTheQueuesWhileThePoolCannotConnect).
func WaitIdle(ctx context.Context, pool *pgxpool.Pool, progress func(Progress)) error {
	return waitIdle(ctx, pool, progress, true)
}

// waitIdle is WaitIdle, counting queued analyses as work only if queued.
func waitIdle(ctx context.Context, pool *pgxpool.Pool, progress func(Progress), queued bool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error taking a connection to read the queues: %w", err)
	}
	defer conn.Release()
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait.C:
		}
		p, err := QueueProgress(ctx, conn)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(p)
		}
		pending := p.Pending + p.MapReduce.Pending
		if queued {
			pending += p.Queued
		}
		if pending == 0 {
			return nil
		}
		if pending <= nearlyIdle {
			wait.Reset(10 * time.Millisecond)
		} else {
			wait.Reset(250 * time.Millisecond)
		}
	}
}

// nearlyIdle is the pending job count below which WaitIdle reads the
// queues every 10ms.
const nearlyIdle = 32

// Progress is the state of the resolve queue, and of the MapReduce queue
// in MapReduce.
type Progress struct {
	// Queued counts analyses queued by the SQL publish API, not yet
	// published.
	Queued int64
	// Pending counts resolve_file and link jobs available, running, or due
	// within IdleGrace: none left means the relationships are final.
	Pending int64
	// Completed and Discarded count finished jobs still in River's table.
	Completed int64
	Discarded int64
	// MapReduce is the same for the MapReduce queue.
	MapReduce MapReduceQueueProgress
}

// MapReduceQueueProgress is the state of the MapReduce queue. Dead-lettered
// items end cancelled; discarded ones wait for the sweep.
type MapReduceQueueProgress struct {
	Pending   int64
	Completed int64
	Cancelled int64
	Discarded int64
}

// QueueProgress reads the resolve and MapReduce queues' state through q (a
// pool or a connection).
func QueueProgress(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (Progress, error) {
	var p Progress
	err := q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE queue IN ($1, $4) AND (state IN ('available', 'running')
		                          OR (state IN ('retryable', 'scheduled') AND scheduled_at < now() + make_interval(secs => $2)))),
		       count(*) FILTER (WHERE queue = $1 AND state = 'completed'),
		       count(*) FILTER (WHERE queue = $1 AND state = 'discarded'),
		       count(*) FILTER (WHERE queue = $3 AND (state IN ('available', 'running')
		                          OR (state IN ('retryable', 'scheduled') AND scheduled_at < now() + make_interval(secs => $2)))),
		       count(*) FILTER (WHERE queue = $3 AND state = 'completed'),
		       count(*) FILTER (WHERE queue = $3 AND state = 'cancelled'),
		       count(*) FILTER (WHERE queue = $3 AND state = 'discarded'),
		       -- In the same snapshot as the jobs: a drain deletes queued
		       -- rows and inserts their jobs in one transaction.
		       (SELECT count(*) FROM publish_queue)
		FROM river_job WHERE queue IN ($1, $3, $4)`, outbox.QueueResolve, IdleGrace.Seconds(), mapreduce.Queue, link.QueueLink).Scan(
		&p.Pending, &p.Completed, &p.Discarded,
		&p.MapReduce.Pending, &p.MapReduce.Completed, &p.MapReduce.Cancelled, &p.MapReduce.Discarded, &p.Queued)
	if err != nil {
		return p, fmt.Errorf("error reading queue progress: %w", err)
	}
	return p, nil
}

// Run starts client, and drain (NewDrainer; none when nil) beside it, and
// works until ctx ends (SIGINT/SIGTERM), then stops gracefully: the drain
// first, then the client: no new fetches, in-flight batches get the client's soft stop
// timeout to finish before their contexts are cancelled.
//
// Run records its client's state in state (none when nil) for readers on
// other goroutines, such as a health check.
func Run(ctx context.Context, client *river.Client[pgx.Tx], drain *outbox.Drainer, state *ClientState, logger *slog.Logger) error {
	if err := startClient(ctx, client, logger); err != nil {
		return fmt.Errorf("error starting River client: %w", err)
	}
	state.started(client.Stopped())
	stopDrain := startDrain(ctx, drain)
	<-ctx.Done()
	stopDrain()
	if errors.Is(context.Cause(ctx), liveness.ErrLeaseLost) {
		logger.Error("stopping at once: cancelling in-flight batches", slog.String("error", context.Cause(ctx).Error()))
		if err := client.StopAndCancel(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("error stopping River client: %w", err)
		}
		return nil
	}
	logger.Info("stopping: finishing in-flight batches")
	if err := client.Stop(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("error stopping River client: %w", err)
	}
	logger.Info("worker stopped")
	return nil
}

// ClientState tells whether a client that Run started is working: from the
// end of its Start until it has stopped. It is safe for concurrent use, which
// River's Client.Stopped is not while Start runs. The zero value reports a
// client not started yet.
type ClientState struct {
	stopped atomic.Pointer[<-chan struct{}]
}

func (s *ClientState) started(stopped <-chan struct{}) {
	if s != nil {
		s.stopped.Store(&stopped)
	}
}

// Running reports whether the client has started and not yet stopped.
func (s *ClientState) Running() bool {
	p := s.stopped.Load()
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
