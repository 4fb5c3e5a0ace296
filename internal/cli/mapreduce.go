package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/worker"
)

func newMapReduceCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mapreduce",
		Short: "Run an agent command over a list of JSON work items, with retries and a dead-letter queue",
		Long: `A MapReduce job runs an agent command once per JSON work item. Each item is a
River job on the "mapreduce" queue; a failed attempt is retried with
exponential backoff, and an item that fails max_retries+1 times (or at once,
for error types in --dlq-include-errors) is dead-lettered into
dead_lettered_items, where the eight 'relay dlq' commands manage it.
docs/dead_lettered_items.md describes the tables, error types and policy.`,
	}
	cmd.AddCommand(newMapReduceRunCmd(a), newMapReduceStatusCmd(a), newMapReduceResumeCmd(a))
	return cmd
}

func newMapReduceRunCmd(a *app) *cobra.Command {
	var (
		input, agentCmd, jobID, include, exclude string
		maxRetries, parallel                     int
		timeout, backoff                         time.Duration
		wait, asJSON                             bool
	)
	cmd := &cobra.Command{
		Use:   "run --input FILE --agent CMD",
		Short: "Enqueue a MapReduce job (and, with --wait, work it to the end here)",
		Long: `Run reads work items from --input (a JSON array, or one JSON value per line;
"-" is standard input). An item's id is its "id" field (string or number) or
its position from 1. Invalid items are reported with their line numbers and
nothing is enqueued. The job and one River job per item are inserted in one
transaction.

The agent is run once per attempt with the item's JSON on stdin, in a fresh
working directory, with RELAY_JOB_ID, RELAY_ITEM_ID, RELAY_ATTEMPT and
RELAY_WORKDIR set (and no other RELAY_* variable). --agent is split into
words like a shell would, without any expansion, and run without a shell;
write --agent "sh -c '...'" for pipes or variables. Item data never reaches
the command line. Exit 0 is success and stdout is the item's result; exit 65
(EX_DATAERR) means "invalid item" (ValidationFailed); any other exit is a
failure. Each attempt's stdout and stderr go to a log file under
--mapreduce-workdir.

Without --wait a running 'relay worker' works the items. With --wait this
process works them (--parallel agents at once), shows progress on stderr and
prints the job summary; the exit code is 1 when any item did not succeed.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if input == "" || agentCmd == "" {
				return usageError{errors.New("--input and --agent are required")}
			}
			if _, err := agent.Split(agentCmd); err != nil {
				return usageError{err}
			}
			job := &mapreduce.Job{ID: jobID, Agent: agentCmd, InputPath: input,
				MaxRetries: intOrDefault(maxRetries, -1, a.cfg.MapReduceMaxRetries), Parallel: intOrDefault(parallel, 0, a.cfg.MapReduceParallel),
				Timeout: timeout, RetryBackoff: backoff, DLQMaxItems: a.cfg.DLQMaxItems}
			if job.Timeout == 0 {
				job.Timeout = a.cfg.MapReduceTimeout
			}
			if job.ID == "" {
				var r [2]byte
				_, _ = rand.Read(r[:])
				job.ID = mapreduce.NewJobID(time.Now(), r)
			}
			var err error
			if job.Policy.IncludeErrors, err = deadletter.ParseErrorTypeList(include); err != nil {
				return usageError{fmt.Errorf("--dlq-include-errors: %w", err)}
			}
			if job.Policy.ExcludeErrors, err = deadletter.ParseErrorTypeList(exclude); err != nil {
				return usageError{fmt.Errorf("--dlq-exclude-errors: %w", err)}
			}
			if err := job.Validate(); err != nil {
				return usageError{err}
			}
			if job.Timeout+time.Minute >= a.cfg.RescueStuckJobsAfter {
				fmt.Fprintf(a.env.Stderr, "relay mapreduce: warning: --timeout %s is close to rescue_stuck_jobs_after %s; "+
					"River may rescue (re-run) an agent that is still running. Raise --rescue-stuck-jobs-after.\n",
					job.Timeout, a.cfg.RescueStuckJobsAfter)
			}
			items, err := readItems(a, input)
			if err != nil {
				return err
			}
			pool, err := a.open(ctx, "mapreduce")
			if err != nil {
				return err
			}
			defer pool.Close()
			client, err := worker.NewInsertClient(pool, a.cfg, a.logger)
			if err != nil {
				return err
			}
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				return mapreduce.NewStore(pool).CreateTx(ctx, tx, client, job, items)
			})
			if errors.Is(err, mapreduce.ErrJobExists) {
				return exitError{code: ExitRuntime, msg: fmt.Sprintf("job %q already exists; pick another --job-id, "+
					"or continue it with 'relay mapreduce resume %s'", job.ID, job.ID)}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stderr, "relay mapreduce: job %s: %d items enqueued (max %d retries, timeout %s, backoff %s)\n",
				job.ID, len(items), job.MaxRetries, job.Timeout, job.RetryBackoff)
			if !wait {
				fmt.Fprintf(a.out(), "%s\n", job.ID)
				fmt.Fprintf(a.env.Stderr, "relay mapreduce: a running 'relay worker' works them; follow with 'relay mapreduce status %s'\n", job.ID)
				return nil
			}
			return waitAndSummarize(ctx, a, pool, job, job.Parallel, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&input, "input", "", `work items: a JSON array or newline-delimited JSON ("-" for stdin)`)
	f.StringVar(&agentCmd, "agent", "", "agent command, split into words without a shell (see above)")
	f.StringVar(&jobID, "job-id", "", "job id (default mr-<UTC time>-<random>)")
	f.IntVar(&maxRetries, "max-retries", -1, "retries per item before it is dead-lettered (default --mapreduce-max-retries)")
	f.IntVar(&parallel, "parallel", 0, "agents run at once with --wait (default --mapreduce-parallel)")
	f.DurationVar(&timeout, "timeout", 0, "deadline for one agent run (default --mapreduce-timeout)")
	f.DurationVar(&backoff, "retry-backoff", time.Second, "delay before the first retry; doubles per attempt, capped at 10m")
	f.StringVar(&include, "dlq-include-errors", string(deadletter.ErrorTypeValidationFailed),
		`error types dead-lettered at the first failure ("none" for none)`)
	f.StringVar(&exclude, "dlq-exclude-errors", string(deadletter.ErrorTypeStorage),
		`error types never dead-lettered, retried forever ("none" for none)`)
	f.BoolVar(&wait, "wait", false, "work the items in this process and print the job summary")
	f.BoolVar(&asJSON, "json", false, "with --wait, print the summary as JSON")
	return cmd
}

func intOrDefault(v, unset, def int) int {
	if v == unset {
		return def
	}
	return v
}

// readItems reads and checks the input file, reporting every bad item.
func readItems(a *app, path string) ([]mapreduce.Item, error) {
	var r io.Reader = a.env.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, usageError{fmt.Errorf("error opening --input: %w", err)}
		}
		defer f.Close()
		r = f
	}
	items, bad, err := mapreduce.ParseInput(r)
	if err != nil {
		return nil, exitError{code: ExitRuntime, msg: fmt.Sprintf("%s: %v", path, err)}
	}
	for _, b := range bad {
		fmt.Fprintf(a.env.Stderr, "%s: %s\n", path, b.Error())
	}
	if len(bad) > 0 {
		return nil, exitError{code: ExitRuntime, msg: fmt.Sprintf("%d invalid items in %s; nothing enqueued", len(bad), path)}
	}
	return items, nil
}

// waitAndSummarize works job's items in this process, then prints the
// summary; it fails when any item did not succeed.
func waitAndSummarize(ctx context.Context, a *app, pool *pgxpool.Pool, job *mapreduce.Job, parallel int, asJSON bool) error {
	c, err := workInProcess(ctx, a, pool, job.ID, parallel)
	if err != nil {
		return err
	}
	if err := printJobSummary(ctx, a, pool, job, c, asJSON); err != nil {
		return err
	}
	if notDone := c.Total - c.Succeeded; notDone > 0 {
		return exitError{code: ExitRuntime, msg: fmt.Sprintf("%d of %d items did not succeed (%d dead-lettered); "+
			"see 'relay dlq list --job-id %s'", notDone, c.Total, c.DeadLettered, job.ID)}
	}
	return nil
}

// workInProcess runs an in-process River client on the MapReduce queue until
// jobID has no item left to run, with progress on stderr.
func workInProcess(ctx context.Context, a *app, pool *pgxpool.Pool, jobID string, parallel int) (*mapreduce.Counts, error) {
	cfg := *a.cfg
	if parallel > 0 {
		cfg.MapReduceParallel = parallel
	}
	// River's workers log from their own goroutines while progress is
	// printed here: both go through one locked writer.
	stderr := &lockedWriter{w: a.env.Stderr}
	level, _ := config.ParseLogLevel(a.cfg.LogLevel)
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if a.cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	logger := slog.New(h)
	client, err := worker.NewClient(pool, &cfg, logger, &worker.Options{Queues: []string{mapreduce.Queue}})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	last := time.Time{}
	return worker.RunMapReduceUntilDone(ctx, client, pool, logger, jobID, func(c *mapreduce.Counts) {
		if time.Since(last) < 500*time.Millisecond && c.Live() > 0 {
			return
		}
		last = time.Now()
		fmt.Fprintf(stderr, "relay mapreduce: %s: %d/%d done (%d succeeded, %d dead-lettered); %d running, %d retrying, %d pending [%s]\n",
			jobID, c.Done(), c.Total, c.Succeeded, c.DeadLettered, c.Running, c.Retrying, c.Pending,
			time.Since(start).Round(100*time.Millisecond))
	})
}

// lockedWriter serializes writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// JobSummary is `relay mapreduce status --json`: the job, where its items
// are, and its dead-letter metrics.
type JobSummary struct {
	Job   *mapreduce.Job        `json:"job"`
	Items *mapreduce.Counts     `json:"items"`
	DLQ   *deadletter.ItemStats `json:"dlq"`
}

func printJobSummary(ctx context.Context, a *app, pool *pgxpool.Pool, job *mapreduce.Job, c *mapreduce.Counts, asJSON bool) error {
	st, err := deadletter.NewItemStore(pool, a.logger).Stats(ctx, job.ID)
	if err != nil {
		return err
	}
	out := a.out()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(JobSummary{Job: job, Items: c, DLQ: st})
	}
	fmt.Fprintf(out, "MapReduce job %s\n", job.ID)
	fmt.Fprintf(out, "  agent: %s\n  input: %s (%d items)\n  max retries: %d, timeout: %s, retry backoff: %s\n",
		job.Agent, job.InputPath, job.ItemCount, job.MaxRetries, job.Timeout, job.RetryBackoff)
	fmt.Fprintf(out, "\nItems:\n")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, r := range []struct {
		name string
		n    int
	}{{"pending", c.Pending}, {"running", c.Running}, {"failed, retrying", c.Retrying}, {"succeeded", c.Succeeded},
		{"dead-lettered", c.DeadLettered}, {"awaiting DLQ capture", c.AwaitingCapture}, {"unfinished (resume)", c.Unfinished}} {
		fmt.Fprintf(tw, "  %s\t%d\n", r.name, r.n)
	}
	fmt.Fprintf(tw, "  total\t%d\n", c.Total)
	_ = tw.Flush()
	fmt.Fprintf(out, "\nDead-letter queue:\n")
	printDLQMetrics(out, st, time.Now())
	return nil
}

func printDLQMetrics(out io.Writer, st *deadletter.ItemStats, now time.Time) {
	fmt.Fprintf(out, "  items: %d (reprocess eligible %d, manual review %d, reprocessing %d)\n",
		st.Total, st.ReprocessEligible, st.ManualReviewRequired, st.ByStatus[string(deadletter.ItemReprocessing)])
	if st.Reprocessed > 0 {
		fmt.Fprintf(out, "  reprocessed, awaiting 'relay dlq clear': %d\n", st.Reprocessed)
	}
	if st.Oldest != nil {
		fmt.Fprintf(out, "  oldest: %s\n  newest: %s\n", whenAgo(*st.Oldest, now), whenAgo(*st.Newest, now))
	}
	for _, t := range st.ErrorTypes {
		fmt.Fprintf(out, "  %s: %d (%.0f%%)\n", t.ErrorType, t.Count, 100*t.Share)
	}
}

// whenAgo formats t as "2026-01-21 14:25:30 UTC (3 minutes ago)".
func whenAgo(t, now time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC") + " (" + agoText(now.Sub(t)) + ")"
}

func agoText(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return pluralize(int(d/time.Minute), "minute") + " ago"
	case d < 48*time.Hour:
		return pluralize(int(d/time.Hour), "hour") + " ago"
	default:
		return pluralize(int(d/(24*time.Hour)), "day") + " ago"
	}
}

func pluralize(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func newMapReduceStatusCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status JOB_ID",
		Short: "Where a MapReduce job's items are, with its dead-letter metrics",
		Long: `Status counts the job's items: pending (queued, not yet tried), running, failed
and retrying, succeeded, dead-lettered, awaiting DLQ capture (River ended the
item's job but the DLQ write failed; the worker's sweep captures it) and
unfinished (no River job left; 'relay mapreduce resume' re-runs them), and
prints the job's dead-letter metrics.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			pool, err := a.open(ctx, "mapreduce")
			if err != nil {
				return err
			}
			defer pool.Close()
			job, err := loadJob(ctx, pool, args[0])
			if err != nil {
				return err
			}
			c, err := mapreduce.NewStore(pool).Counts(ctx, job.ID)
			if err != nil {
				return err
			}
			return printJobSummary(ctx, a, pool, job, c, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func loadJob(ctx context.Context, pool *pgxpool.Pool, id string) (*mapreduce.Job, error) {
	job, err := mapreduce.NewStore(pool).Job(ctx, id)
	if errors.Is(err, mapreduce.ErrJobNotFound) {
		hint := ""
		if id == "resolve_file" {
			hint = " (resolve_file rows in dead_lettered_items are River-discarded batches: re-publish their files)"
		}
		return nil, exitError{code: ExitRuntime, msg: fmt.Sprintf("no MapReduce job %q%s", id, hint)}
	}
	return job, err
}

func newMapReduceResumeCmd(a *app) *cobra.Command {
	var (
		includeDLQ, wait, asJSON bool
		parallel, maxRetries     int
	)
	cmd := &cobra.Command{
		Use:   "resume JOB_ID",
		Short: "Re-run a MapReduce job's unfinished items (and, optionally, its dead-lettered ones)",
		Long: `Resume first captures into the DLQ any item whose River job ended without its
DLQ write, then re-enqueues the job's unfinished items: pending items with no
River job left to run them (deleted, or lost). Items still queued, running or
waiting for a retry are left alone. With --include-dlq-items the job's
dead-lettered items (status dead_lettered, eligible or not) are put back in
the work queue too; their history goes on from where it stopped.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			pool, err := a.open(ctx, "mapreduce")
			if err != nil {
				return err
			}
			defer pool.Close()
			job, err := loadJob(ctx, pool, args[0])
			if err != nil {
				return err
			}
			if err := worker.SweepMapReduce(ctx, pool, a.logger); err != nil {
				a.logger.WarnContext(ctx, "could not capture discarded items first", "error", err.Error())
			}
			client, err := worker.NewInsertClient(pool, a.cfg, a.logger)
			if err != nil {
				return err
			}
			retries := intOrDefault(maxRetries, -1, job.MaxRetries)
			store, dlq := mapreduce.NewStore(pool), deadletter.NewItemStore(pool, a.logger)
			var unfinished, fromDLQ []string
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var err error
				if unfinished, err = store.UnfinishedTx(ctx, tx, job.ID); err != nil {
					return err
				}
				if includeDLQ {
					if fromDLQ, err = dlq.ClaimAllTx(ctx, tx, job.ID); err != nil {
						return err
					}
				}
				return store.RequeueTx(ctx, tx, client, job, append(append([]string{}, unfinished...), fromDLQ...), retries)
			})
			if err != nil {
				return err
			}
			if len(fromDLQ) > 0 {
				_ = dlq.RecordEvent(ctx, deadletter.DefaultActor(), deadletter.EventItemsReprocessed, len(fromDLQ),
					map[string]any{"job_id": job.ID, "count": len(fromDLQ), "successful": nil, "source": "mapreduce resume"})
			}
			c, err := store.Counts(ctx, job.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stderr, "relay mapreduce: job %s: re-enqueued %d unfinished and %d dead-lettered items; "+
				"%d items already queued or running left alone\n", job.ID, len(unfinished), len(fromDLQ),
				c.Live()-len(unfinished)-len(fromDLQ))
			if !wait {
				return nil
			}
			return waitAndSummarize(ctx, a, pool, job, intOrDefault(parallel, 0, a.cfg.MapReduceParallel), asJSON)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&includeDLQ, "include-dlq-items", false, "put the job's dead-lettered items back in the work queue too")
	f.BoolVar(&wait, "wait", false, "work the items in this process and print the job summary")
	f.IntVar(&parallel, "parallel", 0, "agents run at once with --wait (default --mapreduce-parallel)")
	f.IntVar(&maxRetries, "max-retries", -1, "retries per re-run item (default: the job's)")
	f.BoolVar(&asJSON, "json", false, "with --wait, print the summary as JSON")
	return cmd
}

// joinItemIDs renders ids for messages, eliding after n.
func joinItemIDs(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(", … (%d more)", len(ids)-n)
}
