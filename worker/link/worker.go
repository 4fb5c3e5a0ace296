package link

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/relay-dev/relay/internal/citus"
)

// Observer is told about every committed round; the metrics exporter is
// one.
type Observer interface {
	Linked(sum *Summary)
}

type nopObserver struct{}

func (nopObserver) Linked(*Summary) {}

// Config tunes the link job.
type Config struct {
	// RoundRows is how many link_queue rows a round reads at most
	// (RoundRowsDefault when zero).
	RoundRows int
	// Handover is how long one link job runs rounds before it hands the
	// queue to a new link job (HandoverDefault when zero), so that no job
	// runs long enough to look stuck to River's rescuer.
	Handover time.Duration
	// Postponed is how long the job waits before the next round when a
	// round could only postpone rows (their files are being published).
	Postponed time.Duration
	// Delay is how long after its publish a file is linked at the earliest
	// (Limits.Delay); zero links at once.
	Delay time.Duration
}

// Defaults for Config.
const (
	HandoverDefault  = time.Minute
	PostponedDefault = 100 * time.Millisecond
)

// Worker is the River worker for link jobs.
type Worker struct {
	river.WorkerDefaults[Args]
	db     Beginner
	cfg    Config
	logger *slog.Logger
	obs    Observer
	// layout says whether relay's tables are distributed (Limits.Distributed);
	// nil when db cannot run a query outside a transaction (then rounds
	// take the plain forms).
	layout *citus.Layout
}

// NewWorker returns the link worker. obs may be nil.
func NewWorker(db Beginner, cfg Config, logger *slog.Logger, obs Observer) *Worker {
	cfg.RoundRows = cmp.Or(cfg.RoundRows, RoundRowsDefault)
	cfg.Handover = cmp.Or(cfg.Handover, HandoverDefault)
	cfg.Postponed = cmp.Or(cfg.Postponed, PostponedDefault)
	if obs == nil {
		obs = nopObserver{}
	}
	w := &Worker{db: db, cfg: cfg, logger: logger, obs: obs}
	if q, ok := db.(citus.Querier); ok {
		w.layout = citus.NewLayout(q)
	}
	return w
}

// Timeout: a link job ends itself after Handover; a round has no deadline
// of its own but the context's.
func (w *Worker) Timeout(*river.Job[Args]) time.Duration { return -1 }

// Work runs rounds from the job's lane (each also takes every other lane
// no round holds: Round) until the lane is empty, waiting for rows younger
// than Delay, then completes the job under the gate lock (finish); after
// Handover it completes and inserts the next link job in one transaction
// instead. A round that fails on a conflict
// with a concurrent publish (a deadlock, a target deleted since it was
// read) is run again; any other error returns, and River retries the job:
// the rows stay queued.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	start := time.Now()
	lim := Limits{Rows: w.cfg.RoundRows, Delay: w.cfg.Delay}
	if w.layout != nil {
		dist, err := w.layout.Distributed(ctx)
		if err != nil {
			return err
		}
		lim.Distributed = dist
	}
	for {
		sum, err := Round(ctx, w.db, job.Args.Lane, lim)
		switch {
		case isConflict(err):
			w.logger.InfoContext(ctx, "link round conflicted with a publish; running it again", slog.String("error", err.Error()))
			continue
		case err != nil:
			return err
		}
		if sum.Rows > 0 {
			w.obs.Linked(sum)
			w.logger.DebugContext(ctx, "link round", slog.Int("lane", job.Args.Lane), slog.Int("rows", sum.Rows), slog.Int("files", sum.Files),
				slog.Int("references", sum.References), slog.Int64("relationships", sum.Relationships),
				slog.Int("reresolved_references", sum.Reresolved), slog.Duration("duration", sum.Duration))
		}
		handover := time.Since(start) > w.cfg.Handover
		if sum.Rows > 0 && !handover {
			continue
		}
		if wait := cmp.Or(sum.Wait, postponed(sum, w.cfg.Postponed)); wait > 0 && !handover {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			continue
		}
		done, err := w.finish(ctx, job, handover)
		if err != nil || done {
			return err
		}
	}
}

// finish completes job if its lane is empty, or when handover is set by
// inserting the lane's next link job with it, and reports whether it did.
// It holds the lane's linker lock and the gate exclusively: every
// transaction that queued a row in the lane and saw this job waiting or
// running has committed, so its row is seen here.
func (w *Worker) finish(ctx context.Context, job *river.Job[Args], handover bool) (bool, error) {
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("error finishing link job: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The look is a statement of its own, so that its snapshot is taken
	// after the locks were granted.
	lane := job.Args.Lane
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1), pg_advisory_xact_lock($2)`, linkerKey(lane), gateLock); err != nil {
		return false, fmt.Errorf("error finishing link job: %w", err)
	}
	var queued bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM link_queue WHERE lane = $1)`, lane).Scan(&queued); err != nil {
		return false, fmt.Errorf("error finishing link job: %w", err)
	}
	if queued && !handover {
		return false, nil
	}
	if queued {
		client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
		if err != nil {
			return false, fmt.Errorf("error handing link_queue over: %w", err)
		}
		if _, err := client.InsertTx(ctx, tx, Args{Lane: lane}, nil); err != nil {
			return false, fmt.Errorf("error handing link_queue over: %w", err)
		}
	}
	completed, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
	if err != nil {
		return false, fmt.Errorf("error completing link job: %w", err)
	}
	if completed.State != rivertype.JobStateCompleted || completed.Attempt != job.Attempt {
		return false, fmt.Errorf("link job %d attempt %d no longer belongs to this worker (state %s)", job.ID, job.Attempt, completed.State)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("error completing link job: %w", err)
	}
	return true, nil
}

// postponed is how long to wait before the next round after a round that
// could only postpone rows, zero after any other.
func postponed(sum *Summary, d time.Duration) time.Duration {
	if sum.Rows == 0 && sum.Postponed > 0 {
		return d
	}
	return 0
}

// isConflict reports whether err is a round's conflict with a concurrent
// writer, which running the round again resolves: a deadlock, a
// serialization failure, or a target POI deleted after the round read it.
func isConflict(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "40P01", "40001", "23503":
		return true
	}
	return false
}

// LinkAll runs rounds on db, lane after lane, until link_queue is empty,
// without a River job and without a delay: what the link jobs do, for
// tests and tools that work jobs one by one.
func LinkAll(ctx context.Context, db Beginner) error {
	lim := Limits{Rows: RoundRowsDefault}
	if q, ok := db.(citus.Querier); ok {
		dist, err := citus.TablesDistributed(ctx, q)
		if err != nil {
			return err
		}
		lim.Distributed = dist
	}
	for {
		busy := false
		for lane := range Lanes {
			sum, err := Round(ctx, db, lane, lim)
			if isConflict(err) {
				busy = true
				continue
			}
			if err != nil {
				return err
			}
			busy = busy || sum.Rows > 0 || sum.Postponed > 0
		}
		if !busy {
			return nil
		}
	}
}
