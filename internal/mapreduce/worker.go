package mapreduce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/internal/liveness"
)

// WorkerConfig is what a process's MapReduce agents run with: the queue
// they take items from, how many run at once, and the ItemWorker's
// settings.
type WorkerConfig struct {
	// Queue is the River queue items are taken from. Empty: Queue, the
	// shared one (a --wait run works its job's own, WaitQueue).
	Queue string
	// Parallel is how many agents run at once (mapreduce_parallel, or
	// --parallel with --wait); at least 1.
	Parallel int
	// Workdir holds per-attempt working directories and logs (default
	// agent.DefaultBaseDirFor(User): a private per-user directory, or
	// agent.SharedBaseDir when agents run as another user). The agent
	// runner creates it and refuses a symlink, another user's directory or
	// one others can write to.
	Workdir string
	// Env holds the NAME=VALUE variables this process gives every agent
	// (agent_env, agent.ResolveEnv). An item of a job that records a name
	// Env lacks fails its attempt without running the agent (error type
	// WorktreeError, step prepare_agent), saying which.
	Env []string
	// User is the account agents run as (agent_user); nil runs them as
	// this process's user, which the agent runner refuses for root (the
	// attempt fails, step prepare_agent). See agent.User.
	User *agent.User
	// KillGrace is the time between SIGTERM and SIGKILL at an agent's
	// deadline (default agent.KillGraceDefault).
	KillGrace time.Duration
	// Actor names the worker in dead_letter_events (default
	// deadletter.WorkerActor).
	Actor string
	// StopNow, when closed, interrupts every running agent at once (their
	// process groups are killed and the items run again later) instead of
	// letting River's soft stop wait for them. nil: never.
	StopNow <-chan struct{}
}

// mapReduceTimeoutGrace is added to an item's agent timeout to give River's
// own deadline for the job: the agent's deadline always fires first.
const mapReduceTimeoutGrace = 30 * time.Second

// recordTimeout bounds writing an attempt's outcome, which is done even
// when the worker is stopping (the agent's work is not thrown away).
const recordTimeout = 15 * time.Second

// ItemWorker is the River worker for mapreduce_item jobs: it runs
// the job's agent on one item and records the outcome. A failed attempt is
// retried after the job's backoff until the DLQ policy says to dead-letter
// the item; then the item's row goes to dead_lettered_items in the same
// transaction that ends it in mapreduce_items, and the River job is
// cancelled. If that write fails the run goes on: the failure is logged,
// the attempt is still recorded, and the River job ends discarded (or
// cancelled) so the sweep captures it later.
type ItemWorker struct {
	river.WorkerDefaults[ItemArgs]

	pool   *pgxpool.Pool
	jobs   *Store
	dlq    *items.Store
	cfg    WorkerConfig
	logger *slog.Logger
	host   string
}

// Agents is MapReduce's work in a worker process (a worker.Extension): the
// mapreduce_item workers on its queue and the sweep of items whose River
// job ended without reaching the DLQ.
type Agents struct {
	cfg WorkerConfig
}

// NewAgents returns the MapReduce work cfg describes.
func NewAgents(cfg WorkerConfig) *Agents {
	if cfg.Queue == "" {
		cfg.Queue = Queue
	}
	return &Agents{cfg: cfg}
}

// Queues is the one queue the agents take items from, with cfg.Parallel
// agents at once.
func (a *Agents) Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{a.cfg.Queue: {MaxWorkers: a.cfg.Parallel}}
}

// AddWorkers registers the mapreduce_item worker.
func (a *Agents) AddWorkers(workers *river.Workers, pool *pgxpool.Pool, logger *slog.Logger) {
	river.AddWorker(workers, NewItemWorker(pool, a.cfg, logger))
}

// Sweep captures the items whose River job ended without reaching the DLQ
// (the package's Sweep).
func (a *Agents) Sweep(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	return Sweep(ctx, pool, logger)
}

// NewItemWorker returns the mapreduce_item worker.
func NewItemWorker(pool *pgxpool.Pool, cfg WorkerConfig, logger *slog.Logger) *ItemWorker {
	if cfg.Workdir == "" {
		cfg.Workdir = agent.DefaultBaseDirFor(cfg.User)
	}
	if cfg.Actor == "" {
		cfg.Actor = deadletter.WorkerActor
	}
	host, _ := os.Hostname()
	return &ItemWorker{pool: pool, jobs: NewStore(pool), dlq: items.NewStore(pool, logger),
		cfg: cfg, logger: logger, host: host}
}

// Timeout is the agent's timeout plus a grace period.
func (w *ItemWorker) Timeout(job *river.Job[ItemArgs]) time.Duration {
	if job.Args.TimeoutMS <= 0 {
		return 0
	}
	return time.Duration(job.Args.TimeoutMS)*time.Millisecond + mapReduceTimeoutGrace + w.cfg.KillGrace
}

// NextRetry applies the job's exponential backoff.
func (w *ItemWorker) NextRetry(job *river.Job[ItemArgs]) time.Time {
	return time.Now().Add(Backoff(time.Duration(job.Args.RetryBackoffMS)*time.Millisecond, job.Attempt))
}

// Work runs one attempt.
func (w *ItemWorker) Work(ctx context.Context, job *river.Job[ItemArgs]) error {
	a := job.Args
	log := w.logger.With(slog.String("job_id", a.JobID), slog.String("item_id", a.ItemID),
		slog.Int64("river_job_id", job.ID), slog.Int("river_attempt", job.Attempt))
	item, err := w.jobs.LoadItem(ctx, a.JobID, a.ItemID)
	if errors.Is(err, ErrItemNotFound) {
		log.WarnContext(ctx, "MapReduce item is not registered; cancelling its River job")
		return river.JobCancel(err)
	}
	if err != nil {
		return w.storageError(ctx, job, log, err)
	}
	if item.RiverJobID != job.ID || item.Status != ItemPending {
		log.InfoContext(ctx, "River job superseded (the item finished or was re-enqueued); nothing to do",
			slog.String("item_status", item.Status), slog.Int64("current_river_job_id", item.RiverJobID))
		return nil
	}
	item.Attempts += w.recordLostAttempts(ctx, job, item, log)
	attempt := item.Attempts + 1
	out := w.run(ctx, item, attempt)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if out.Interrupted {
		log.InfoContext(ctx, "agent interrupted: the worker is stopping; the item will run again")
		return river.JobSnooze(0)
	}
	if out.Succeeded {
		return w.succeed(rctx, job, attempt, out, log)
	}

	detail, _ := agent.FailureOf(out, attempt, fmt.Sprintf("%s/river-job-%d", w.host, job.ID), job.ID)
	log = log.With(slog.Int("attempt", attempt), slog.String("error_type", string(detail.ErrorType)),
		slog.String("error", detail.ErrorMessage), slog.String("log", detail.LogLocation))
	switch item.Job.Policy.Decide(detail.ErrorType, job.Attempt, job.MaxAttempts) {
	case DecisionDeadLetter:
		return w.deadLetter(rctx, job, item, detail, log)
	case DecisionRetryForever:
		if _, _, err := w.jobs.RecordFailure(rctx, nil, a.JobID, a.ItemID, detail, false); err != nil {
			log.WarnContext(ctx, "error recording failed attempt", slog.String("record_error", err.Error()))
		}
		delay := Backoff(time.Duration(a.RetryBackoffMS)*time.Millisecond, job.Attempt)
		log.WarnContext(ctx, "attempt failed with an error type the DLQ policy never dead-letters; retrying",
			slog.Duration("after", delay))
		return river.JobSnooze(delay)
	default:
		if _, _, err := w.jobs.RecordFailure(rctx, nil, a.JobID, a.ItemID, detail, false); err != nil {
			return w.storageError(ctx, job, log, err)
		}
		log.WarnContext(ctx, "attempt failed; River will retry it", slog.Int("attempts_left", job.MaxAttempts-job.Attempt))
		return fmt.Errorf("attempt %d of item %q failed: %s: %s", attempt, a.ItemID, detail.ErrorType, detail.ErrorMessage)
	}
}

func (w *ItemWorker) run(ctx context.Context, item *WorkItem, attempt int) *agent.Outcome {
	argv, err := agent.Split(item.Job.Agent)
	if err != nil { // validated when the job was created; the row was edited since
		return &agent.Outcome{ErrorType: agent.ErrorTypeCommandFailed, Step: agent.StepRunAgent,
			Message: err.Error(), StartedAt: time.Now().UTC()}
	}
	if w.cfg.StopNow != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-w.cfg.StopNow:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	if missing := agent.MissingEnv(item.Job.AgentEnv, w.cfg.Env); len(missing) > 0 {
		return &agent.Outcome{ErrorType: agent.ErrorTypeWorktreeError, Step: agent.StepPrepareAgent, StartedAt: time.Now().UTC(),
			Message: fmt.Sprintf("agent not started: job %s's agents need %s (its agent_env), which this process does not give them; "+
				"add %s to the agent_env of the process that runs the job ('relay worker', or --agent-env with --wait), "+
				"then 'relay dlq retry %s'", item.Job.ID, strings.Join(missing, ", "), strings.Join(missing, " "), item.Job.ID)}
	}
	r := &agent.Runner{Argv: argv, Timeout: item.Job.Timeout, BaseDir: w.cfg.Workdir, KillGrace: w.cfg.KillGrace,
		AddEnv: w.cfg.Env, User: w.cfg.User}
	out := r.Run(ctx, agent.Task{JobID: item.Job.ID, ItemID: item.ItemID, Attempt: attempt, Data: item.Data})
	if out.Warning != "" {
		w.logger.WarnContext(ctx, "agent attempt warning", slog.String("job_id", item.Job.ID), slog.String("item_id", item.ItemID),
			slog.Int("attempt", attempt), slog.String("warning", out.Warning), slog.String("log", out.LogPath))
	}
	return out
}

// succeed records the result, takes the item out of the DLQ if it was there,
// and completes the River job, in one transaction.
func (w *ItemWorker) succeed(ctx context.Context, job *river.Job[ItemArgs], attempt int, out *agent.Outcome, log *slog.Logger) error {
	var wasDeadLettered bool
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if err := w.jobs.SucceedTx(ctx, tx, job.Args.JobID, job.Args.ItemID, attempt, out.Result); err != nil {
			return err
		}
		var err error
		if wasDeadLettered, err = w.dlq.ResolveTx(ctx, tx, job.Args.JobID, job.Args.ItemID, w.cfg.Actor); err != nil {
			return err
		}
		done, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		if err == nil && (done.State != rivertype.JobStateCompleted || done.Attempt != job.Attempt) {
			// Another worker returned the job to the queue (this worker's
			// heartbeat was declared gone): the attempt is no longer ours.
			err = fmt.Errorf("job %d attempt %d no longer belongs to this worker (state %s, attempt %d)",
				job.ID, job.Attempt, done.State, done.Attempt)
		}
		return err
	})
	if err != nil {
		return w.storageError(ctx, job, log, err)
	}
	log.InfoContext(ctx, "item succeeded", slog.Int("attempt", attempt), slog.Duration("duration", out.Duration),
		slog.Bool("left_dlq", wasDeadLettered))
	return nil
}

// deadLetter ends the item in mapreduce_items and writes it to
// dead_lettered_items in one transaction. A failed write is logged and the
// run goes on; the River job still ends (discarded or cancelled) with the
// item pending, which is what the sweep captures.
func (w *ItemWorker) deadLetter(ctx context.Context, job *river.Job[ItemArgs], item *WorkItem,
	detail agent.FailureDetail, log *slog.Logger) error {
	a := job.Args
	start := time.Now()
	var res *items.AddResult
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		data, hist, err := w.jobs.RecordFailure(ctx, tx, a.JobID, a.ItemID, detail, true)
		if err != nil {
			return err
		}
		it := items.NewItem(a.JobID, a.ItemID, data, hist)
		res, err = w.dlq.AddTx(ctx, tx, &it, item.Job.DLQMaxItems, w.cfg.Actor)
		return err
	})
	reason := fmt.Errorf("item %q dead-lettered after attempt %d: %s: %s", a.ItemID, detail.AttemptNumber,
		detail.ErrorType, detail.ErrorMessage)
	if err != nil {
		log.WarnContext(ctx, "error writing item to dead_lettered_items; the run goes on, River keeps the job "+
			"and the dead-letter sweep will capture it", slog.String("dlq_error", err.Error()))
		if _, _, rerr := w.jobs.RecordFailure(ctx, nil, a.JobID, a.ItemID, detail, false); rerr != nil {
			log.WarnContext(ctx, "error recording failed attempt", slog.String("record_error", rerr.Error()))
		}
		if job.Attempt >= job.MaxAttempts {
			return reason // River discards the job
		}
		return river.JobCancel(reason)
	}
	log.WarnContext(ctx, "item dead-lettered", slog.Int("river_attempts", job.Attempt),
		slog.Int("dead_letter_count", res.DeadLetterCount), slog.Int("evicted", res.Evicted),
		slog.Duration("dlq_write", time.Since(start)))
	return river.JobCancel(reason)
}

// storageError handles relay's own database failing around an attempt: the
// item is not at fault, so the job is snoozed (no attempt used up) and is
// never dead-lettered for it.
func (w *ItemWorker) storageError(ctx context.Context, job *river.Job[ItemArgs], log *slog.Logger, err error) error {
	delay := max(time.Second, Backoff(time.Duration(job.Args.RetryBackoffMS)*time.Millisecond, job.Attempt))
	if ctx.Err() != nil {
		log.InfoContext(ctx, "stopping while recording the item; it will run again", slog.String("error", err.Error()))
		return river.JobSnooze(0)
	}
	log.ErrorContext(ctx, "database error around a MapReduce item; retrying without using up an attempt",
		slog.String("error", err.Error()), slog.Duration("after", delay))
	return river.JobSnooze(delay)
}

// riverRescuedError is the error River's rescuer records on a job it found
// stuck running: the worker that ran that attempt stopped (killed or
// crashed) without recording any outcome.
const riverRescuedError = "Stuck job rescued by JobRescuer"

// lostAttempt reports whether a River error entry says the attempt was lost
// with its worker: River's rescuer found it stuck, or a live worker returned
// the job of a worker that stopped renewing its heartbeat.
func lostAttempt(riverErr string) bool {
	return riverErr == riverRescuedError || strings.HasPrefix(riverErr, liveness.ReturnedMessage)
}

// lostAttemptDetail is the failure_history entry of an attempt lost with its
// worker.
func lostAttemptDetail(attemptNumber int, e riverError, agentID string, riverJobID int64) agent.FailureDetail {
	return agent.FailureDetail{
		AttemptNumber: attemptNumber,
		Timestamp:     e.At,
		ErrorType:     agent.ErrorTypeUnknown,
		ErrorMessage:  "attempt lost: the worker running it stopped before recording an outcome (" + e.Error + ")",
		AgentID:       agentID,
		StepFailed:    agent.StepRunAgent,
		RiverJobID:    riverJobID,
		RiverAttempt:  e.Attempt,
	}
}

// recordLostAttempts writes a failure_history entry for each attempt of
// this River job that River's rescuer had to rescue, so the history keeps
// one entry per attempt (and max_retries+1 entries when the item is
// dead-lettered) even when workers die mid-attempt. Each is recorded once,
// keyed by River job and attempt. It returns how many it recorded; a
// failure to record is logged and the attempt goes on.
func (w *ItemWorker) recordLostAttempts(ctx context.Context, job *river.Job[ItemArgs], item *WorkItem, log *slog.Logger) int {
	added := 0
	for _, e := range job.Errors {
		if !lostAttempt(e.Error) || e.Attempt >= job.Attempt {
			continue
		}
		d := lostAttemptDetail(item.Attempts+added+1, riverError{At: e.At, Attempt: e.Attempt, Error: e.Error},
			fmt.Sprintf("%s/river-job-%d", w.host, job.ID), job.ID)
		ok, err := w.jobs.RecordLostAttempt(ctx, job.Args.JobID, job.Args.ItemID, d)
		if err != nil {
			log.WarnContext(ctx, "error recording a lost attempt", slog.Int("river_attempt", e.Attempt), slog.String("error", err.Error()))
			continue
		}
		if ok {
			added++
			log.WarnContext(ctx, "recorded an attempt lost with its worker", slog.Int("river_attempt", e.Attempt))
		}
	}
	return added
}
