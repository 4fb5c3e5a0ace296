package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/internal/console"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/liveness"
	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/internal/ops"
	"github.com/relay-dev/relay/internal/slotwait"
	"github.com/relay-dev/relay/migrations"
	"github.com/relay-dev/relay/worker"
)

func newWorkerCmd(a *app) *cobra.Command {
	var untilIdle bool
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Work resolve_file batches until stopped (SIGINT/SIGTERM), or until idle",
		Long: `Worker runs a River client that works resolve_file batches.

On SIGINT or SIGTERM it stops fetching, lets in-flight batches finish for up
to --shutdown-timeout, cancels (and so rolls back) any still running, and
exits 0; cancelled batches are retried by the next worker. While it runs it
renews a heartbeat in relay_workers every --worker-heartbeat-interval and
returns the running batches of workers whose heartbeat is older than
--worker-heartbeat-timeout (killed) to the queue; if it cannot renew its own
in time it stops at once and exits 1. With --until-idle
it exits 0 once no batch is available or running and none is due for a retry
within ` + worker.IdleGrace.String() + ` (batch mode for scripts and tests).

With --http-addr (e.g. 127.0.0.1:9090) it serves /healthz (process alive),
/readyz (database, migrations, River; "degraded" past the dead-letter
thresholds) and /metrics (Prometheus); with --worker-console also the web
console under /ui/ (see relay ui). See docs/operations.md. An address
that is not host:port with a valid port is a usage error (exit 2).

It also runs MapReduce agents, giving them the variables of its agent_env
(a NAME missing from its environment is a usage error at start) and, when
it runs as root, running them as agent_user. As root without agent_user it
starts, but fails every MapReduce item it takes without running the agent
(see 'relay mapreduce run --help'); it warns about this at start when
MapReduce items are queued or agent_env or mapreduce_workdir is set.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.cfg.WorkerConsole {
				if err := console.CheckAddr(a.cfg.HTTPAddr, uiAuth(a.cfg)); err != nil {
					return usageError{fmt.Errorf("worker_console: %w", err)}
				}
			}
			ctx := cmd.Context()
			agents, err := resolveAgents(a)
			if err != nil {
				return err
			}
			runAsErr := agent.CheckRunAs(agents.user)
			if runAsErr != nil && !errors.Is(runAsErr, agent.ErrRunsAsRoot) {
				return usageError{runAsErr}
			}
			worker.SetGCPercent(worker.ConfigFrom(a.cfg), a.logger)
			pool, err := a.open(ctx, "worker")
			if err != nil {
				return err
			}
			defer pool.Close()
			if runAsErr != nil {
				// The worker resolves files too: it starts, and the
				// MapReduce items it takes fail saying why. It says so
				// now only when MapReduce is configured or queued.
				queued, qerr := mapreduce.HasQueuedItems(ctx, pool)
				if len(a.cfg.AgentEnv) > 0 || a.cfg.MapReduceWorkdir != "" || queued || qerr != nil {
					a.logger.WarnContext(ctx, "MapReduce items this worker takes fail without running their agent: "+runAsErr.Error())
				}
			}
			riverOpts := database.RiverOptionsFromConfig(a.cfg, "worker")
			riverOpts.Logger = a.logger
			riverPool, err := database.Open(ctx, a.cfg.DatabaseURL, riverOpts)
			if err != nil {
				return err
			}
			defer riverPool.Close()
			if !database.RiverSynchronousCommitApplied(a.cfg) {
				a.logger.WarnContext(ctx, "river_synchronous_commit is not applied behind a transaction pooler: "+
					"River's statements commit with the server's synchronous_commit",
					slog.String("river_synchronous_commit", a.cfg.RiverSynchronousCommit))
			}
			wcfg := worker.ConfigFrom(a.cfg)
			wcfg.RiverPool = riverPool
			wcfg.Extensions = []worker.Extension{mapreduce.NewAgents(agents.workerConfig(a.cfg.MapReduceParallel))}
			var metrics *ops.Metrics
			if a.cfg.HTTPAddr != "" {
				metrics = ops.NewMetrics(pool, a.cfg.MetricsRefresh, a.logger)
				wcfg.Observer = metrics
			}
			w, err := worker.New(pool, wcfg, a.logger)
			if err != nil {
				return err
			}
			if a.cfg.HTTPAddr != "" {
				health := ops.NewHealth(ops.HealthConfig{
					Pool:     pool,
					Redactor: a.redactor,
					MigrationsPending: func(ctx context.Context) (bool, error) {
						m, err := migrations.New(pool, a.cfg.DatabaseSchema, a.logger)
						if err != nil {
							return false, err
						}
						defer m.Close()
						return m.Pending(ctx)
					},
					RiverRunning:         w.Running,
					MaxNewFailedPOIs:     int64(a.cfg.HealthMaxNewFailedPOIs),
					MaxDeadLetteredItems: int64(a.cfg.HealthMaxDeadLetteredItems),
					Metrics:              metrics,
					Logger:               a.logger,
				})
				// The server stops when the command returns (--until-idle
				// returns without ctx ending), before the pools close.
				serveCtx, stopServing := context.WithCancel(ctx)
				srv := &ops.Server{Handler: health.Handler(), Logger: a.logger}
				endpoints := "/healthz /readyz /metrics"
				if a.cfg.WorkerConsole {
					h, err := mountConsole(serveCtx, a, pool, srv.Handler)
					if err != nil {
						stopServing()
						return err
					}
					srv.Handler, srv.BodyPrefix = h, workerConsolePrefix+"/"
					endpoints += " " + workerConsolePrefix + "/"
					srv.Endpoints = endpoints
				}
				addr, served, err := srv.Serve(serveCtx, a.cfg.HTTPAddr)
				if err != nil {
					stopServing()
					return err
				}
				defer func() {
					stopServing()
					if err := <-served; err != nil {
						a.logger.WarnContext(ctx, "health and metrics server", slog.String("error", err.Error()))
					}
				}()
				fmt.Fprintf(a.env.Stderr, "relay worker: serving %s on http://%s\n", endpoints, addr)
			}
			start := time.Now()
			if untilIdle {
				since, err := worker.DatabaseNow(ctx, pool)
				if err != nil {
					return err
				}
				err = a.announced(ctx, pool, w.ID(), func(ctx context.Context) error {
					return w.RunUntilIdle(ctx, nil)
				})
				if errors.Is(err, liveness.ErrLeaseLost) || (err != nil && ctx.Err() == nil) {
					return err
				}
				s, serr := worker.SummarizeRun(context.WithoutCancel(ctx), pool, w.ID(), since)
				if serr != nil {
					a.logger.WarnContext(ctx, "no summary", slog.String("error", serr.Error()))
					return nil
				}
				fmt.Fprintf(a.out(), "relay worker: idle after %s (this run: %d batches completed, %d discarded)\n",
					time.Since(start).Round(time.Millisecond), s.Completed, s.Discarded)
				return nil
			}
			a.logger.InfoContext(ctx, "worker started", slog.Int("concurrency", a.cfg.WorkerConcurrency),
				slog.Duration("rescue_stuck_jobs_after", a.cfg.RescueStuckJobsAfter))
			return a.announced(ctx, pool, w.ID(), func(ctx context.Context) error {
				return w.Run(ctx)
			})
		},
	}
	cmd.Flags().BoolVar(&untilIdle, "until-idle", false, "exit once no batch is available or running")
	return cmd
}

// announced runs run (which starts and stops the worker whose River client
// is clientID) with the process announced in relay_workers
// (liveness.Liveness) for as long as run lasts, its client's soft stop
// included. When the heartbeat cannot be renewed in time, run's context
// ends with liveness.ErrLeaseLost as its cause (worker.Worker.Run then
// stops at once) and announced returns that error: other workers may have
// returned this client's running jobs to the queue.
func (a *app) announced(ctx context.Context, pool *pgxpool.Pool, clientID string, run func(context.Context) error) error {
	live := &liveness.Liveness{Pool: pool, ClientID: clientID, Interval: a.cfg.WorkerHeartbeatInterval,
		Timeout: a.cfg.WorkerHeartbeatTimeout, Logger: a.logger}
	if err := slotwait.Wait(ctx, 0, a.logger, "relay_workers", func() error { return live.Announce(ctx) }); err != nil {
		return err
	}
	workCtx, stopWork := context.WithCancelCause(ctx)
	defer stopWork(nil)
	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		if err := live.Run(liveCtx); err != nil {
			a.logger.ErrorContext(ctx, "stopping work", slog.String("error", err.Error()))
			stopWork(err)
		}
	}()
	err := run(workCtx)
	stopLive()
	<-liveDone
	if cause := context.Cause(workCtx); errors.Is(cause, liveness.ErrLeaseLost) {
		return cause
	}
	return err
}
