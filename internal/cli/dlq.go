package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/worker"
)

func newDLQCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Manage dead_lettered_items: list, inspect, analyze, export, purge, retry, stats, clear",
		Long: `The dead-letter queue holds MapReduce work items that failed beyond their
retries (and resolve_file batches River discarded, under job id resolve_file).
An item that is later reprocessed successfully leaves the queue (status
reprocessed) and 'relay dlq clear' deletes its row. docs/dead_lettered_items.md
documents the table, the error types and the policy.`,
	}
	cmd.AddCommand(newDLQListCmd(a), newDLQInspectCmd(a), newDLQAnalyzeCmd(a), newDLQExportCmd(a),
		newDLQPurgeCmd(a), newDLQRetryCmd(a), newDLQStatsCmd(a), newDLQClearCmd(a))
	return cmd
}

// withDLQ opens the pool and runs f with the item store.
func withDLQ(cmd *cobra.Command, a *app, f func(ctx context.Context, pool *pgxpool.Pool, dlq *deadletter.ItemStore) error) error {
	ctx := cmd.Context()
	pool, err := a.open(ctx, "dlq")
	if err != nil {
		return err
	}
	defer pool.Close()
	return f(ctx, pool, deadletter.NewItemStore(pool, a.logger))
}

func printIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newDLQListCmd(a *app) *cobra.Command {
	var (
		jobID    string
		eligible bool
		limit    int
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead-lettered items, most recent failure first",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usageError{fmt.Errorf("--limit %d must be at least 1", limit)}
			}
			return withDLQ(cmd, a, func(ctx context.Context, _ *pgxpool.Pool, dlq *deadletter.ItemStore) error {
				items, total, err := dlq.List(ctx, deadletter.ItemFilter{JobID: jobID, EligibleOnly: eligible}, limit)
				if err != nil {
					return err
				}
				if asJSON {
					return printIndentedJSON(a.out(), struct {
						Total int                            `json:"total"`
						Items []*deadletter.DeadLetteredItem `json:"items"`
					}{total, items})
				}
				tw := tabwriter.NewWriter(a.out(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "JOB\tITEM\tERROR TYPE\tEXIT\tFAILURES\tLAST ATTEMPT (UTC)\tELIGIBLE\tSTATUS\tSIGNATURE")
				for _, it := range items {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", it.JobID, it.ItemID, it.ErrorType, exitCodeText(it.ExitCode),
						it.FailureCount, it.LastAttempt.UTC().Format("2006-01-02 15:04:05"), yesOrNo(it.ReprocessEligible),
						it.Status, truncateRunes(it.ErrorSignature, 60))
				}
				_ = tw.Flush()
				fmt.Fprintf(a.out(), "\n%d of %d items shown\n", len(items), total)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&jobID, "job-id", "", "only this job's items")
	f.BoolVar(&eligible, "eligible", false, "only items eligible for reprocessing")
	f.IntVar(&limit, "limit", 50, "most items to show")
	f.BoolVar(&asJSON, "json", false, "print JSON (full rows)")
	return cmd
}

func exitCodeText(code *int) string {
	if code == nil {
		return "-"
	}
	return strconv.Itoa(*code)
}

func yesOrNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func newDLQInspectCmd(a *app) *cobra.Command {
	var (
		jobID  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "inspect ITEM_ID",
		Short: "Show one dead-lettered item: its data, every attempt, logs, worktree and eligibility",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDLQ(cmd, a, func(ctx context.Context, _ *pgxpool.Pool, dlq *deadletter.ItemStore) error {
				it, err := dlq.Get(ctx, jobID, args[0])
				var amb *deadletter.AmbiguousItemError
				switch {
				case errors.As(err, &amb):
					return usageError{err}
				case errors.Is(err, deadletter.ErrItemNotFound):
					return exitError{code: ExitRuntime, msg: err.Error()}
				case err != nil:
					return err
				}
				if asJSON {
					return printIndentedJSON(a.out(), it)
				}
				printItemInspection(a.out(), it)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&jobID, "job-id", "", "the item's job (needed when several jobs have the item id)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the row as JSON")
	return cmd
}

func printItemInspection(w io.Writer, it *deadletter.DeadLetteredItem) {
	now := time.Now()
	fmt.Fprintf(w, "Item %s of job %s\n", it.ItemID, it.JobID)
	fmt.Fprintf(w, "  status:            %s (dead-lettered %s, %s)\n", it.Status, pluralize(it.DeadLetterCount, "time"), whenAgo(it.DeadLetteredAt, now))
	fmt.Fprintf(w, "  error type:        %s", it.ErrorType)
	if it.ExitCode != nil {
		fmt.Fprintf(w, " (exit code %d)", *it.ExitCode)
	}
	fmt.Fprintf(w, "\n  error signature:   %s\n", it.ErrorSignature)
	fmt.Fprintf(w, "  failures:          %d, from %s to %s\n", it.FailureCount,
		it.FirstAttempt.UTC().Format(time.RFC3339), it.LastAttempt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  reprocess eligible: %s; manual review required: %s\n", yesOrNo(it.ReprocessEligible), yesOrNo(it.ManualReviewRequired))
	if art := it.WorktreeArtifacts; art != nil {
		fmt.Fprintf(w, "  worktree:          %s (kept: %s)\n", art.WorktreePath, yesOrNo(art.Kept))
	}
	data := string(it.ItemData)
	var buf strings.Builder
	if b, err := json.MarshalIndent(json.RawMessage(it.ItemData), "    ", "  "); err == nil {
		data = string(b)
	}
	buf.WriteString(data)
	fmt.Fprintf(w, "  item data:\n    %s\n", buf.String())
	fmt.Fprintf(w, "\nAttempts (%d):\n", len(it.FailureHistory))
	for _, h := range it.FailureHistory {
		fmt.Fprintf(w, "  #%d  %s  %s", h.AttemptNumber, h.Timestamp.UTC().Format(time.RFC3339), h.ErrorType)
		if h.ExitCode != nil {
			fmt.Fprintf(w, " exit %d", *h.ExitCode)
		}
		if h.Signal != "" {
			fmt.Fprintf(w, " (%s)", h.Signal)
		}
		fmt.Fprintf(w, "  %dms  step %s\n", h.DurationMS, h.StepFailed)
		fmt.Fprintf(w, "      %s\n", h.ErrorMessage)
		if h.AgentID != "" {
			fmt.Fprintf(w, "      agent: %s\n", h.AgentID)
		}
		if h.LogLocation != "" {
			fmt.Fprintf(w, "      log: %s\n", h.LogLocation)
		}
		if h.WorktreePath != "" {
			fmt.Fprintf(w, "      worktree: %s\n", h.WorktreePath)
		}
		if tail := strings.TrimSpace(h.StackTrace); tail != "" {
			lines := strings.Split(tail, "\n")
			lines = lines[max(0, len(lines)-5):]
			fmt.Fprintf(w, "      stderr (last %d lines):\n", len(lines))
			for _, l := range lines {
				fmt.Fprintf(w, "        %s\n", l)
			}
		}
	}
}

// parseDLQTime reads --after/--before: RFC 3339, "2006-01-02 15:04" or a date.
func parseDLQTime(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usageError{fmt.Errorf("--%s %q: want a time like 2026-01-21T14:00:00Z, 2026-01-21 14:00 or 2026-01-21 (UTC)", flag, s)}
}

func newDLQAnalyzeCmd(a *app) *cobra.Command {
	var (
		jobID, after, before, export string
		asJSON                       bool
	)
	cmd := &cobra.Command{
		Use:   "analyze",
		Short: "Group dead-lettered items by error signature, error type and hour",
		Long: `Analyze groups the items in the DLQ (optionally one job's, and those whose last
attempt is within --after/--before) by error signature (the normalized error
message: numbers, paths, ids and times replaced), with each group's share,
error type and sample items; then the error type breakdown and the number of
items per hour of their last failure. --export writes the analysis as JSON
to a file too. Each run records an analysis_generated event.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := deadletter.ItemFilter{JobID: jobID}
			var err error
			if f.After, err = parseDLQTime("after", after); err != nil {
				return err
			}
			if f.Before, err = parseDLQTime("before", before); err != nil {
				return err
			}
			return withDLQ(cmd, a, func(ctx context.Context, _ *pgxpool.Pool, dlq *deadletter.ItemStore) error {
				an, err := dlq.Analyze(ctx, f, deadletter.DefaultActor())
				if err != nil {
					return err
				}
				if export != "" {
					if err := writeFileViaTemp(export, func(w io.Writer) error { return printIndentedJSON(w, an) }); err != nil {
						return err
					}
					fmt.Fprintf(a.env.Stderr, "relay dlq: analysis written to %s\n", export)
				}
				if asJSON {
					return printIndentedJSON(a.out(), an)
				}
				printItemAnalysis(a.out(), an)
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&jobID, "job-id", "", "only this job's items")
	fl.StringVar(&after, "after", "", "only items whose last attempt is at or after this time (UTC)")
	fl.StringVar(&before, "before", "", "only items whose last attempt is before this time (UTC)")
	fl.StringVar(&export, "export", "", "also write the analysis as JSON to this file")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printItemAnalysis(w io.Writer, an *deadletter.ItemAnalysis) {
	title := "Failure Analysis"
	if an.JobID != "" {
		title += " for " + an.JobID
	}
	fmt.Fprintf(w, "%s\n%s\n\n", title, strings.Repeat("=", len([]rune(title))))
	fmt.Fprintf(w, "Total Items: %d\n\nError Patterns:\n", an.TotalItems)
	if len(an.PatternGroups) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for i, g := range an.PatternGroups {
		fmt.Fprintf(w, "  Pattern %d: %q (%s, %.0f%%)\n", i+1, truncateRunes(g.Signature, 100), pluralize(g.Count, "item"), 100*g.Share)
		fmt.Fprintf(w, "    Error Type: %s\n    Sample Items: %s\n", g.ErrorType, strings.Join(g.SampleItems, ", "))
	}
	fmt.Fprintf(w, "\nError Types:\n")
	for _, t := range an.ErrorTypes {
		fmt.Fprintf(w, "  %s: %d (%.0f%%)\n", t.ErrorType, t.Count, 100*t.Share)
	}
	fmt.Fprintf(w, "\nTemporal Distribution (UTC, by last attempt):\n")
	for _, h := range an.Temporal {
		fmt.Fprintf(w, "  %s-%s: %s\n", h.Hour.Format("2006-01-02 15:04"), h.Hour.Add(time.Hour).Format("15:04"), pluralize(h.Count, "failure"))
	}
}

// writeFileViaTemp writes path through a temporary file in its directory.
func writeFileViaTemp(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("error creating %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<16)
	if err := write(bw); err != nil {
		tmp.Close()
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	return nil
}

func newDLQExportCmd(a *app) *cobra.Command {
	var jobID, format string
	cmd := &cobra.Command{
		Use:   "export OUTPUT",
		Short: "Export dead-lettered items as JSON (full rows) or CSV (one line per item)",
		Long: `Export writes the items in the DLQ (optionally one job's) to OUTPUT ("-" for
standard output). --format defaults to csv when OUTPUT ends in .csv, else
json. JSON holds full rows with their failure history; CSV has one line per
item with the last failure's message, log and worktree, and item_data as JSON.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := args[0]
			if format == "" {
				format = "json"
				if strings.HasSuffix(strings.ToLower(out), ".csv") {
					format = "csv"
				}
			}
			if format != "json" && format != "csv" {
				return usageError{fmt.Errorf("--format %q must be json or csv", format)}
			}
			return withDLQ(cmd, a, func(ctx context.Context, _ *pgxpool.Pool, dlq *deadletter.ItemStore) error {
				f := deadletter.ItemFilter{JobID: jobID}
				var n int
				write := func(w io.Writer) error {
					var err error
					n, err = dlq.Export(ctx, w, f, format)
					return err
				}
				if out == "-" {
					return write(a.out())
				}
				if err := writeFileViaTemp(out, write); err != nil {
					return err
				}
				fmt.Fprintf(a.out(), "exported %s to %s (%s)\n", pluralize(n, "item"), out, format)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&jobID, "job-id", "", "only this job's items")
	cmd.Flags().StringVar(&format, "format", "", "json or csv (default: from OUTPUT's extension, else json)")
	return cmd
}

// confirmDLQ asks on stderr and reads the answer from stdin.
func confirmDLQ(a *app, question string) (bool, error) {
	fmt.Fprintf(a.env.Stderr, "%s [y/N] ", question)
	line, err := bufio.NewReader(a.env.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes", nil
}

func newDLQPurgeCmd(a *app) *cobra.Command {
	var (
		days  int
		jobID string
		yes   bool
	)
	cmd := &cobra.Command{
		Use:   "purge --older-than-days N",
		Short: "Delete items dead-lettered more than N days ago (asks first unless --yes)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("older-than-days") {
				return usageError{errors.New("--older-than-days is required")}
			}
			if days < 0 {
				return usageError{fmt.Errorf("--older-than-days %d must not be negative", days)}
			}
			cutoff := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
			return withDLQ(cmd, a, func(ctx context.Context, _ *pgxpool.Pool, dlq *deadletter.ItemStore) error {
				n, err := dlq.CountOlderThan(ctx, cutoff, jobID)
				if err != nil {
					return err
				}
				scope := "all jobs"
				if jobID != "" {
					scope = "job " + jobID
				}
				if n == 0 {
					fmt.Fprintf(a.out(), "no items of %s dead-lettered before %s\n", scope, cutoff.UTC().Format(time.RFC3339))
					return nil
				}
				if !yes {
					ok, err := confirmDLQ(a, fmt.Sprintf("Permanently delete %s of %s dead-lettered before %s?",
						pluralize(n, "item"), scope, cutoff.UTC().Format(time.RFC3339)))
					if err != nil {
						return err
					}
					if !ok {
						return exitError{code: ExitRuntime, msg: "purge cancelled; nothing deleted"}
					}
				}
				n, err = dlq.Purge(ctx, cutoff, jobID, fmt.Sprintf("purged: older than %d days", days), deadletter.DefaultActor())
				if err != nil {
					return err
				}
				fmt.Fprintf(a.out(), "purged %s of %s dead-lettered before %s\n", pluralize(n, "item"), scope, cutoff.UTC().Format(time.RFC3339))
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&days, "older-than-days", 0, "delete items dead-lettered more than this many days ago (required)")
	cmd.Flags().StringVar(&jobID, "job-id", "", "only this job's items")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func newDLQRetryCmd(a *app) *cobra.Command {
	var (
		filter               string
		maxRetries, parallel int
		force, wait, asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "retry JOB_ID",
		Short: "Put a job's dead-lettered items back in the work queue",
		Long: `Retry re-enqueues the job's dead-lettered items that are reprocess_eligible
(all of them with --force) and match --filter, a JSONPath predicate that
PostgreSQL evaluates against each row as JSON (jsonb_path_match; the
expression is passed as a parameter, never spliced into SQL). The row's
fields are the dead_lettered_items columns, e.g.:

  --filter '$.error_type == "Timeout"'
  --filter '$.exit_code == 3 && $.failure_count > 2'
  --filter '$.item_data.lang == "go"'
  --filter '$.failure_history[*].error_message like_regex "connection refused"'

Strings take double quotes. Items that now succeed leave the DLQ (status
reprocessed, an item_removed event; 'relay dlq clear' deletes them); items
that fail again stay, with their failure history extended and marked for
manual review. Without --wait a running 'relay worker' works them; with
--wait this process does (--parallel agents at once) and prints how many
succeeded.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxRetries < -1 || maxRetries > 100 {
				return usageError{fmt.Errorf("--max-retries %d must be between 0 and 100", maxRetries)}
			}
			return withDLQ(cmd, a, func(ctx context.Context, pool *pgxpool.Pool, dlq *deadletter.ItemStore) error {
				job, err := loadJob(ctx, pool, args[0])
				if err != nil {
					return err
				}
				client, err := worker.NewInsertClient(pool, a.cfg, a.logger)
				if err != nil {
					return err
				}
				retries := intOrDefault(maxRetries, -1, job.MaxRetries)
				store := mapreduce.NewStore(pool)
				var ids []string
				err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					var err error
					if ids, err = dlq.ClaimForRetryTx(ctx, tx, job.ID, filter, force); err != nil {
						return err
					}
					return store.RequeueTx(ctx, tx, client, job, ids, retries)
				})
				var bad *deadletter.InvalidFilterError
				if errors.As(err, &bad) {
					return usageError{err}
				}
				if err != nil {
					return err
				}
				if len(ids) == 0 {
					what := "eligible dead-lettered items"
					if force {
						what = "dead-lettered items"
					}
					fmt.Fprintf(a.out(), "no %s of job %s match; nothing to retry\n", what, job.ID)
					return nil
				}
				fmt.Fprintf(a.env.Stderr, "relay dlq: retrying %s of job %s (max %d retries): %s\n",
					pluralize(len(ids), "item"), job.ID, retries, joinItemIDs(ids, 10))
				details := map[string]any{"job_id": job.ID, "count": len(ids), "filter": filter, "force": force,
					"max_retries": retries, "successful": nil}
				if !wait {
					_ = dlq.RecordEvent(ctx, deadletter.DefaultActor(), deadletter.EventItemsReprocessed, len(ids), details)
					fmt.Fprintf(a.out(), "enqueued %s; a running 'relay worker' works them ('relay mapreduce status %s')\n",
						pluralize(len(ids), "item"), job.ID)
					return nil
				}
				c, err := workInProcess(ctx, a, pool, job.ID, intOrDefault(parallel, 0, a.cfg.MapReduceParallel))
				if err != nil {
					return err
				}
				ok, err := store.CountSucceeded(ctx, job.ID, ids)
				if err != nil {
					return err
				}
				details["successful"] = ok
				_ = dlq.RecordEvent(ctx, deadletter.DefaultActor(), deadletter.EventItemsReprocessed, len(ids), details)
				if asJSON {
					if err := printIndentedJSON(a.out(), map[string]any{"retried": len(ids), "successful": ok,
						"failed": len(ids) - ok, "items": c}); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(a.out(), "retried %s of job %s: %d succeeded and left the DLQ, %d failed again and stay in it\n",
						pluralize(len(ids), "item"), job.ID, ok, len(ids)-ok)
				}
				if ok < len(ids) {
					return exitError{code: ExitRuntime, msg: fmt.Sprintf("%d of %d retried items failed again; "+
						"see 'relay dlq list --job-id %s'", len(ids)-ok, len(ids), job.ID)}
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&filter, "filter", "", `JSONPath predicate over the row, e.g. '$.error_type == "Timeout"'`)
	f.IntVar(&maxRetries, "max-retries", -1, "retries per item in this run (default: the job's)")
	f.IntVar(&parallel, "parallel", 0, "agents run at once with --wait (default --mapreduce-parallel)")
	f.BoolVar(&force, "force", false, "also retry items that are not reprocess_eligible")
	f.BoolVar(&wait, "wait", false, "work the items in this process and report how many succeeded")
	f.BoolVar(&asJSON, "json", false, "with --wait, print the result as JSON")
	return cmd
}

func newDLQStatsCmd(a *app) *cobra.Command {
	var (
		jobID  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Totals, eligibility, manual review, age range and error types of the DLQ",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDLQ(cmd, a, func(ctx context.Context, _ *pgxpool.Pool, dlq *deadletter.ItemStore) error {
				st, err := dlq.Stats(ctx, jobID)
				if err != nil {
					return err
				}
				if asJSON {
					return printIndentedJSON(a.out(), st)
				}
				printItemStats(a.out(), st, time.Now())
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&jobID, "job-id", "", "only this job's items")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printItemStats(w io.Writer, st *deadletter.ItemStats, now time.Time) {
	title := "DLQ Statistics"
	if st.JobID != "" {
		title += " for " + st.JobID
	}
	fmt.Fprintf(w, "%s\n%s\n\n", title, strings.Repeat("=", len([]rune(title))))
	fmt.Fprintf(w, "Total Items: %d\nReprocess Eligible: %d\nManual Review Required: %d\n", st.Total, st.ReprocessEligible, st.ManualReviewRequired)
	if n := st.ByStatus[string(deadletter.ItemReprocessing)]; n > 0 {
		fmt.Fprintf(w, "Being Reprocessed: %d\n", n)
	}
	if st.Reprocessed > 0 {
		fmt.Fprintf(w, "Reprocessed (awaiting 'relay dlq clear'): %d\n", st.Reprocessed)
	}
	if st.Oldest != nil {
		fmt.Fprintf(w, "\nAge Range:\n  Oldest: %s\n  Newest: %s\n", whenAgo(*st.Oldest, now), whenAgo(*st.Newest, now))
	}
	fmt.Fprintf(w, "\nError Categories:\n")
	if len(st.ErrorTypes) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, t := range st.ErrorTypes {
		fmt.Fprintf(w, "  %s: %d (%.0f%%)\n", t.ErrorType, t.Count, 100*t.Share)
	}
}

func newDLQClearCmd(a *app) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "clear JOB_ID",
		Short: "Delete a job's items that were successfully reprocessed (asks first unless --yes)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			jobID := args[0]
			return withDLQ(cmd, a, func(ctx context.Context, _ *pgxpool.Pool, dlq *deadletter.ItemStore) error {
				n, err := dlq.CountReprocessed(ctx, jobID)
				if err != nil {
					return err
				}
				if n == 0 {
					fmt.Fprintf(a.out(), "no reprocessed items of job %s to clear\n", jobID)
					return nil
				}
				if !yes {
					ok, err := confirmDLQ(a, fmt.Sprintf("Delete %s of job %s that were successfully reprocessed?", pluralize(n, "item"), jobID))
					if err != nil {
						return err
					}
					if !ok {
						return exitError{code: ExitRuntime, msg: "clear cancelled; nothing deleted"}
					}
				}
				if n, err = dlq.Clear(ctx, jobID, deadletter.DefaultActor()); err != nil {
					return err
				}
				fmt.Fprintf(a.out(), "cleared %s of job %s\n", pluralize(n, "reprocessed item"), jobID)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}
