package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/internal/liveness"
	"github.com/relay-dev/relay/internal/ops"
	"github.com/relay-dev/relay/internal/termout"
)

func newStatusCmd(a *app) *cobra.Command {
	var (
		asJSON  bool
		minutes int
		repo    repositoryFlag
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "One screen: queue depth, recent throughput, dead-letter depth, top error signatures",
		Long: `Status shows on one screen the River queues and the SQL publish queue, the
throughput of the last --minutes minutes, the dead letters (failed_pois by
status, dead_lettered_items, rejected_analyses), the top error signatures of
new failed POIs, failed POIs per hour over the last 24 hours, and the live
workers.

--repository NAME restricts what belongs to a repository to that one (""
selects the default repository): the failed POIs (their counts by status,
the oldest new one, the POIs dead-lettered per minute, the top signatures and
the failures per hour) and the rejected analyses, counted from their rows.
Queue depth, jobs completed and discarded, freshness, workers and
dead_lettered_items (MapReduce items, of no repository) stay those of every
repository: River's tables are shared by all repositories.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if minutes < 1 || minutes > 1440 {
				return usageError{fmt.Errorf("--minutes %d must be between 1 and 1440", minutes)}
			}
			ctx := cmd.Context()
			pool, err := a.open(ctx, "status")
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := a.requireRepository(ctx, pool, repo.value()); err != nil {
				return err
			}
			var (
				st  *ops.State
				act *ops.Activity
			)
			if r := repo.value(); r != nil {
				if st, err = ops.RepositorySnapshot(ctx, pool, *r); err == nil {
					act, err = ops.RepositoryActivity(ctx, pool, *r, minutes, 5)
				}
			} else if st, err = ops.Snapshot(ctx, pool); err == nil {
				act, err = ops.RecentActivity(ctx, pool, minutes, 5)
			}
			if err != nil {
				return err
			}
			workers, err := liveness.LiveWorkers(ctx, pool, a.cfg.WorkerHeartbeatTimeout)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(struct {
					State    *ops.State            `json:"state"`
					Activity *ops.Activity         `json:"activity"`
					Workers  []liveness.LiveWorker `json:"workers"`
				}{st, act, workers})
			}
			printStatus(a.out(), st, act)
			printWorkers(a.out(), workers)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&minutes, "minutes", 10, "throughput window in minutes")
	cmd.Flags().Var(&repo, "repository",
		`show this repository's failed POIs and rejected analyses only ("" selects the default repository); queues stay global`)
	return cmd
}

func printStatus(w io.Writer, st *ops.State, act *ops.Activity) {
	// With a repository, each section says whose it is: the dead letters
	// are the repository's, the queues and jobs every repository's.
	of, shared, all, fresh := "", "", "", ""
	if st.Repository != nil {
		of, shared, all, fresh = " of "+repositoryName(*st.Repository), " (all repositories: River's tables are shared)",
			" (all repositories)", ", all repositories"
		fmt.Fprintf(w, "relay status at %s, failed POIs and rejected analyses%s\n\n", st.At.UTC().Format(time.RFC3339), of)
	} else {
		fmt.Fprintf(w, "relay status at %s\n\n", st.At.UTC().Format(time.RFC3339))
	}

	fmt.Fprintln(w, "QUEUES"+shared)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  QUEUE\tSTATE\tJOBS")
	if len(st.Jobs) == 0 {
		fmt.Fprintln(tw, "  (no jobs)\t\t")
	}
	for _, j := range st.Jobs {
		fmt.Fprintf(tw, "  %s\t%s\t%d\n", j.Queue, j.State, j.Count)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "  "+publishQueueLine(st.PublishQueue, st.At))

	var done, discarded, failed int64
	for _, m := range act.PerMinute {
		done += m.JobsCompleted
		discarded += m.JobsDiscarded
		failed += m.POIsFailed
	}
	mins := len(act.PerMinute)
	fmt.Fprintf(w, "\nTHROUGHPUT (last %d min)\n  %d jobs completed (%.1f/min), %d discarded%s, %d POIs%s dead-lettered\n",
		mins, done, float64(done)/float64(max(mins, 1)), discarded, all, failed, of)
	if f := act.Freshness; f.Jobs > 0 {
		fmt.Fprintf(w, "  freshness (publish to final relationships%s): p50 %s, p99 %s over %d publishes\n",
			fresh, f.P50(), f.P99(), f.Jobs)
	}

	fmt.Fprintln(w, "\nDEAD LETTERS"+of)
	fmt.Fprintf(w, "  failed_pois:          new %d, reprocessing %d, reprocessed %d, ignored %d, superseded %d\n",
		st.FailedPOIs["new"], st.FailedPOIs["reprocessing"], st.FailedPOIs["reprocessed"], st.FailedPOIs["ignored"],
		st.FailedPOIs["superseded"])
	if st.OldestNewFailedPOI != nil {
		fmt.Fprintf(w, "  oldest new failed POI: %s ago\n", st.At.Sub(*st.OldestNewFailedPOI).Round(time.Second))
	}
	fmt.Fprintf(w, "  dead_lettered_items:  dead_lettered %d, reprocessing %d, reprocessed %d, ignored %d",
		st.DeadLetteredItems["dead_lettered"], st.DeadLetteredItems["reprocessing"], st.DeadLetteredItems["reprocessed"], st.DeadLetteredItems["ignored"])
	if st.Repository != nil {
		fmt.Fprint(w, " (MapReduce items: of no repository)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  rejected_analyses:    %d (relay outbox rejected)\n", st.PublishQueue.Rejected)

	fmt.Fprintf(w, "\nTOP ERROR SIGNATURES (new failed POIs%s)\n", of)
	if len(act.TopSignatures) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range act.TopSignatures {
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", s.Count, s.ErrorClass, truncateRunes(s.Signature, 90))
	}
	_ = tw.Flush()

	fmt.Fprintf(w, "\nFAILED POIS PER HOUR (last 24h, UTC)%s\n", of)
	var peak int64
	for _, h := range act.FailuresPerHour {
		peak = max(peak, h.Count)
	}
	for _, h := range act.FailuresPerHour {
		bar := ""
		if peak > 0 {
			bar = strings.Repeat("#", int((h.Count*40+peak-1)/peak))
		}
		fmt.Fprintf(w, "  %s  %-40s %d\n", h.Hour.UTC().Format("01-02 15:00"), bar, h.Count)
	}
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func printWorkers(w io.Writer, workers []liveness.LiveWorker) {
	fmt.Fprintln(w, "\nWORKERS (live: heartbeat within worker_heartbeat_timeout)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  HOST\tPID\tSINCE\tBATCHES RUNNING\tCLIENT")
	if len(workers) == 0 {
		fmt.Fprintln(tw, "  (none)\t\t\t\t")
	}
	for _, wk := range workers {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%s\n", termout.String(wk.Host), wk.PID, wk.Since.UTC().Format(time.RFC3339),
			wk.BatchesRunning, termout.String(wk.ClientID))
	}
	_ = tw.Flush()
}

// publishQueueLine describes the SQL publish API's queue in one line.
func publishQueueLine(q ops.PublishQueue, at time.Time) string {
	line := fmt.Sprintf("SQL publish queue (relay_publish): %d queued", q.Queued)
	if q.OldestQueued != nil {
		line += fmt.Sprintf(", oldest %s ago", max(0, at.Sub(*q.OldestQueued)).Round(time.Millisecond))
	}
	return line
}
