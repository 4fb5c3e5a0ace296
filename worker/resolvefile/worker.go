// Package resolvefile is relay's resolve_file job: Worker works one file's
// POI batch, every POI inside its own error boundary (structural
// validation, recovered panics, a per-POI deadline), and writes the failed
// POIs into failed_pois, hands the references of the others to the linker
// (package link) and completes the job, in one transaction. Package worker
// registers Worker with relay's River client.
package resolvefile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/citus"
	"github.com/relay-dev/relay/internal/indexplans"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
	"github.com/relay-dev/relay/worker/link"
)

// Beginner starts a transaction: a *pgxpool.Pool in production, or a test's
// pgx.Tx (whose Begin is a savepoint) under rivertest.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// ExtractFunc extracts one POI's references. resolver.Extract in production;
// tests substitute one that panics or hangs for chosen POIs.
type ExtractFunc func(ctx context.Context, poi resolver.POI) ([]resolver.Reference, error)

// Config tunes Worker.
type Config struct {
	// POITimeout is the deadline for one POI.
	POITimeout time.Duration
	// JobTimeout is the deadline for the whole batch (River's job timeout).
	JobTimeout time.Duration
	// Extract defaults to resolver.Extract.
	Extract ExtractFunc
	// ReprocessMaxAttempts is how many failed reprocesses a failed_pois row
	// may have before it needs manual review (deadletter's default, 5, when
	// zero).
	ReprocessMaxAttempts int
}

// Worker is the River worker for resolve_file jobs.
type Worker struct {
	river.WorkerDefaults[outbox.ResolveFileArgs]

	db      Beginner
	cfg     Config
	logger  *slog.Logger
	metrics Observer
	// layout says whether relay's tables are distributed (Citus): then a
	// batch's transaction keeps custom plans (indexplans.DistributedSQL);
	// nil when db cannot run a query outside a transaction.
	layout *citus.Layout
}

// NewWorker returns the resolve_file worker. obs may be nil.
func NewWorker(db Beginner, cfg Config, logger *slog.Logger, obs Observer) *Worker {
	if cfg.POITimeout <= 0 {
		cfg.POITimeout = 5 * time.Second
	}
	if cfg.Extract == nil {
		cfg.Extract = resolver.Extract
	}
	if obs == nil {
		obs = nopObserver{}
	}
	w := &Worker{db: db, cfg: cfg, logger: logger, metrics: obs}
	if q, ok := db.(citus.Querier); ok {
		w.layout = citus.NewLayout(q)
	}
	return w
}

// Timeout is the batch's deadline.
func (w *Worker) Timeout(*river.Job[outbox.ResolveFileArgs]) time.Duration {
	return w.cfg.JobTimeout
}

// poiResult is what happened to one POI of the batch.
type poiResult struct {
	index int
	poi   resolver.POI
	refs  []resolver.Reference
	fail  *failed.POI
}

// BatchSummary is what one batch did; it is logged and reported to the
// Observer.
type BatchSummary struct {
	JobID         int64
	FileID        string
	POIs          int
	Resolved      int
	Failed        int
	FailedByClass map[failed.ErrorClass]int
	// References counts the references handed to the linker.
	References int
	Superseded bool
	Duration   time.Duration
}

// Work resolves the batch. It returns an error (so River retries the whole
// batch) only when the database work fails, including writing failed_pois;
// a POI's own failure is recorded, not returned.
func (w *Worker) Work(ctx context.Context, job *river.Job[outbox.ResolveFileArgs]) error {
	start := time.Now()
	args := job.Args
	log := w.logger.With(slog.Int64("job_id", job.ID), slog.String("file_id", args.FileID), slog.Int("attempt", job.Attempt))

	results := make([]poiResult, len(args.POIs))
	for i, raw := range args.POIs {
		if err := ctx.Err(); err != nil {
			// Shutting down or out of time: the batch is retried whole.
			return fmt.Errorf("error resolving file %q: stopped after %d of %d POIs: %w", args.FileID, i, len(args.POIs), err)
		}
		results[i] = w.resolvePOI(ctx, job.ID, args.FileID, i, raw)
		if ctx.Err() != nil {
			return fmt.Errorf("error resolving file %q: stopped at POI #%d: %w", args.FileID, i, ctx.Err())
		}
	}

	sum, err := w.commit(ctx, job, results)
	if err != nil {
		w.metrics.BatchFailed(time.Since(start))
		if ctx.Err() != nil {
			log.WarnContext(ctx, "batch interrupted; River will retry it", slog.String("error", err.Error()))
		} else {
			log.ErrorContext(ctx, "batch failed; River will retry it", slog.String("error", err.Error()))
		}
		return err
	}
	sum.Duration = time.Since(start)
	w.metrics.BatchDone(sum)
	if sum.Superseded {
		log.InfoContext(ctx, "batch superseded by a newer publish of the file; only its changed names handed to the linker",
			slog.Int64("file_version", args.FileVersion))
		return nil
	}
	for _, r := range results {
		if r.fail != nil {
			log.WarnContext(ctx, "POI dead-lettered to failed_pois", slog.String("poi_id", r.fail.POIID),
				slog.Int("poi_index", r.index), slog.String("error_class", string(r.fail.Class)), slog.String("error", r.fail.Message))
		}
	}
	log.InfoContext(ctx, "batch resolved", slog.Int("pois", sum.POIs), slog.Int("resolved", sum.Resolved),
		slog.Int("failed", sum.Failed), slog.Int("references", sum.References), slog.Duration("duration", sum.Duration))
	return nil
}

// resolvePOI is one POI's error boundary: it never panics and never returns
// an error; a failure is described in the result.
func (w *Worker) resolvePOI(ctx context.Context, jobID int64, fileID string, index int, raw json.RawMessage) (res poiResult) {
	res.index = index
	fail := func(class failed.ErrorClass, msg, detail string) poiResult {
		res.fail = &failed.POI{JobID: jobID, FileID: fileID, POIID: res.poi.ID, POIIndex: index,
			Class: class, Message: msg, Context: detail, Data: raw, FailedAt: time.Now()}
		return res
	}
	defer func() {
		if r := recover(); r != nil {
			res = fail(failed.ClassPanic, fmt.Sprintf("panic: %v", r), string(debug.Stack()))
		}
	}()

	poi, err := resolver.DecodePOI(raw)
	if err != nil {
		msg := err.Error()
		var verr *resolver.ValidationError
		if errors.As(err, &verr) {
			res.poi.ID = verr.POIID
			msg = validationMessage(verr, fileID, index)
		}
		return fail(failed.ClassValidation, msg, "")
	}
	res.poi = poi

	poiCtx, cancel := context.WithTimeout(ctx, w.cfg.POITimeout)
	defer cancel()
	type extracted struct {
		refs  []resolver.Reference
		err   error
		panic any
		stack string
	}
	done := make(chan extracted, 1)
	// The extraction runs in its own goroutine so that the deadline holds
	// even against code that ignores its context.
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- extracted{panic: r, stack: string(debug.Stack())}
			}
		}()
		refs, err := w.cfg.Extract(poiCtx, poi)
		done <- extracted{refs: refs, err: err}
	}()
	select {
	case out := <-done:
		switch {
		case out.panic != nil:
			return fail(failed.ClassPanic, fmt.Sprintf("panic: %v", out.panic), out.stack)
		case out.err != nil && ctx.Err() != nil:
			return res // the batch is stopping; Work returns the error
		case out.err != nil && errors.Is(out.err, context.DeadlineExceeded):
			return fail(failed.ClassTimeout, fmt.Sprintf("resolving POI took longer than %s", w.cfg.POITimeout), out.err.Error())
		case out.err != nil:
			return fail(failed.ClassResolver, out.err.Error(), "")
		}
		res.refs = out.refs
		return res
	case <-poiCtx.Done():
		if ctx.Err() != nil {
			return res
		}
		return fail(failed.ClassTimeout, fmt.Sprintf("resolving POI took longer than %s", w.cfg.POITimeout),
			"the resolver did not return before the per-POI deadline (poi_timeout)")
	}
}

// commit writes the batch's effects, hands its references and changed
// names to the linker (link.Queue, link.EnsureTx) and completes the job, in
// one transaction. The file's row is share-locked first: a batch whose
// file was published again since (superseded) writes no failed POIs and
// hands over no references, only the names its publish changed.
func (w *Worker) commit(ctx context.Context, job *river.Job[outbox.ResolveFileArgs], results []poiResult) (*BatchSummary, error) {
	args := job.Args
	sum := &BatchSummary{JobID: job.ID, FileID: args.FileID, POIs: len(results), FailedByClass: map[failed.ErrorClass]int{}}
	var dist bool
	if w.layout != nil {
		var err error
		if dist, err = w.layout.Distributed(ctx); err != nil {
			return nil, fmt.Errorf("error beginning batch transaction: %w", err)
		}
	}
	tx, err := indexplans.BeginFor(ctx, w.db, dist)
	if err != nil {
		return nil, fmt.Errorf("error beginning batch transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	st := store{tx: tx}

	var ok []poiResult
	var failures []failed.POI
	for _, r := range results {
		if r.fail != nil {
			f := *r.fail
			f.Repository, f.FileVersion = args.Repository, args.FileVersion
			failures = append(failures, f)
			sum.FailedByClass[r.fail.Class]++
			continue
		}
		ok = append(ok, r)
	}
	sum.Resolved, sum.Failed = len(ok), len(failures)

	version, fileXID, exists, err := st.fileVersion(ctx, args.Repository, args.FileID)
	if err != nil {
		return nil, err
	}
	reprocess := len(args.FailedPOIIDs) > 0
	entry := link.Entry{JobID: job.ID, Repository: args.Repository, FileID: args.FileID, Replace: !reprocess, PublishedAt: job.CreatedAt,
		PublishXID: args.PublishXID, Changed: args.ChangedNames}
	switch {
	case reprocess && (!exists || version != args.FileVersion):
		// The job's rows are of a version its file no longer has, or of a
		// file that is gone: writing their POIs would put an older version
		// over the file's current one, or recreate the file. They are
		// closed (superseded, with the reason) and nothing is written
		// (TestReprocess_JobOfAnOlderVersionWritesNothingWhenThePublishMissedItsRows,
		// TestDelete_ReprocessQueuedBeforeTheDeleteDoesNotRecreateTheRepository).
		reason := failed.OtherVersionReason(args.FileVersion, version)
		if !exists {
			repoGone, err := st.repositoryGone(ctx, args.Repository)
			if err != nil {
				return nil, err
			}
			reason = failed.FileGoneReason(args.Repository, args.FileID, repoGone)
		}
		n, err := failed.SupersedeReprocessTx(ctx, tx, job.ID, args.Repository, args.FileID, args.FailedPOIIDs, reason)
		if err != nil {
			return nil, err
		}
		w.logger.WarnContext(ctx, "reprocess job's rows superseded: their file was published again or is gone; nothing written",
			slog.Int64("job_id", job.ID), slog.String("file_id", args.FileID), slog.Int("superseded", n), slog.String("reason", reason))
		sum.Superseded = true
		sum.Resolved, sum.Failed = 0, 0
		clear(sum.FailedByClass)
		failures, ok = nil, nil
		entry.Changed = nil
	case reprocess:
		// A reprocess batch of the file's current version. Only the POIs
		// whose rows are still reprocessing for this job are written: a
		// publish of the file supersedes them, and may leave the version
		// equal to the job's (the repository was deleted and published
		// again: TestDelete_ReprocessQueuedBeforeADeleteAndARepublishWritesNothing).
		// The file's row, held FOR SHARE since fileVersion, keeps a publish
		// from changing the version or the rows until this commits
		// (TestReprocess_JobQueuedBeforeAHeldPublishOfItsFileWritesNothing).
		// It is never superseded otherwise: a reprocessed POI may never
		// have entered the symbol table, and references to its id or symbol
		// resolve again as references to its name do.
		live, err := failed.LiveReprocessRowsTx(ctx, tx, job.ID, args.Repository, args.FailedPOIIDs)
		if err != nil {
			return nil, err
		}
		ok = slices.DeleteFunc(ok, func(r poiResult) bool {
			return r.index < len(args.FailedPOIIDs) && !live[args.FailedPOIIDs[r.index]]
		})
		if err := st.upsertSymbols(ctx, args.Repository, args.FileID, ok); err != nil {
			return nil, err
		}
		// A POI whose id another file of the repository holds was not
		// written (the upsert leaves another file's POI alone): it fails
		// again, as the publish would reject it, rather than being
		// reported reprocessed.
		taken, err := st.idsOfOtherFiles(ctx, args.Repository, args.FileID, ok)
		if err != nil {
			return nil, err
		}
		if len(taken) > 0 {
			ok = slices.DeleteFunc(ok, func(r poiResult) bool { return taken[r.poi.ID] != "" })
			for i, r := range results {
				if owner := taken[r.poi.ID]; owner != "" && r.fail == nil {
					var raw json.RawMessage
					if r.index < len(args.POIs) {
						raw = args.POIs[r.index]
					}
					results[i].fail = &failed.POI{JobID: job.ID, FileID: args.FileID, POIID: r.poi.ID, POIIndex: r.index,
						Class: failed.ClassValidation, Data: raw, FailedAt: time.Now(),
						Message: fmt.Sprintf("poi %q (file %q): id already belongs to a POI of file %q; POI ids must be unique within a repository",
							r.poi.ID, args.FileID, owner)}
					sum.FailedByClass[failed.ClassValidation]++
					sum.Failed++
				}
			}
		}
		sum.Resolved = len(ok)
		entry.Changed = withSuppliedNames(args.ChangedNames, ok)
		if failures, err = w.recordReprocess(ctx, tx, job, results); err != nil {
			return nil, err
		}
	case !exists || !outbox.SamePublish(version, fileXID, args.FileVersion, args.PublishXID):
		// A newer publish of the file replaced these POIs; its job hands
		// over their references. This publish's changed names still go to
		// the linker: the newer job only carries what changed after it.
		sum.Superseded = true
		sum.Resolved, sum.Failed = 0, 0
		clear(sum.FailedByClass)
		failures, ok = nil, nil
	}
	if !sum.Superseded {
		entry.FileVersion = &version
	}
	for _, r := range ok {
		for _, ref := range r.refs {
			entry.Refs = append(entry.Refs, link.Ref{Source: r.poi.ID, Reference: ref})
		}
	}
	sum.References = len(entry.Refs)

	if err := completeTx(ctx, tx, job); err != nil {
		return nil, fmt.Errorf("error completing job: %w", err)
	}
	b := &pgx.Batch{}
	if err := failed.QueueInsert(b, failures); err != nil {
		return nil, err
	}
	lanes := link.Queue(b, entry)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		if len(failures) > 0 {
			// The safety net itself failed: say which POIs, and let River
			// retry the whole batch rather than drop them.
			ids := make([]string, len(failures))
			for i, f := range failures {
				ids[i] = fmt.Sprintf("%s#%d", f.POIID, f.POIIndex)
			}
			w.logger.ErrorContext(ctx, "could not write the batch, failed POIs included; batch will be retried",
				slog.Int64("job_id", job.ID), slog.String("file_id", args.FileID), slog.Any("poi_ids", ids), slog.String("error", err.Error()))
		}
		return nil, fmt.Errorf("error writing the batch's %d failed POIs and %d references: %w", len(failures), len(entry.Refs), err)
	}
	if err := link.EnsureTx(ctx, tx, lanes); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("error committing batch: %w", err)
	}
	return sum, nil
}

// recordReprocess records a reprocess job's outcomes: each POI's outcome
// goes to the failed_pois row it came from (reprocessed, or back to new
// with its error history). It returns the failures of POIs without a row
// (a malformed job), which get rows of their own.
func (w *Worker) recordReprocess(ctx context.Context, tx pgx.Tx, job *river.Job[outbox.ResolveFileArgs], results []poiResult) ([]failed.POI, error) {
	args := job.Args
	outcomes := make([]failed.ReprocessOutcome, 0, len(results))
	var rowless []failed.POI
	for _, r := range results {
		if r.index >= len(args.FailedPOIIDs) {
			if r.fail != nil {
				f := *r.fail
				f.Repository, f.FileVersion = args.Repository, args.FileVersion
				rowless = append(rowless, f)
			}
			continue
		}
		outcomes = append(outcomes, failed.ReprocessOutcome{FailedPOIID: args.FailedPOIIDs[r.index], Failure: r.fail})
	}
	rec, err := failed.RecordReprocessOutcomesTx(ctx, tx, job.ID, args.Repository, args.FileID, outcomes, w.cfg.ReprocessMaxAttempts)
	if err != nil {
		w.logger.ErrorContext(ctx, "could not record reprocess outcomes; batch will be retried",
			slog.Int64("job_id", job.ID), slog.String("file_id", args.FileID), slog.String("error", err.Error()))
		return nil, err
	}
	if rec.Skipped > 0 {
		w.logger.WarnContext(ctx, "reprocess outcomes skipped: rows no longer waiting for this job",
			slog.Int64("job_id", job.ID), slog.String("file_id", args.FileID), slog.Int("skipped", rec.Skipped))
	}
	if rec.ManualReview > 0 {
		w.logger.WarnContext(ctx, "failed POIs reached the reprocess cap and need manual review",
			slog.Int64("job_id", job.ID), slog.String("file_id", args.FileID), slog.Int("manual_review", rec.ManualReview))
	}
	return rowless, nil
}

// completeTx completes job in tx with river.JobCompleteTx. JobCompleteTx
// returns the updated job with its args decoded again, every POI's JSON for
// a batch, which the worker has no use for; completing a copy of the job
// typed with completedArgs, whose decoding is a no-op, skips it.
//
// The batch commits only if this attempt still owns the job: when another
// worker returned it to the queue meanwhile (this worker's heartbeat was
// declared gone, see liveness.Liveness), River leaves the job as it is, or
// completes the next attempt's; either way completeTx fails and the
// batch's transaction rolls back, so a job's batch never commits twice.
func completeTx(ctx context.Context, tx pgx.Tx, job *river.Job[outbox.ResolveFileArgs]) error {
	done, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, &river.Job[completedArgs]{JobRow: job.JobRow})
	if err != nil {
		return err
	}
	return checkCompleted(done.JobRow, job.JobRow)
}

// checkCompleted reports whether JobCompleteTx completed this attempt of
// the job: it returns the row unchanged, without an error, when the job was
// no longer running.
func checkCompleted(done, attempt *rivertype.JobRow) error {
	if done.State != rivertype.JobStateCompleted || done.Attempt != attempt.Attempt {
		return fmt.Errorf("job %d attempt %d no longer belongs to this worker (state %s, attempt %d): "+
			"another worker returned it to the queue", attempt.ID, attempt.Attempt, done.State, done.Attempt)
	}
	return nil
}

// completedArgs stands for ResolveFileArgs where the args are not needed.
type completedArgs struct{}

func (completedArgs) Kind() string { return outbox.KindResolveFile }

// UnmarshalJSON ignores the args (encoding/json has already checked that
// they are valid JSON).
func (*completedArgs) UnmarshalJSON([]byte) error { return nil }

// validationMessage names the POI, its position and file, the field and
// what was wrong: `poi "m1" (#3 of file "src/a.js"): lineNumber must be ...`.
func validationMessage(e *resolver.ValidationError, fileID string, index int) string {
	who := fmt.Sprintf("poi #%d of file %q (no usable id)", index, fileID)
	if e.POIID != "" {
		who = fmt.Sprintf("poi %q (#%d of file %q)", e.POIID, index, fileID)
	}
	field := e.Field
	if field == "" {
		field = "the POI"
	}
	return fmt.Sprintf("%s: %s %s", who, field, e.Reason)
}

// withSuppliedNames returns changed (a reprocess job's names: its POIs'
// names) with the other names the resolved POIs answer to
// (resolver.AnswerNames): "id:<id>", "sym:<symbol>" and, for a Go method,
// its receiver-qualified name. A POI that resolves now may enter the
// symbol table for the first time, and references to its id or symbol
// resolve again as references to its name do.
func withSuppliedNames(changed []string, ok []poiResult) []string {
	set := make(map[string]bool, len(changed)+2*len(ok))
	for _, n := range changed {
		set[n] = true
	}
	add := func(n string) { set[n] = true }
	for _, r := range ok {
		p := r.poi
		resolver.AnswerNames(resolver.Answerer{ID: p.ID, Type: p.Type, Name: p.Name, Receiver: resolver.Receiver(p), Symbol: p.Symbol},
			resolver.ByReceiver|resolver.ByID|resolver.BySymbol, add)
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
