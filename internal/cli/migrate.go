package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/internal/citus"
	"github.com/relay-dev/relay/migrations"
)

func newMigrateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply, roll back or show relay's schema migrations (River's tables included)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("migrate needs a subcommand: up, down, status or distribute")}
		},
	}
	run := func(name, short string, f func(cmd *cobra.Command, m *migrations.Migrator) error) *cobra.Command {
		return &cobra.Command{
			Use: name, Short: short, Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				m, closeAll, err := a.migrator(cmd.Context())
				if err != nil {
					return err
				}
				defer closeAll()
				return f(cmd, m)
			},
		}
	}
	up := run("up", "Apply every pending migration", func(cmd *cobra.Command, m *migrations.Migrator) error {
		res, err := m.Up(cmd.Context())
		if err != nil {
			return err
		}
		if len(res) == 0 {
			fmt.Fprintln(a.out(), "relay: schema is up to date")
		}
		for _, r := range res {
			fmt.Fprintf(a.out(), "applied %05d %s (%s)\n", r.Version, r.Source, r.Duration.Round(1e6))
		}
		return nil
	})
	down := newMigrateDownCmd(a)
	var asJSON bool
	status := run("status", "List migrations and whether each is applied", func(cmd *cobra.Command, m *migrations.Migrator) error {
		st, err := m.Status(cmd.Context())
		if err != nil {
			return err
		}
		if asJSON {
			return a.printJSON(st)
		}
		tw := tabwriter.NewWriter(a.out(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tSTATE\tAPPLIED AT\tSOURCE")
		for _, s := range st {
			state, at := "pending", "-"
			if s.Applied {
				state, at = "applied", s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
			}
			fmt.Fprintf(tw, "%05d\t%s\t%s\t%s\n", s.Version, state, at, s.Source)
		}
		return tw.Flush()
	})
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(up, down, status, newMigrateDistributeCmd(a))
	return cmd
}

const migrateDistributeLong = `Distribute distributes relay's tables on a Citus coordinator by repository,
co-located with files (docs/citus.md): files, pois, poi_references,
link_queue, publish_queue, failed_pois and rejected_analyses. River's tables
and relay's coordination tables stay on the coordinator. Run it on the
coordinator's database (CREATE EXTENSION citus) after relay migrate up.

A table already distributed by repository is left alone and reported, so
running it again changes nothing. failed_pois's counts triggers (which keep
failed_pois_counts and its two sibling tables) are dropped, and those tables
emptied, and it says so: on a distributed table the triggers would run on
the worker nodes, which have no counts tables, and relay's readers count
failed_pois's rows instead. On a database without the citus
extension it refuses, exit code 1, and changes nothing: plain PostgreSQL
needs only relay migrate up.`

func newMigrateDistributeCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "distribute [--json]",
		Short: "Distribute relay's tables by repository on a Citus coordinator (idempotent)",
		Long:  migrateDistributeLong,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			pool, err := a.openSession(ctx, "migrate")
			if err != nil {
				return err
			}
			defer pool.Close()
			if _, err := citus.Version(ctx, pool); err != nil {
				return err
			}
			m, err := migrations.New(pool, a.cfg.DatabaseSchema, a.logger)
			if err != nil {
				return err
			}
			defer m.Close()
			if pending, err := m.Pending(ctx); err != nil {
				return err
			} else if pending {
				return errors.New("migrations are pending: run relay migrate up first, then relay migrate distribute")
			}
			rep, err := citus.Distribute(ctx, pool)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(rep)
			}
			tw := tabwriter.NewWriter(a.out(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tACTION\tCO-LOCATED WITH\tSHARDS")
			done := 0
			for _, t := range rep.Tables {
				with := cmp.Or(t.ColocateWith, "-")
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", t.Name, t.Action, with, t.Shards)
				if t.Action == citus.Distributed {
					done++
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, t := range rep.Tables {
				if len(t.DroppedTriggers) > 0 {
					fmt.Fprintf(a.out(), "relay: dropped the %d counts triggers of %s (%s): on a distributed table they would run on "+
						"the worker nodes, which have no counts tables; relay counts the rows of %s instead\n",
						len(t.DroppedTriggers), t.Name, strings.Join(t.DroppedTriggers, ", "), t.Name)
				}
			}
			if done == 0 {
				fmt.Fprintf(a.out(), "relay: every table was already distributed by %s; nothing changed (%s, %s with shards)\n",
					citus.Column, rep.CitusVersion, pluralize(rep.Workers, "node"))
			} else {
				fmt.Fprintf(a.out(), "relay: distributed %s by %s (%s, %s with shards)\n",
					pluralize(done, "table"), citus.Column, rep.CitusVersion, pluralize(rep.Workers, "node"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

const migrateDownLong = `Down rolls back applied migrations, newest first: one by default, every
migration above VERSION with --to VERSION (VERSION stays applied), or all of
them with --all (the same as --to 0), which removes River's tables, relay's
and goose's version table (relay_goose_db_version): everything relay created.

A rollback that loses data (it drops a table, a column or rows; see
docs/operations.md, "Rolling back migrations") lists what it destroys, with
row counts, and asks for confirmation; --yes (-y) skips the question. When
standard input is not a terminal it does not ask: it refuses, exit code 1,
and rolls nothing back. Row counts are count(*) over at most 100000 rows
per table ("100000+" means at least that many). Rollbacks that lose no
data (an index swapped, a derived counter table dropped) run without asking.
--dry-run prints the plan and changes nothing.`

func newMigrateDownCmd(a *app) *cobra.Command {
	var (
		to               int64
		all, yes, dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "down [--to VERSION | --all] [--yes] [--dry-run]",
		Short: "Roll back the most recent migration (asks before destroying data unless --yes)",
		Long:  migrateDownLong,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			toSet := cmd.Flags().Changed("to")
			if all && toSet {
				return usageError{errors.New("--all and --to exclude each other (--all is --to 0)")}
			}
			if toSet && to < 0 {
				return usageError{fmt.Errorf("--to %d: want a version, or 0 for all", to)}
			}
			ctx := cmd.Context()
			m, closeAll, err := a.migrator(ctx)
			if err != nil {
				return err
			}
			defer closeAll()

			current, err := m.Version(ctx)
			if err != nil {
				return err
			}
			if latest := m.Latest(); current > latest {
				return fmt.Errorf("the schema is at version %d, newer than this relay knows (%d): roll it back with the relay that applied it", current, latest)
			}
			if toSet && to != 0 && !m.Known(to) {
				return usageError{fmt.Errorf("--to %d: no such migration (versions 1 to %d; 0 for all)", to, m.Latest())}
			}
			target := to
			if all {
				target = 0
			}
			plan, err := m.PlanDown(ctx, target)
			if err != nil {
				return err
			}
			if !all && !toSet && len(plan) > 1 {
				target, plan = plan[1].Version, plan[:1]
			}
			if len(plan) == 0 {
				if target == 0 && !dryRun {
					if err := m.DropVersionTable(ctx); err != nil {
						return err
					}
				}
				fmt.Fprintf(a.out(), "relay: nothing to roll back (schema at version %d)\n", current)
				return nil
			}
			counts, err := m.RowCounts(ctx, planTables(plan), migrations.RowCountLimit)
			if err != nil {
				return err
			}
			if dryRun {
				printDownPlan(a.out(), plan, target, counts)
				fmt.Fprintln(a.out(), "dry run: nothing rolled back")
				return nil
			}
			if migrations.LosesData(plan) && !yes {
				printDownPlan(a.env.Stderr, plan, target, counts)
				if err := a.confirm(confirmation{command: "migrate down", effect: "destroys the data listed above", undone: "rolled back",
					question: fmt.Sprintf("Roll back %s and destroy this data?", pluralize(len(plan), "migration"))}); err != nil {
					return err
				}
			}
			// Roll back what was planned and confirmed, nothing more: a
			// migration applied since then would be rolled back unseen.
			if now, err := m.Version(ctx); err != nil {
				return err
			} else if now != plan[0].Version {
				return fmt.Errorf("the schema moved from version %d to %d while planning; nothing rolled back: run it again", plan[0].Version, now)
			}
			res, err := m.DownTo(ctx, target)
			for _, r := range res {
				fmt.Fprintf(a.out(), "rolled back %05d %s\n", r.Version, sourceName(r.Version, r.Source))
			}
			if err != nil {
				return err
			}
			if target == 0 {
				if err := m.DropVersionTable(ctx); err != nil {
					return err
				}
				fmt.Fprintf(a.out(), "dropped %s: nothing of relay is left in the schema\n", migrations.TableName)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&to, "to", 0, "roll back every migration above VERSION, leaving VERSION applied (0: all)")
	f.BoolVar(&all, "all", false, "roll back every migration: River's tables, relay's and the version table (same as --to 0)")
	yesFlag(cmd, &yes)
	f.BoolVar(&dryRun, "dry-run", false, "print what would be rolled back and destroyed; change nothing")
	return cmd
}

// planTables lists the tables whose rows the plan destroys or changes.
func planTables(plan []migrations.Rollback) []string {
	var out []string
	for _, r := range plan {
		out = append(out, r.Effect.Tables()...)
	}
	return out
}

func sourceName(version int64, source string) string {
	if source == "" && version == 1 {
		return "River's migrations (Go)"
	}
	return source
}

// printDownPlan writes what rolling back plan does and destroys.
func printDownPlan(w io.Writer, plan []migrations.Rollback, target int64, counts map[string]int64) {
	fmt.Fprintf(w, "Rolling back %s (schema version %d -> %d):\n", pluralize(len(plan), "migration"), plan[0].Version, target)
	for _, r := range plan {
		e := r.Effect
		fmt.Fprintf(w, "  %05d %s: %s\n", r.Version, sourceName(r.Version, r.Source), e.Note)
		if len(e.DropsTables) > 0 {
			fmt.Fprintf(w, "        drops tables: %s\n", tablesWithCounts(e.DropsTables, counts))
		}
		if len(e.DropsDerivedTables) > 0 {
			fmt.Fprintf(w, "        drops derived tables (recomputed on the way up): %s\n", tablesWithCounts(e.DropsDerivedTables, counts))
		}
		if len(e.DropsColumns) > 0 {
			var tables []string
			for _, c := range e.DropsColumns {
				t, _, _ := strings.Cut(c, ".")
				if len(tables) == 0 || tables[len(tables)-1] != t {
					tables = append(tables, t)
				}
			}
			fmt.Fprintf(w, "        drops columns: %s, of %s\n", strings.Join(e.DropsColumns, ", "), tablesWithCounts(tables, counts))
		}
		if len(e.DropsDerivedColumns) > 0 {
			fmt.Fprintf(w, "        drops derived columns (generated from other columns): %s\n", strings.Join(e.DropsDerivedColumns, ", "))
		}
		if len(e.DeletesFrom) > 0 {
			fmt.Fprintf(w, "        deletes rows from: %s\n", tablesWithCounts(e.DeletesFrom, counts))
		}
	}
	fmt.Fprintf(w, "Row counts are count(*) over at most %d rows per table.\n", migrations.RowCountLimit)
}

func tablesWithCounts(tables []string, counts map[string]int64) string {
	parts := make([]string, 0, len(tables))
	for _, t := range tables {
		n, ok := counts[t]
		switch {
		case !ok:
			parts = append(parts, t+" (absent now)")
		case n >= migrations.RowCountLimit:
			parts = append(parts, fmt.Sprintf("%s (%d+ rows)", t, n))
		default:
			parts = append(parts, fmt.Sprintf("%s (%s)", t, pluralize(int(n), "row")))
		}
	}
	return strings.Join(parts, ", ")
}

// migrator opens the migrations of relay's schema on a session of their
// own (openSession: goose's lock is held across transactions, which a
// transaction pooler does not keep), for every migrate subcommand.
// closeAll closes the migrator and its pool.
func (a *app) migrator(ctx context.Context) (m *migrations.Migrator, closeAll func(), err error) {
	pool, err := a.openSession(ctx, "migrate")
	if err != nil {
		return nil, nil, err
	}
	if m, err = migrations.New(pool, a.cfg.DatabaseSchema, a.logger); err != nil {
		pool.Close()
		return nil, nil, err
	}
	return m, func() { m.Close(); pool.Close() }, nil
}
