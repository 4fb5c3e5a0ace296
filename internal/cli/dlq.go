package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/internal/termout"
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
documents the table, the error types and the policy. The commands take the
same flags as relay failed: --since/--until, --limit, --json, --format,
--older-than-days, --yes/-y, --actor. Writes (purge, clear, retry) record who
(--actor, default the OS user) in dead_letter_events; reads record nothing.`,
	}
	cmd.AddCommand(newDLQListCmd(a), newDLQInspectCmd(a), newDLQAnalyzeCmd(a), newDLQExportCmd(a),
		newDLQPurgeCmd(a), newDLQRetryCmd(a), newDLQStatsCmd(a), newDLQClearCmd(a))
	return cmd
}

// itemTimeHelp documents --since and --until of the dead_lettered_items
// commands.
var itemTimeHelp = timeRangeHelp("last_attempt, the time of an item's latest failure")

func newDLQListCmd(a *app) *cobra.Command {
	var (
		jobID    string
		eligible bool
		times    timeRange
		limit    int
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead-lettered items, most recent failure first",
		Long:  "List shows dead_lettered_items rows, most recent failure first, one line each.\n\n" + itemTimeHelp,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := items.Filter{JobID: jobID, EligibleOnly: eligible}
			var err error
			if f.Since, f.Until, err = times.parse(time.Now()); err != nil {
				return err
			}
			if err := listLimit(limit, "dlq"); err != nil {
				return err
			}
			return a.withDeadLetters(cmd, "dlq", func(ctx context.Context, dl *deadLetters) error {
				list, total, err := dl.items.List(ctx, f, limit)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(struct {
						Total int           `json:"total"`
						Items []*items.Item `json:"items"`
					}{total, list})
				}
				tw := tabwriter.NewWriter(a.out(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "JOB\tITEM\tERROR TYPE\tEXIT\tFAILURES\tLAST ATTEMPT (UTC)\tELIGIBLE\tSTATUS\tSIGNATURE")
				for _, it := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", termout.String(it.JobID), termout.String(it.ItemID), it.ErrorType, exitCodeText(it.ExitCode),
						it.FailureCount, it.LastAttempt.UTC().Format("2006-01-02 15:04:05"), yesOrNo(it.ReprocessEligible),
						it.Status, oneLine(it.ErrorSignature, 60))
				}
				_ = tw.Flush()
				fmt.Fprintf(a.out(), "\n%d of %d items shown\n", len(list), total)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&jobID, "job-id", "", "only this job's items")
	f.BoolVar(&eligible, "eligible", false, "only items eligible for reprocessing")
	times.register(cmd)
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
			return a.withDeadLetters(cmd, "dlq", func(ctx context.Context, dl *deadLetters) error {
				it, err := dl.items.Get(ctx, jobID, args[0])
				var amb *items.AmbiguousError
				switch {
				case errors.As(err, &amb):
					return usageError{err}
				case errors.Is(err, items.ErrNotFound):
					return exitError{code: ExitRuntime, msg: err.Error()}
				case err != nil:
					return err
				}
				if asJSON {
					return a.printJSON(it)
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

func printItemInspection(w io.Writer, it *items.Item) {
	now := time.Now()
	fmt.Fprintf(w, "Item %s of job %s\n", termout.String(it.ItemID), termout.String(it.JobID))
	fmt.Fprintf(w, "  status:            %s (dead-lettered %s, %s)\n", it.Status, pluralize(it.DeadLetterCount, "time"), whenAgo(it.DeadLetteredAt, now))
	fmt.Fprintf(w, "  error type:        %s", it.ErrorType)
	if it.ExitCode != nil {
		fmt.Fprintf(w, " (exit code %d)", *it.ExitCode)
	}
	fmt.Fprintf(w, "\n  error signature:   %s\n", oneLine(it.ErrorSignature, 0))
	fmt.Fprintf(w, "  failures:          %d, from %s to %s\n", it.FailureCount,
		it.FirstAttempt.UTC().Format(time.RFC3339), it.LastAttempt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  reprocess eligible: %s; manual review required: %s\n", yesOrNo(it.ReprocessEligible), yesOrNo(it.ManualReviewRequired))
	if art := it.WorktreeArtifacts; art != nil {
		fmt.Fprintf(w, "  worktree:          %s (kept: %s)\n", termout.String(art.WorktreePath), yesOrNo(art.Kept))
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
		fmt.Fprintf(w, "      %s\n", oneLine(h.ErrorMessage, 0))
		if h.AgentID != "" {
			fmt.Fprintf(w, "      agent: %s\n", h.AgentID)
		}
		if h.LogLocation != "" {
			fmt.Fprintf(w, "      log: %s\n", termout.String(h.LogLocation))
		}
		if h.WorktreePath != "" {
			fmt.Fprintf(w, "      worktree: %s\n", termout.String(h.WorktreePath))
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

func newDLQAnalyzeCmd(a *app) *cobra.Command {
	var (
		jobID, export string
		times         timeRange
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "analyze",
		Short: "Group dead-lettered items by error signature, error type and hour",
		Long: `Analyze groups the items in the DLQ (optionally one job's, and those whose last
attempt is within --since/--until) by error signature (the normalized error
message: numbers, paths, ids and times replaced), with each group's share,
error type and sample items; then the error type breakdown and the number of
items per hour of their last failure. --export writes the analysis as JSON
to a file too. It only reads: no audit event is recorded.

` + itemTimeHelp,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := items.Filter{JobID: jobID}
			var err error
			if f.Since, f.Until, err = times.parse(time.Now()); err != nil {
				return err
			}
			return a.withDeadLetters(cmd, "dlq", func(ctx context.Context, dl *deadLetters) error {
				an, err := dl.items.Analyze(ctx, f)
				if err != nil {
					return err
				}
				if export != "" {
					if err := writeOutput(export, a.dataOut(), func(w io.Writer) error { return encodeJSON(w, an) }); err != nil {
						return err
					}
					fmt.Fprintf(a.env.Stderr, "relay dlq: analysis written to %s\n", export)
				}
				if asJSON {
					return a.printJSON(an)
				}
				printItemAnalysis(a.out(), an)
				return nil
			})
		},
	}
	fl := cmd.Flags()
	// pflag prints "Flag --after has been deprecated" to the flag set's
	// output: standard error, not standard output where --json goes.
	fl.SetOutput(a.env.Stderr)
	fl.StringVar(&jobID, "job-id", "", "only this job's items")
	times.register(cmd)
	fl.StringVar(&times.since, "after", "", "the same as --since")
	fl.StringVar(&times.until, "before", "", "the same as --until")
	_ = cmd.Flags().MarkDeprecated("after", "use --since")
	_ = cmd.Flags().MarkDeprecated("before", "use --until")
	fl.StringVar(&export, "export", "", "also write the analysis as JSON to this file")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printItemAnalysis(w io.Writer, an *items.Report) {
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
		fmt.Fprintf(w, "    Error Type: %s\n    Sample Items: %s\n", g.ErrorType, termout.String(strings.Join(g.SampleItems, ", ")))
	}
	fmt.Fprintf(w, "\nError Types:\n")
	for _, t := range an.ErrorTypes {
		fmt.Fprintf(w, "  %s: %d (%.0f%%)\n", t.ErrorType, t.Count, 100*t.Share)
	}
	fmt.Fprintf(w, "\nTemporal Distribution (UTC, by last attempt):\n")
	for _, h := range an.Temporal {
		fmt.Fprintf(w, "  %s-%s: %s\n", h.Hour.Format("2006-01-02 15:04"), h.Hour.Add(time.Hour).Format("15:04"), pluralize(int(h.Count), "failure"))
	}
}

func newDLQExportCmd(a *app) *cobra.Command {
	var (
		jobID string
		times timeRange
		ef    exportFlags
	)
	cmd := &cobra.Command{
		Use:   "export FILE",
		Short: "Stream dead-lettered items to a CSV, JSON Lines or JSON file (FILE '-' is stdout)",
		Long: `Export writes the items in the DLQ (optionally one job's) to FILE, ordered by
job and id, reading the table in pages. JSON Lines and JSON hold full rows
with their failure history; CSV has one line per item with the last
failure's message, log and worktree, and item_data as JSON text.

` + exportHelp + `

` + itemTimeHelp,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := items.Filter{JobID: jobID}
			var err error
			if f.Since, f.Until, err = times.parse(time.Now()); err != nil {
				return err
			}
			return runExport(a, cmd, "dlq", args[0], &ef, func(dl *deadLetters) rowExport[*items.Item] {
				return rowExport[*items.Item]{noun: "item", columns: itemColumns, record: itemRecord,
					stream: func(ctx context.Context, fn func(*items.Item) error) (int64, error) {
						return dl.items.Export(ctx, f, ef.limit, fn)
					}}
			})
		},
	}
	cmd.Flags().StringVar(&jobID, "job-id", "", "only this job's items")
	times.register(cmd)
	ef.register(cmd)
	return cmd
}

// itemColumns is the CSV header of a dead_lettered_items export: one row
// per item, the last failure flattened, item_data as JSON text.
var itemColumns = []string{"job_id", "item_id", "status", "error_type", "exit_code", "failure_count", "error_signature",
	"last_error_message", "first_attempt", "last_attempt", "dead_lettered_at", "reprocess_eligible",
	"manual_review_required", "log_location", "worktree_path", "item_data"}

// itemRecord is it's CSV record.
func itemRecord(it *items.Item) []string {
	exit, msg, logLoc, worktree := "", "", "", ""
	if it.ExitCode != nil {
		exit = strconv.Itoa(*it.ExitCode)
	}
	if last := it.LastFailure(); last != nil {
		msg, logLoc = last.ErrorMessage, last.LogLocation
	}
	if it.WorktreeArtifacts != nil {
		worktree = it.WorktreeArtifacts.WorktreePath
	}
	return []string{it.JobID, it.ItemID, string(it.Status), string(it.ErrorType), exit, strconv.Itoa(it.FailureCount),
		it.ErrorSignature, msg, csvTime(it.FirstAttempt), csvTime(it.LastAttempt), csvTime(it.DeadLetteredAt),
		strconv.FormatBool(it.ReprocessEligible), strconv.FormatBool(it.ManualReviewRequired), logLoc, worktree,
		string(it.ItemData)}
}

func newDLQPurgeCmd(a *app) *cobra.Command {
	var (
		pf    purgeFlags
		jobID string
	)
	cmd := &cobra.Command{
		Use:   "purge --older-than-days N [--job-id ID] [--yes]",
		Short: "Delete items dead-lettered more than N days ago (asks first unless --yes)",
		Long: `Purge deletes dead_lettered_items rows dead-lettered more than
--older-than-days days ago (of one --job-id, or of every job). It says how
many it would delete and asks for confirmation on a terminal; when standard
input is not a terminal it refuses (exit 1) unless --yes (-y). One audit
event (item_removed) records the run and --actor.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			age, err := pf.age()
			if err != nil {
				return err
			}
			cutoff := time.Now().Add(-age)
			scope := "all jobs"
			if jobID != "" {
				scope = "job " + jobID
			}
			what := func(n int64) string {
				return fmt.Sprintf("%s of %s dead-lettered before %s", pluralize(int(n), "item"), scope, cutoff.UTC().Format(time.RFC3339))
			}
			return a.withDeadLetters(cmd, "dlq", func(ctx context.Context, dl *deadLetters) error {
				return a.runDeletion(deletion{
					yes: pf.yes, asJSON: pf.asJSON, actor: pf.actor, key: "purged",
					count: func() (int64, error) {
						n, err := dl.items.CountOlderThan(ctx, cutoff, jobID)
						return int64(n), err
					},
					ask: func(n int64) confirmation {
						return confirmation{command: "purge", effect: "would delete " + what(n), undone: "deleted",
							question: "Permanently delete " + what(n) + "?"}
					},
					remove: func(actor string) (int64, error) {
						n, err := dl.items.Purge(ctx, cutoff, jobID, fmt.Sprintf("purged: older than %d days", pf.days), actor)
						return int64(n), err
					},
					none: fmt.Sprintf("no items of %s dead-lettered before %s", scope, cutoff.UTC().Format(time.RFC3339)),
					done: func(n int64) string { return "purged " + what(n) },
				})
			})
		},
	}
	pf.register(cmd, "delete items dead-lettered")
	cmd.Flags().StringVar(&jobID, "job-id", "", "only this job's items")
	return cmd
}

func newDLQRetryCmd(a *app) *cobra.Command {
	var (
		filter, actor        string
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
succeeded.

A fix may be a variable the agents lacked: --agent-env NAME (from relay's
environment) or --agent-env NAME=VALUE (repeatable) adds it, and the job
records its name (never its value) so that every later run of its agents is
given it too. relay never stores values, so with --wait each variable the
job already records (see 'relay mapreduce status') must be given again, or
retry refuses to start; without --wait 'relay worker' must give them all
(its agent_env), and a VALUE here is refused: it would reach no agent.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxRetries < -1 || maxRetries > 100 {
				return usageError{fmt.Errorf("--max-retries %d must be between 0 and 100", maxRetries)}
			}
			return a.withDeadLetters(cmd, "dlq", func(ctx context.Context, dl *deadLetters) error {
				pool, dlq := dl.pool, dl.items
				job, err := loadJob(ctx, pool, args[0])
				if err != nil {
					return err
				}
				agents, err := agentsFor(cmd, a, job, wait)
				if err != nil {
					return err
				}
				client, err := worker.NewInsertClient(pool, worker.ConfigFrom(a.cfg), a.logger)
				if err != nil {
					return err
				}
				retries := intOrDefault(maxRetries, -1, job.MaxRetries)
				store := mapreduce.NewStore(pool)
				ids, err := store.RetryDeadLettered(ctx, dlq, client, job, filter, force, retries)
				var bad *items.InvalidFilterError
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
				fmt.Fprintf(a.env.Stderr, "relay dlq: retrying %s of job %s (max %d retries%s): %s\n",
					pluralize(len(ids), "item"), job.ID, retries, agentEnvNote(job.AgentEnv), joinItemIDs(ids, 10))
				details := map[string]any{"job_id": job.ID, "count": len(ids), "filter": filter, "force": force,
					"max_retries": retries, "successful": nil, "agent_env": job.AgentEnv}
				if !wait {
					_ = dlq.RecordEvent(ctx, actorOr(actor), items.EventItemsReprocessed, len(ids), details)
					fmt.Fprintf(a.out(), "enqueued %s; a running 'relay worker' works them ('relay mapreduce status %s')\n",
						pluralize(len(ids), "item"), job.ID)
					return nil
				}
				c, err := workInProcess(ctx, a, pool, job.ID, agents, intOrDefault(parallel, 0, a.cfg.MapReduceParallel))
				if err != nil {
					return err
				}
				ok, err := store.CountSucceeded(ctx, job.ID, ids)
				if err != nil {
					return err
				}
				details["successful"] = ok
				_ = dlq.RecordEvent(ctx, actorOr(actor), items.EventItemsReprocessed, len(ids), details)
				if asJSON {
					if err := a.printJSON(map[string]any{"retried": len(ids), "successful": ok,
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
	actorFlag(cmd, &actor)
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
			return a.withDeadLetters(cmd, "dlq", func(ctx context.Context, dl *deadLetters) error {
				st, err := dl.items.Stats(ctx, jobID)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(st)
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

func printItemStats(w io.Writer, st *items.Stats, now time.Time) {
	title := "DLQ Statistics"
	if st.JobID != "" {
		title += " for " + st.JobID
	}
	fmt.Fprintf(w, "%s\n%s\n\n", title, strings.Repeat("=", len([]rune(title))))
	fmt.Fprintf(w, "Total Items: %d\nReprocess Eligible: %d\nManual Review Required: %d\n", st.Total, st.ReprocessEligible, st.ManualReviewRequired)
	if n := st.ByStatus[string(items.StatusReprocessing)]; n > 0 {
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
	var (
		yes, asJSON bool
		actor       string
	)
	cmd := &cobra.Command{
		Use:   "clear JOB_ID [--yes]",
		Short: "Delete a job's items that were successfully reprocessed (asks first unless --yes)",
		Long: `Clear deletes the job's dead_lettered_items rows that were successfully
reprocessed (status reprocessed: they have left the DLQ). It asks for
confirmation on a terminal; when standard input is not a terminal it refuses
(exit 1) unless --yes (-y). One audit event (item_removed) records the run
and --actor.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			jobID := args[0]
			return a.withDeadLetters(cmd, "dlq", func(ctx context.Context, dl *deadLetters) error {
				return a.runDeletion(deletion{
					yes: yes, asJSON: asJSON, actor: actor, key: "cleared",
					count: func() (int64, error) {
						n, err := dl.items.CountReprocessed(ctx, jobID)
						return int64(n), err
					},
					ask: func(n int64) confirmation {
						what := fmt.Sprintf("%s of job %s that were successfully reprocessed", pluralize(int(n), "item"), jobID)
						return confirmation{command: "clear", effect: "would delete " + what, undone: "deleted",
							question: "Delete " + what + "?"}
					},
					remove: func(actor string) (int64, error) {
						n, err := dl.items.Clear(ctx, jobID, actor)
						return int64(n), err
					},
					none: fmt.Sprintf("no reprocessed items of job %s to clear", jobID),
					done: func(n int64) string {
						return fmt.Sprintf("cleared %s of job %s", pluralize(int(n), "reprocessed item"), jobID)
					},
				})
			})
		},
	}
	yesFlag(cmd, &yes)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	actorFlag(cmd, &actor)
	return cmd
}
