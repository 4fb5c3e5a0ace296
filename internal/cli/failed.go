package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/termout"
)

func newFailedCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "failed",
		Short: "Read and manage failed_pois: list, inspect, stats, analyze, export, ignore, purge",
		Long: `Failed reads and manages failed_pois, the POIs that failed in a resolve_file
batch. Every listing takes --json. Writes (ignore, purge) record who (--actor,
default the OS user), what and how many in dead_letter_events; reads record
nothing. docs/failed_pois.md describes the table; relay dlq takes the same
flags for dead_lettered_items.

` + timeFlagHelp,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{errors.New("failed needs a subcommand; see relay failed --help")}
		},
	}
	cmd.AddCommand(newFailedListCmd(a), newFailedInspectCmd(a), newFailedStatsCmd(a), newFailedAnalyzeCmd(a),
		newFailedExportCmd(a), newFailedIgnoreCmd(a), newFailedPurgeCmd(a))
	return cmd
}

func newFailedListCmd(a *app) *cobra.Command {
	var (
		ff     filterFlags
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List failed POIs, newest failure first",
		Long:  "List shows failed_pois rows, newest failure first, one line each.\n\n" + timeFlagHelp,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter(time.Now())
			if err != nil {
				return err
			}
			if err := listLimit(limit, "failed"); err != nil {
				return err
			}
			return a.withDeadLetters(cmd, "failed", func(ctx context.Context, dl *deadLetters) error {
				if err := a.requireRepository(ctx, dl.pool, f.Repository); err != nil {
					return err
				}
				rows, err := dl.failed.List(ctx, f, limit)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(rows)
				}
				printFailedList(a.out(), rows, limit)
				return nil
			})
		},
	}
	ff.register(cmd, "only rows in this status: new, reprocessing, reprocessed, ignored or superseded")
	cmd.Flags().IntVar(&limit, "limit", 50, "rows to show")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printFailedList(w io.Writer, rows []failed.Record, limit int) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no failed POIs match")
		return
	}
	// The REPOSITORY column shows only when a row is not of the default
	// repository (a file id is unique within its repository).
	repos := slices.ContainsFunc(rows, func(r failed.Record) bool { return r.Repository != "" })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if repos {
		fmt.Fprintln(tw, "ID\tFAILED_AT\tSTATUS\tATTEMPTS\tCLASS\tREPOSITORY\tFILE\tPOI\tERROR")
	} else {
		fmt.Fprintln(tw, "ID\tFAILED_AT\tSTATUS\tATTEMPTS\tCLASS\tFILE\tPOI\tERROR")
	}
	for _, r := range rows {
		status := string(r.Status)
		if r.ManualReviewRequired && r.Status == failed.StatusNew {
			status += " (review)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t", r.ID, r.FailedAt.Format(time.RFC3339), status, r.Attempts, r.ErrorClass)
		if repos {
			fmt.Fprintf(tw, "%s\t", repositoryCell(r.Repository, 30))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", oneLine(r.FileID, 40), orDash(oneLine(r.POIID, 24)), oneLine(r.ErrorMessage, 100))
	}
	_ = tw.Flush()
	if len(rows) == limit {
		fmt.Fprintf(w, "(first %d rows; --limit for more, relay failed export for all)\n", limit)
	}
}

func newFailedInspectCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect ID",
		Short: "Show one failed POI: its data, every recorded error, the jobs involved",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return usageError{fmt.Errorf("ID %q must be a failed_pois id (a positive integer)", args[0])}
			}
			return a.withDeadLetters(cmd, "failed", func(ctx context.Context, dl *deadLetters) error {
				in, err := dl.failed.Get(ctx, id)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(in)
				}
				printInspection(a.out(), in)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printInspection(w io.Writer, in *failed.Inspection) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	line("id", strconv.FormatInt(in.ID, 10))
	line("status", string(in.Status))
	if in.ManualReviewRequired {
		line("manual review", "required (failed too many reprocesses; relay reprocess skips it without --include-manual-review)")
	}
	if in.IgnoredReason != "" {
		line("ignored reason", termout.String(in.IgnoredReason))
	}
	if in.Status == failed.StatusSuperseded {
		line("superseded reason", termout.String(cmp.Or(in.SupersededReason, "-")))
		line("superseded at", timeOrDash(in.SupersededAt))
	}
	if in.Repository != "" {
		line("repository", termout.String(in.Repository))
	}
	line("file", termout.String(in.FileID))
	line("poi", orDash(termout.String(in.POIID))+fmt.Sprintf(" (#%d in its original job)", in.POIIndex))
	if in.FileVersion > 0 {
		line("file version", strconv.FormatInt(in.FileVersion, 10))
	}
	line("attempts", strconv.Itoa(in.Attempts))
	line("failed at", in.FailedAt.Format(time.RFC3339Nano))
	line("error class", string(in.ErrorClass))
	line("error signature", termout.String(in.ErrorSignature))
	line("error", oneLine(in.ErrorMessage, 0))
	if !in.ReprocessRequestedAt.IsZero() {
		line("reprocess requested", in.ReprocessRequestedAt.Format(time.RFC3339Nano))
	}
	if !in.ReprocessedAt.IsZero() {
		line("reprocessed at", in.ReprocessedAt.Format(time.RFC3339Nano))
	}
	line("updated at", in.UpdatedAt.Format(time.RFC3339Nano))
	_ = tw.Flush()

	if in.ErrorContext != "" {
		fmt.Fprintf(w, "\nerror context:\n%s\n", indent(in.ErrorContext))
	}
	fmt.Fprintln(w, "\nerror history (oldest first):")
	for i, h := range in.History {
		fmt.Fprintf(w, "  %d. %s  job %d  %s: %s\n", i+1, h.FailedAt.Format(time.RFC3339), h.JobID, h.Class, oneLine(h.Message, 0))
	}
	fmt.Fprintln(w, "\njobs:")
	for _, j := range in.Jobs {
		fmt.Fprintf(w, "  %d  %s  %s\n", j.ID, j.Role, cmp.Or(j.State, "(no longer in river_job)"))
	}
	var pretty strings.Builder
	data, err := json.MarshalIndent(in.POIData, "", "  ")
	if err != nil {
		data = in.POIData
	}
	pretty.Write(data)
	fmt.Fprintf(w, "\noriginal POI data:\n%s\n", indent(pretty.String()))
}

func newFailedStatsCmd(a *app) *cobra.Command {
	var (
		asJSON bool
		repo   repositoryFlag
	)
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count failed POIs by status and error class; oldest, newest, manual review, stuck",
		Long: `Stats counts failed_pois rows by status and error class, and finds the oldest
and newest failures, the rows needing manual review and the rows stuck in
reprocessing. Every row's counts come from a counts table the database keeps,
whatever the table's size; --repository counts that repository's rows (""
selects the default repository), so it takes longer the more rows it has.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withDeadLetters(cmd, "failed", func(ctx context.Context, dl *deadLetters) error {
				if err := a.requireRepository(ctx, dl.pool, repo.value()); err != nil {
					return err
				}
				var st *failed.Stats
				var err error
				if r := repo.value(); r != nil {
					st, err = dl.failed.RepositoryStats(ctx, *r)
				} else {
					st, err = dl.failed.Stats(ctx)
				}
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(st)
				}
				printStats(a.out(), st)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	repo.register(cmd)
	return cmd
}

func printStats(w io.Writer, st *failed.Stats) {
	// scope is the --repository of the commands the hints suggest.
	scope := ""
	if st.Repository != nil {
		fmt.Fprintf(w, "failed_pois of %s: %d rows\n", repositoryName(*st.Repository), st.Total)
		scope = " --repository " + shellWord(*st.Repository)
	} else {
		fmt.Fprintf(w, "failed_pois: %d rows\n", st.Total)
	}
	var parts []string
	for _, s := range failed.Statuses() {
		parts = append(parts, fmt.Sprintf("%s %d", s, st.Status[s]))
	}
	fmt.Fprintf(w, "  by status:          %s\n", strings.Join(parts, ", "))
	parts = parts[:0]
	for _, c := range failed.Classes() {
		parts = append(parts, fmt.Sprintf("%s %d", c, st.Class[c]))
	}
	fmt.Fprintf(w, "  by error class:     %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "  oldest failure:     %s\n", timeOrDash(st.Oldest))
	fmt.Fprintf(w, "  newest failure:     %s\n", timeOrDash(st.Newest))
	fmt.Fprintf(w, "  oldest new:         %s\n", timeOrDash(st.OldNew))
	fmt.Fprintf(w, "  manual review:      %d", st.Manual)
	if st.Manual > 0 {
		fmt.Fprintf(w, " (relay failed list --manual-review%s)", scope)
	}
	fmt.Fprintf(w, "\n  stuck reprocessing: %d", st.Stuck)
	if st.Stuck > 0 {
		fmt.Fprintf(w, " (their jobs are gone: relay reprocess --status reprocessing%s)", scope)
	}
	fmt.Fprintf(w, "\n  superseded:         %d", st.Status[failed.StatusSuperseded])
	if st.Status[failed.StatusSuperseded] > 0 {
		fmt.Fprintf(w, " (closed: their file was published again or is gone; relay failed list --status superseded%s)", scope)
	}
	fmt.Fprintln(w)
}

func newFailedAnalyzeCmd(a *app) *cobra.Command {
	var (
		ff     filterFlags
		top    int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "analyze",
		Short: "Group failed POIs by error signature, with shares, samples and failures per hour",
		Long: `Analyze groups failed_pois rows by error signature and class: how many, their
share, first and last failure, up to three sample POI ids; then failures per
hour (UTC) over the last 7 days (or since --since, if later).

` + timeFlagHelp,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter(time.Now())
			if err != nil {
				return err
			}
			if top < 1 || top > 1000 {
				return usageError{fmt.Errorf("--top %d must be between 1 and 1000", top)}
			}
			return a.withDeadLetters(cmd, "failed", func(ctx context.Context, dl *deadLetters) error {
				if err := a.requireRepository(ctx, dl.pool, f.Repository); err != nil {
					return err
				}
				an, err := dl.failed.Analyze(ctx, f, top)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(an)
				}
				printAnalysis(a.out(), an)
				return nil
			})
		},
	}
	ff.register(cmd, "only rows in this status (default: all)")
	cmd.Flags().IntVar(&top, "top", 20, "signature groups to show")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printAnalysis(w io.Writer, an *failed.Report) {
	if an.Total == 0 {
		fmt.Fprintln(w, "no failed POIs match")
		return
	}
	fmt.Fprintf(w, "%d failed POIs in %d signature groups\n\n", an.Total, int64(len(an.Groups))+an.OtherGroups)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COUNT\tSHARE\tCLASS\tFIRST_SEEN\tLAST_SEEN\tSAMPLE_POIS\tSIGNATURE")
	for _, g := range an.Groups {
		samples := make([]string, len(g.SamplePOIIDs))
		for i, p := range g.SamplePOIIDs {
			samples[i] = cmp.Or(termout.String(p), "#"+strconv.FormatInt(g.SampleRowIDs[i], 10))
		}
		fmt.Fprintf(tw, "%d\t%.1f%%\t%s\t%s\t%s\t%s\t%s\n", g.Count, 100*g.Share, g.ErrorClass,
			g.FirstSeen.Format(time.RFC3339), g.LastSeen.Format(time.RFC3339), strings.Join(samples, ","), oneLine(g.Signature, 120))
	}
	_ = tw.Flush()
	if an.OtherGroups > 0 {
		fmt.Fprintf(w, "(%d smaller groups not shown; --top for more)\n", an.OtherGroups)
	}
	if len(an.Hourly) == 0 {
		return
	}
	fmt.Fprintln(w, "\nfailures per hour (UTC):")
	var peak int64
	for _, h := range an.Hourly {
		peak = max(peak, h.Count)
	}
	for _, h := range an.Hourly {
		bar := int(h.Count * 40 / peak)
		fmt.Fprintf(w, "  %s  %8d  %s\n", h.Hour.Format("2006-01-02 15:04"), h.Count, strings.Repeat("#", max(bar, 1)))
	}
}

func newFailedExportCmd(a *app) *cobra.Command {
	var (
		ff filterFlags
		ef exportFlags
	)
	cmd := &cobra.Command{
		Use:   "export FILE",
		Short: "Stream failed POIs to a CSV, JSON Lines or JSON file (FILE '-' is stdout)",
		Long: `Export writes every matching failed_pois row, with every column, to FILE in id
order, reading the table in pages so a million rows never sit in memory. In
CSV, original_poi_data and error_history are JSON text.

` + exportHelp + `

` + timeFlagHelp,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := ff.filter(time.Now())
			if err != nil {
				return err
			}
			return runExport(a, cmd, "failed", args[0], &ef, func(dl *deadLetters) rowExport[*failed.Record] {
				return rowExport[*failed.Record]{noun: "row", columns: failedColumns, record: failedRecord,
					check: func(ctx context.Context) error { return a.requireRepository(ctx, dl.pool, f.Repository) },
					stream: func(ctx context.Context, fn func(*failed.Record) error) (int64, error) {
						return dl.failed.Export(ctx, f, ef.limit, fn)
					}}
			})
		},
	}
	ff.register(cmd, "only rows in this status")
	ef.register(cmd)
	return cmd
}

// failedColumns is the CSV header of a failed_pois export.
var failedColumns = []string{"id", "original_job_id", "file_id", "poi_id", "poi_index", "failed_at", "status", "attempts",
	"error_class", "error_signature", "error_message", "error_context", "manual_review_required", "reprocess_job_id",
	"reprocess_requested_at", "reprocessed_at", "ignored_reason", "updated_at", "original_poi_data", "error_history",
	"repository"}

// failedRecord is r's CSV record.
func failedRecord(r *failed.Record) []string {
	return []string{strconv.FormatInt(r.ID, 10), strconv.FormatInt(r.OriginalJobID, 10), r.FileID, r.POIID,
		strconv.Itoa(r.POIIndex), csvTime(r.FailedAt), string(r.Status), strconv.Itoa(r.Attempts), string(r.ErrorClass),
		r.ErrorSignature, r.ErrorMessage, r.ErrorContext, strconv.FormatBool(r.ManualReviewRequired),
		csvInt(r.ReprocessJobID), csvTime(r.ReprocessRequestedAt), csvTime(r.ReprocessedAt), r.IgnoredReason,
		csvTime(r.UpdatedAt), string(r.POIData), csvJSON(r.History), r.Repository}
}

// csvJSON is v as JSON text for a CSV cell ("" when it cannot be encoded).
func csvJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func csvTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func csvInt(v int64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatInt(v, 10)
}

func newFailedIgnoreCmd(a *app) *cobra.Command {
	var reason, actor string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ignore ID... --reason TEXT",
		Short: "Set failed POIs aside (status ignored) with a reason",
		Long: `Ignore sets rows aside: status ignored, with --reason, so relay reprocess
--status new no longer takes them (relay reprocess --status ignored brings them
back). Rows in new or already ignored are ignored; rows in reprocessing (their
job owns them), reprocessed or superseded (closed) are refused. The exit code is
1 when any id was not found or refused.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("ignore needs at least one failed_pois id")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageError{errors.New("--reason is required: say why these rows are set aside")}
			}
			ids := make([]int64, len(args))
			for i, s := range args {
				id, err := strconv.ParseInt(s, 10, 64)
				if err != nil || id < 1 {
					return usageError{fmt.Errorf("ID %q must be a failed_pois id (a positive integer)", s)}
				}
				ids[i] = id
			}
			return a.withDeadLetters(cmd, "failed", func(ctx context.Context, dl *deadLetters) error {
				res, err := dl.failed.Ignore(ctx, ids, reason, actorOr(actor))
				if err != nil {
					return err
				}
				if asJSON {
					if err := a.printJSON(res); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(a.out(), "ignored %d rows\n", len(res.Ignored))
				}
				for _, id := range res.NotFound {
					fmt.Fprintf(a.env.Stderr, "row %d: not found\n", id)
				}
				refused := slices.Sorted(maps.Keys(res.Refused))
				for _, id := range refused {
					fmt.Fprintf(a.env.Stderr, "row %d: refused: status is %s\n", id, res.Refused[id])
				}
				if bad := len(res.NotFound) + len(refused); bad > 0 {
					return exitError{code: ExitRuntime, msg: fmt.Sprintf("%d of %d ids not ignored", bad, len(ids))}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the rows are set aside (required; stored in ignored_reason)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	actorFlag(cmd, &actor)
	return cmd
}

func newFailedPurgeCmd(a *app) *cobra.Command {
	var (
		pf     purgeFlags
		status string
		repo   repositoryFlag
	)
	cmd := &cobra.Command{
		Use:   "purge --older-than-days N [--status S] [--repository NAME] [--yes]",
		Short: "Delete failed POIs not updated for N days (asks first unless --yes)",
		Long: `Purge deletes failed_pois rows whose updated_at (last change) is more than
--older-than-days days ago, of one --status or, by default, of every status but
reprocessing. Rows in reprocessing are never purged: their job has not reported
back. It shows what it would delete and asks for confirmation on a terminal;
when standard input is not a terminal it refuses (exit 1) unless --yes (-y).
It deletes in batches; one audit event records the run and --actor.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			age, err := pf.age()
			if err != nil {
				return err
			}
			p := failed.PurgeFilter{OlderThan: age, Repository: repo.value()}
			if status != "" {
				st, err := failed.ParseStatus(status)
				if err != nil {
					return usageError{fmt.Errorf("--status: %w", err)}
				}
				if st == failed.StatusReprocessing {
					return usageError{failed.ErrPurgeReprocessing}
				}
				p.Status = st
			}
			return a.withDeadLetters(cmd, "failed", func(ctx context.Context, dl *deadLetters) error {
				if err := a.requireRepository(ctx, dl.pool, p.Repository); err != nil {
					return err
				}
				var parts []string
				return a.runDeletion(deletion{
					yes: pf.yes, asJSON: pf.asJSON, actor: pf.actor, key: "purged",
					count: func() (int64, error) {
						preview, err := dl.failed.PurgePreview(ctx, p)
						var total int64
						for _, st := range failed.Statuses() {
							if n := preview[st]; n > 0 {
								total += n
								parts = append(parts, fmt.Sprintf("%s %d", st, n))
							}
						}
						return total, err
					},
					ask: func(n int64) confirmation {
						what := fmt.Sprintf("%d failed_pois rows not updated for %d days (%s)", n, pf.days, strings.Join(parts, ", "))
						return confirmation{command: "purge", effect: "would delete " + what, undone: "deleted",
							question: "Delete " + what + "? This cannot be undone."}
					},
					remove: func(actor string) (int64, error) { return dl.failed.Purge(ctx, p, actor) },
					none:   "nothing to purge",
					done:   func(n int64) string { return fmt.Sprintf("purged %d rows", n) },
				})
			})
		},
	}
	pf.register(cmd, "purge rows not updated")
	cmd.Flags().StringVar(&status, "status", "", "only rows in this status: new, reprocessed, ignored or superseded (default: all but reprocessing)")
	repo.register(cmd)
	return cmd
}

// oneLine flattens s to one line, when max > 0 cuts it to max runes, and
// escapes what a terminal would interpret (termout.String).
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if max > 0 && utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return termout.String(s)
}

func orDash(s string) string { return cmp.Or(s, "-") }

// repositoryCell is a repository in a table cell, cut to max runes: its
// name, or "(default)" for the default repository (as relay repository
// list shows it).
func repositoryCell(repository string, max int) string {
	if repository == "" {
		return "(default)"
	}
	return oneLine(repository, max)
}

// shellWord is s as one word of a POSIX shell command line: as it is when
// it needs no quoting, else quoted ("" for the empty string).
func shellWord(s string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)
	}
	switch {
	case s == "":
		return `""`
	case strings.IndexFunc(s, func(r rune) bool { return !plain(r) }) < 0:
		return s
	default:
		return termout.String("'" + strings.ReplaceAll(s, "'", `'\''`) + "'")
	}
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
