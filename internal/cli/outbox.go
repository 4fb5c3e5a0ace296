package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/deadletter/rejected"
	"github.com/relay-dev/relay/internal/ops"
	"github.com/relay-dev/relay/internal/termout"
)

func newOutboxCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "outbox",
		Short: "The SQL publish API's queue and rejected analyses: status, rejected, retry, purge",
		Long: `relay_publish(analysis jsonb) and relay_publish_many(analyses jsonb), which
any language calls inside its own transaction (README.md, "Publishing from
any language"), queue each analysis in publish_queue; relay worker publishes
them. An analysis the publisher rejects then (a POI id another file owns, a
POI above max_poi_bytes) moves to rejected_analyses with the reason: fix the
cause, then 'relay outbox retry'.`,
	}
	cmd.AddCommand(newOutboxStatusCmd(a), newOutboxRejectedCmd(a), newOutboxRetryCmd(a), newOutboxPurgeCmd(a))
	return cmd
}

func newOutboxStatusCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "How many analyses are queued (and the oldest's age) and rejected",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withDeadLetters(cmd, "outbox", func(ctx context.Context, dl *deadLetters) error {
				st, err := ops.Snapshot(ctx, dl.pool)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(st.PublishQueue)
				}
				fmt.Fprintln(a.out(), publishQueueLine(st.PublishQueue, st.At))
				fmt.Fprintf(a.out(), "rejected analyses: %d\n", st.PublishQueue.Rejected)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newOutboxRejectedCmd(a *app) *cobra.Command {
	var (
		fileID string
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "rejected",
		Short: "List rejected analyses, most recent first",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := listLimit(limit, "outbox"); err != nil {
				return err
			}
			return a.withDeadLetters(cmd, "outbox", func(ctx context.Context, dl *deadLetters) error {
				list, total, err := rejected.New(dl.pool).List(ctx, fileID, limit)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(struct {
						Total    int                   `json:"total"`
						Analyses []*rejected.Rejection `json:"analyses"`
					}{total, list})
				}
				tw := tabwriter.NewWriter(a.out(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tFILE\tPOI\tREJECTED (UTC)\tATTEMPTS\tREASON")
				for _, r := range list {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", r.ID, termout.String(r.FileID), termout.String(r.POIID),
						r.RejectedAt.UTC().Format("2006-01-02 15:04:05"), r.Attempts, termout.String(oneLine(r.Reason, 100)))
				}
				_ = tw.Flush()
				fmt.Fprintf(a.out(), "\n%d of %d rejected analyses shown (--json prints each analysis whole)\n", len(list), total)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&fileID, "file", "", "only this file's analyses")
	f.IntVar(&limit, "limit", 50, "most analyses to show")
	f.BoolVar(&asJSON, "json", false, "print JSON (full rows, each analysis whole)")
	return cmd
}

// rejectedIDs parses the ids given, or reads every id with --all.
func rejectedIDs(ctx context.Context, store *rejected.Store, args []string, all bool) ([]int64, error) {
	if all == (len(args) > 0) {
		return nil, usageError{errors.New("give the ids of rejected analyses, or --all")}
	}
	if all {
		return store.IDs(ctx)
	}
	ids := make([]int64, len(args))
	for i, s := range args {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return nil, usageError{fmt.Errorf("%q is not the id of a rejected analysis (a positive integer; relay outbox rejected lists them)", s)}
		}
		ids[i] = id
	}
	return ids, nil
}

func newOutboxRetryCmd(a *app) *cobra.Command {
	var all, force, asJSON bool
	cmd := &cobra.Command{
		Use:   "retry ID... | --all",
		Short: "Publish rejected analyses again, after fixing what rejected them",
		Long: `Retry publishes each rejected analysis again, each in its own transaction:
a published one leaves rejected_analyses, one rejected again stays with the
new reason. An analysis whose file was published again after it was
rejected (or has a newer analysis queued) is left alone, since publishing it
would replace newer POIs with older ones, unless --force. Exit 1 when any
was rejected again or left alone.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withDeadLetters(cmd, "outbox", func(ctx context.Context, dl *deadLetters) error {
				store := rejected.New(dl.pool)
				ids, err := rejectedIDs(ctx, store, args, all)
				if err != nil {
					return err
				}
				pub, err := a.publisher(dl.pool)
				if err != nil {
					return err
				}
				start, last := time.Now(), time.Now()
				var outcomes []rejected.Outcome
				for i, id := range ids {
					o, err := store.Retry(ctx, pub, []int64{id}, force)
					outcomes = append(outcomes, o...)
					if err != nil {
						return err
					}
					if time.Since(last) > 5*time.Second {
						a.logger.Info("retrying rejected analyses", slog.Int("done", i+1), slog.Int("of", len(ids)),
							slog.Duration("elapsed", time.Since(start).Round(time.Second)))
						last = time.Now()
					}
				}
				counts := map[string]int{}
				for _, o := range outcomes {
					counts[o.Result]++
				}
				if asJSON {
					if err := a.printJSON(struct {
						Outcomes []rejected.Outcome `json:"outcomes"`
						Counts   map[string]int     `json:"counts"`
					}{outcomes, counts}); err != nil {
						return err
					}
				} else {
					for _, o := range outcomes {
						line := fmt.Sprintf("%d %s: %s", o.ID, termout.String(o.FileID), o.Result)
						if o.Reason != "" {
							line += ": " + termout.String(o.Reason)
						}
						if len(o.JobIDs) > 0 {
							line += fmt.Sprintf(" (jobs %v)", o.JobIDs)
						}
						fmt.Fprintln(a.out(), line)
					}
					fmt.Fprintf(a.out(), "%d published, %d rejected again, %d superseded, %d missing\n",
						counts[rejected.Published], counts[rejected.Rejected], counts[rejected.Superseded], counts[rejected.Missing])
				}
				if n := counts[rejected.Rejected] + counts[rejected.Superseded] + counts[rejected.Missing]; n > 0 {
					return exitError{code: ExitRuntime, msg: fmt.Sprintf("%d of %d rejected analyses were not published", n, len(outcomes))}
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "retry every rejected analysis")
	f.BoolVar(&force, "force", false, "publish even an analysis a later publish of its file superseded")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newOutboxPurgeCmd(a *app) *cobra.Command {
	var all, yes, asJSON bool
	cmd := &cobra.Command{
		Use:   "purge ID... | --all [--yes]",
		Short: "Delete rejected analyses (asks first unless --yes)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withDeadLetters(cmd, "outbox", func(ctx context.Context, dl *deadLetters) error {
				store := rejected.New(dl.pool)
				if all == (len(args) > 0) {
					return usageError{errors.New("give the ids of rejected analyses, or --all")}
				}
				var ids []int64 // nil: all
				if !all {
					var err error
					if ids, err = rejectedIDs(ctx, store, args, false); err != nil {
						return err
					}
				}
				what := func(n int64) string { return analysesCount(n) }
				return a.runDeletion(deletion{
					yes: yes, asJSON: asJSON, key: "purged",
					count: func() (int64, error) { return store.Count(ctx, ids) },
					ask: func(n int64) confirmation {
						return confirmation{command: "purge", effect: "would delete " + what(n), undone: "deleted",
							question: "Permanently delete " + what(n) + "?"}
					},
					remove: func(string) (int64, error) { return store.Purge(ctx, ids) },
					none:   "no such rejected analyses",
					done:   func(n int64) string { return "purged " + what(n) },
				})
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "delete every rejected analysis")
	yesFlag(cmd, &yes)
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func analysesCount(n int64) string {
	if n == 1 {
		return "1 rejected analysis"
	}
	return fmt.Sprintf("%d rejected analyses", n)
}
