package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/internal/repositories"
	"github.com/relay-dev/relay/internal/termout"
	"github.com/relay-dev/relay/worker"
)

func newRepositoryCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "repository",
		Short: "List the repositories relay holds, delete one",
		Long: `Repository lists the repositories relay holds data of (an analysis names its
repository; "" is the default repository) and deletes one with everything
relay stores for it.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{errors.New("repository needs a subcommand; see relay repository --help")}
		},
	}
	cmd.AddCommand(newRepositoryListCmd(a), newRepositoryDeleteCmd(a))
	return cmd
}

// withRepositories opens a pool for one command and runs fn with the store
// over it; with jobs, the store has an insert-only River client.
func (a *app) withRepositories(cmd *cobra.Command, jobs bool, fn func(ctx context.Context, st *repositories.Store) error) error {
	ctx := cmd.Context()
	pool, err := a.open(ctx, "repository")
	if err != nil {
		return err
	}
	defer pool.Close()
	var inserter repositories.JobInserter
	if jobs {
		client, err := worker.NewInsertClient(pool, worker.ConfigFrom(a.cfg), a.logger)
		if err != nil {
			return err
		}
		inserter = client
	}
	return fn(ctx, repositories.New(pool, inserter, a.logger))
}

func newRepositoryListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every repository with its files, POIs, relationships and new failed POIs",
		Long: `List shows every repository that has files or failed_pois rows, in byte
order of the name, one line each: its files, its POIs, its relationships
(resolved references whose source is in it, the target in it or, for a
supplied reference by symbol, in another repository) and its failed_pois
rows in status new. The default repository ("") is shown as (default); in
--json its name is "".`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withRepositories(cmd, false, func(ctx context.Context, st *repositories.Store) error {
				rows, err := st.List(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(rows)
				}
				printRepositories(a.out(), rows)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printRepositories(w io.Writer, rows []repositories.Summary) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no repositories")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPOSITORY\tFILES\tPOIS\tRELATIONSHIPS\tNEW_FAILED")
	for _, r := range rows {
		name := "(default)"
		if r.Repository != "" {
			name = termout.String(r.Repository)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", name, r.Files, r.POIs, r.Relationships, r.NewFailed)
	}
	_ = tw.Flush()
}

func newRepositoryDeleteCmd(a *app) *cobra.Command {
	var (
		isDefault, purge, yes, asJSON bool
		actor                         string
	)
	cmd := &cobra.Command{
		Use:   "delete NAME | --default [--purge-failed] [--yes]",
		Short: "Delete a repository's files, POIs and references (asks first unless --yes)",
		Long: `Delete deletes, in one transaction, everything relay stores for repository
NAME: its files, its POIs and their references (every poi_references row
whose source is in it, resolved or not), its analyses queued by relay_publish
and not yet published, its link_queue rows and its rejected_analyses rows.
Its failed_pois rows stay unless --purge-failed, which deletes them too,
except those in status reprocessing (their job has not reported back; relay
failed purge never deletes them either).

The other repositories' supplied references by a symbol that one of its POIs
had (the only references that cross repositories) are resolved again: those
that resolved into it lose their target at once, and the same transaction
queues them all for the linker, which resolves them against the repositories
left when a worker runs (relay worker): a reference that was ambiguous
because two repositories defined the symbol resolves to the one left.

NAME is the repository's name exactly as analyses give it; the default
repository ("") is named with --default, not with an empty NAME (which is
refused, so that an unset shell variable cannot name it). Stop publishing to
the repository first: analyses published to it while it is being deleted
may stay.

It shows what it would delete and asks for confirmation on a terminal; when
standard input is not a terminal it refuses (exit 1) unless --yes (-y). One
audit event in dead_letter_events (action repository_delete, target
failed_pois, item_count the failed_pois rows deleted) records every count and
--actor. A repository with nothing to delete (its failed_pois rows kept)
prints so, records nothing and exits 0; a NAME relay holds no data of at all
is an error (exit 1) that names the repositories there are. Each table is deleted from in one statement: a large repository may
need a longer --statement-timeout.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := repositoryArg(args, isDefault)
			if err != nil {
				return err
			}
			opts := repositories.Options{PurgeFailed: purge, Actor: actorOr(actor)}
			return a.withRepositories(cmd, true, func(ctx context.Context, st *repositories.Store) error {
				if err := requireRepositoryIn(ctx, st, name); err != nil {
					return err
				}
				preview, err := st.Preview(ctx, name, opts)
				if err != nil {
					return err
				}
				if preview.Empty() {
					if asJSON {
						return a.printJSON(preview)
					}
					fmt.Fprintf(a.out(), "nothing to delete: %s has no rows to delete\n", repositoryName(name))
					printKept(a.out(), preview, purge)
					return nil
				}
				what := repositoryName(name) + ": " + deletedParts(preview)
				if err := a.confirm(confirmation{yes: yes, command: "repository delete", effect: "would delete " + what,
					undone: "deleted", question: "Delete " + what + "? This cannot be undone."}); err != nil {
					return err
				}
				d, err := st.Delete(ctx, name, opts)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(d)
				}
				fmt.Fprintf(a.out(), "deleted %s: %s\n", repositoryName(name), deletedParts(d))
				printKept(a.out(), d, purge)
				if d.ReferencesRequeued > 0 {
					fmt.Fprintf(a.out(), "%s in other repositories queued to resolve again (%d had resolved into it); a worker (relay worker) resolves them\n",
						countOf(d.ReferencesRequeued, "reference", "references"), d.ReferencesCleared)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&isDefault, "default", false, `delete the default repository ("") instead of NAME`)
	cmd.Flags().BoolVar(&purge, "purge-failed", false, "also delete the repository's failed_pois rows (not those in status reprocessing)")
	yesFlag(cmd, &yes)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	actorFlag(cmd, &actor)
	return cmd
}

// repositoryArg is the repository delete names: NAME, or "" with
// --default; exactly one of them.
func repositoryArg(args []string, isDefault bool) (string, error) {
	switch {
	case isDefault && len(args) > 0:
		return "", usageError{errors.New("give NAME or --default, not both")}
	case isDefault:
		return "", nil
	case len(args) == 0:
		return "", usageError{errors.New(`delete needs the repository's NAME, or --default for the default repository ("")`)}
	case args[0] == "":
		return "", usageError{errors.New(`NAME is empty: to delete the default repository ("") use --default`)}
	}
	return args[0], nil
}

// deletedParts lists d's counts: files, POIs and references always, the
// others when there are any.
func deletedParts(d *repositories.Deleted) string {
	parts := []string{countOf(d.Files, "file", "files"), countOf(d.POIs, "POI", "POIs"), countOf(d.References, "reference", "references")}
	for _, c := range []struct {
		n              int64
		single, plural string
	}{
		{d.QueuedAnalyses, "queued analysis", "queued analyses"},
		{d.LinkQueue, "link_queue row", "link_queue rows"},
		{d.RejectedAnalyses, "rejected analysis", "rejected analyses"},
		{d.FailedPOIs, "failed_pois row", "failed_pois rows"},
	} {
		if c.n > 0 {
			parts = append(parts, countOf(c.n, c.single, c.plural))
		}
	}
	return strings.Join(parts, ", ")
}

// printKept says which failed_pois rows a delete leaves, if any.
func printKept(w io.Writer, d *repositories.Deleted, purge bool) {
	switch {
	case d.FailedPOIsKept == 0:
	case purge:
		fmt.Fprintf(w, "%s in status reprocessing kept (their jobs have not reported back)\n", countOf(d.FailedPOIsKept, "failed_pois row", "failed_pois rows"))
	default:
		fmt.Fprintf(w, "%s kept (--purge-failed deletes them)\n", countOf(d.FailedPOIsKept, "failed_pois row", "failed_pois rows"))
	}
}

func countOf(n int64, single, plural string) string {
	if n == 1 {
		return "1 " + single
	}
	return fmt.Sprintf("%d %s", n, plural)
}
