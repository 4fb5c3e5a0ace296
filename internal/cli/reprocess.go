package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/termout"
	"github.com/relay-dev/relay/worker"
)

func newReprocessCmd(a *app) *cobra.Command {
	var (
		ff            filterFlags
		limit         int64
		dryRun        bool
		rate          string
		yes           bool
		asJSON        bool
		actor         string
		includeManual bool
		chunk         int
	)
	cmd := &cobra.Command{
		Use:   "reprocess --status S [filters] [--dry-run] [--rate N/s] [--yes]",
		Short: "Put failed POIs back through the pipeline, one resolve_file job per file",
		Long: `Reprocess selects failed_pois rows by --status and filters and re-enqueues
their POIs: one resolve_file job per file, carrying each row's
original_poi_data as it is now (correct a row with SQL first if its data was
wrong). Rows move to reprocessing in the same transaction that inserts their
jobs, a chunk of rows at a time, so an interrupted run leaves nothing half
done: run the same command again to continue. A second run of a finished one
enqueues nothing.

When a job has run, each row becomes reprocessed (the POI resolved) or goes
back to new with attempts + 1 and the new error appended to error_history.
A row whose failed reprocesses reach reprocess_max_attempts is flagged
manual_review_required and is skipped from then on unless
--include-manual-review is given.

--status reprocessing takes only stuck rows: rows whose job will never report
back (River discarded or cancelled it, or it was deleted). --status ignored
brings ignored rows back deliberately.

--dry-run prints what would be enqueued, per file and per signature, and
changes nothing. Without --yes (-y), reprocess shows the same summary and asks
for confirmation on a terminal; when standard input is not a terminal it
refuses (exit 1). Progress goes to standard error. Every run is
recorded in dead_letter_events (action reprocess).

` + timeFlagHelp,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ff.status == "" {
				return usageError{errors.New("--status is required (new, reprocessing, reprocessed or ignored)")}
			}
			f, err := ff.filter(time.Now())
			if err != nil {
				return err
			}
			if f.Status == failed.StatusSuperseded {
				return usageError{errors.New("--status superseded: superseded rows cannot be reprocessed " +
					"(each is of a version of its file that was replaced, or of a file that is gone)")}
			}
			if limit < 0 {
				return usageError{fmt.Errorf("--limit %d must not be negative", limit)}
			}
			perSecond, err := parseRate(rate)
			if err != nil {
				return usageError{fmt.Errorf("--rate: %w", err)}
			}
			if chunk < 1 || chunk > 10000 {
				return usageError{fmt.Errorf("--chunk-size %d must be between 1 and 10000", chunk)}
			}
			sel := failed.Selection{Filter: f, Limit: limit, IncludeManualReview: includeManual}
			ctx := cmd.Context()
			pool, err := a.open(ctx, "reprocess")
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := a.requireRepository(ctx, pool, f.Repository); err != nil {
				return err
			}
			client, err := worker.NewInsertClient(pool, worker.ConfigFrom(a.cfg), a.logger)
			if err != nil {
				return err
			}
			r := failed.NewReprocessor(pool, client, &failed.ReprocessConfig{ChunkSize: chunk, RowsPerSecond: perSecond,
				MaxAttempts: a.cfg.MaxAttempts, MaxJobBytes: a.cfg.MaxJobBytes}, a.logger)

			if dryRun || !yes {
				plan, err := r.Plan(ctx, sel, 20)
				if err != nil {
					return err
				}
				if dryRun {
					if asJSON {
						return a.printJSON(plan)
					}
					printPlan(a.out(), plan)
					fmt.Fprintln(a.out(), "dry run: nothing changed")
					return nil
				}
				if plan.Rows == 0 {
					return reportReprocess(a, asJSON, &failed.ReprocessResult{})
				}
				printPlan(a.env.Stderr, plan)
				if err := a.confirm(confirmation{command: "reprocess", effect: fmt.Sprintf("would enqueue %d rows of %d files", plan.Rows, plan.Files),
					undone: "changed", question: fmt.Sprintf("Reprocess %d rows of %d files?", plan.Rows, plan.Files)}); err != nil {
					return err
				}
			}
			res, err := r.Run(ctx, sel, actorOr(actor), progressPrinter(a.env.Stderr))
			if err != nil {
				if res != nil && errors.Is(err, context.Canceled) {
					return exitError{code: ExitRuntime, msg: fmt.Sprintf(
						"interrupted after %d rows in %d jobs (committed); run the same command again to continue", res.Rows, res.Jobs)}
				}
				if res != nil && res.Rows > 0 {
					return fmt.Errorf("%w (%d rows in %d jobs were enqueued before it; run the same command again to continue)", err, res.Rows, res.Jobs)
				}
				return err
			}
			return reportReprocess(a, asJSON, res)
		},
	}
	ff.register(cmd, "rows in this status (required): new, reprocessing (stuck rows only), reprocessed or ignored")
	cmd.Flags().Int64Var(&limit, "limit", 0, "reprocess at most this many rows (0: all)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be enqueued, per file and per signature, and change nothing")
	cmd.Flags().StringVar(&rate, "rate", "", "at most this many rows per second, e.g. 500/s (default: unlimited)")
	yesFlag(cmd, &yes)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&includeManual, "include-manual-review", false, "also take rows flagged manual_review_required")
	cmd.Flags().IntVar(&chunk, "chunk-size", failed.ReprocessChunkSizeDefault, "rows per transaction")
	actorFlag(cmd, &actor)
	return cmd
}

func reportReprocess(a *app, asJSON bool, res *failed.ReprocessResult) error {
	if asJSON {
		return a.printJSON(res)
	}
	if res.Superseded > 0 {
		fmt.Fprintf(a.out(), "reprocess superseded %d rows instead: their file was published again since their version, "+
			"or is gone (relay failed list --status superseded)\n", res.Superseded)
	}
	if res.Rows == 0 {
		fmt.Fprintln(a.out(), "nothing to reprocess")
		return nil
	}
	fmt.Fprintf(a.out(), "reprocess enqueued %d rows in %d resolve_file jobs (%d chunks, %s, audit event %d)\n",
		res.Rows, res.Jobs, res.Chunks, res.Duration.Round(time.Millisecond), res.EventID)
	return nil
}

// parseRate reads "500", "500/s", "30000/m", "100/h", "10/d" or ""
// (unlimited) as rows per second.
func parseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	num, unit, _ := strings.Cut(s, "/")
	per := time.Second
	switch unit {
	case "", "s":
	case "m":
		per = time.Minute
	case "h":
		per = time.Hour
	case "d":
		per = 24 * time.Hour
	default:
		return 0, fmt.Errorf("%q: the unit must be /s, /m, /h or /d", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || v <= 0 {
		return 0, fmt.Errorf("%q must be a positive number of rows, e.g. 500/s", s)
	}
	perSecond := v / per.Seconds()
	if perSecond < minRate || perSecond > maxRate || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q must be between 1/d and %.0f/s", s, maxRate)
	}
	return perSecond, nil
}

// The range of --rate, in rows per second: from one row a day to ten
// million rows a second, so the pause between chunks is a finite duration.
const (
	minRate = 1.0 / 86400
	maxRate = 1e7
)

func printPlan(w io.Writer, p *failed.ReprocessPlan) {
	fmt.Fprintf(w, "would reprocess %d rows of %d files (about %d resolve_file jobs), %d signatures\n", p.Rows, p.Files, p.Files, p.Signatures)
	if p.Rows == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nROWS\tFILE")
	for _, g := range p.ByFile {
		fmt.Fprintf(tw, "%d\t%s\n", g.Count, termout.String(g.Key))
	}
	if n := p.Files - int64(len(p.ByFile)); n > 0 {
		fmt.Fprintf(tw, "\t(%d more files)\n", n)
	}
	fmt.Fprintln(tw, "\nROWS\tSIGNATURE")
	for _, g := range p.BySignature {
		fmt.Fprintf(tw, "%d\t%s\n", g.Count, oneLine(g.Key, 120))
	}
	if n := p.Signatures - int64(len(p.BySignature)); n > 0 {
		fmt.Fprintf(tw, "\t(%d more signatures)\n", n)
	}
	_ = tw.Flush()
}

// progressPrinter reports progress on w at most once a second, and at the
// end.
func progressPrinter(w io.Writer) func(failed.ReprocessProgress) {
	var last time.Time
	return func(p failed.ReprocessProgress) {
		if time.Since(last) < time.Second && p.Rows < p.Total {
			return
		}
		last = time.Now()
		rate := float64(p.Rows) / max(p.Elapsed.Seconds(), 1e-3)
		fmt.Fprintf(w, "reprocess: %d/%d rows, %d jobs, %.0f rows/s\n", p.Rows, p.Total, p.Jobs, rate)
	}
}
