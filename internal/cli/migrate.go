package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/migrations"
)

func newMigrateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply, roll back or show relay's schema migrations (River's tables included)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("migrate needs a subcommand: up, down or status")}
		},
	}
	run := func(name, short string, f func(cmd *cobra.Command, m *migrations.Migrator) error) *cobra.Command {
		return &cobra.Command{
			Use: name, Short: short, Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				pool, err := a.open(cmd.Context(), "migrate")
				if err != nil {
					return err
				}
				defer pool.Close()
				m, err := migrations.New(pool, a.cfg.DatabaseSchema, a.logger)
				if err != nil {
					return err
				}
				defer m.Close()
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
	down := run("down", "Roll back the most recent migration", func(cmd *cobra.Command, m *migrations.Migrator) error {
		res, err := m.Down(cmd.Context())
		if err != nil {
			return err
		}
		for _, r := range res {
			fmt.Fprintf(a.out(), "rolled back %05d %s\n", r.Version, r.Source)
		}
		return nil
	})
	var asJSON bool
	status := run("status", "List migrations and whether each is applied", func(cmd *cobra.Command, m *migrations.Migrator) error {
		st, err := m.Status(cmd.Context())
		if err != nil {
			return err
		}
		if asJSON {
			enc := json.NewEncoder(a.out())
			enc.SetIndent("", "  ")
			return enc.Encode(st)
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
	cmd.AddCommand(up, down, status)
	return cmd
}
