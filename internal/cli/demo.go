package cli

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/migrations"
	"github.com/relay-dev/relay/worker"
)

//go:embed demo_sample.jsonl
var demoSample []byte

func newDemoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Migrate, publish a small sample with a few malformed POIs, resolve it and summarise",
		Long: `Demo runs relay's whole path once against the configured database: it
creates the database if it does not exist, applies migrations, publishes an
embedded sample of four files (with three malformed POIs), works every batch
to completion with an in-process worker, and prints what was resolved and
what was dead-lettered to failed_pois. It can be run repeatedly.

With database_pooler: transaction it creates and migrates the database
through database_direct_url, and makes relay's session settings
(database_schema, statement_timeout, idle_in_transaction_timeout) the
defaults of its role in that database (ALTER ROLE … IN DATABASE … SET), as
docs/operations.md asks an operator to; the rest goes through the pooler.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if a.cfg.TransactionPooler() && a.cfg.DatabaseDirectURL == "" {
				return usageError{fmt.Errorf("relay demo creates and migrates its database, which needs a session of its own: " +
					"database_pooler is transaction, so set database_direct_url (RELAY_DATABASE_DIRECT_URL) to PostgreSQL itself")}
			}
			if err := database.EnsureExists(ctx, a.cfg.SessionURL()); err != nil {
				return err
			}
			if err := demoMigrate(ctx, a); err != nil {
				return err
			}
			worker.SetGCPercent(a.cfg, a.logger)
			pool, err := a.open(ctx, "demo")
			if err != nil {
				return err
			}
			defer pool.Close()
			out := a.out()
			fmt.Fprintln(out, "relay demo: database migrated; publishing the sample")
			sum, err := publishStream(ctx, a, pool, bytes.NewReader(demoSample))
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "relay demo: published %d files, %d POIs in %d resolve_file jobs (one per file)\n", sum.Files, sum.POIs, sum.Jobs)
			client, err := worker.NewClient(pool, a.cfg, a.logger, nil)
			if err != nil {
				return err
			}
			if err := a.announced(ctx, pool, client, func(ctx context.Context) error {
				return worker.RunUntilIdle(ctx, client, pool, a.logger, nil)
			}); err != nil {
				return err
			}
			return printDemoSummary(ctx, a, pool, sum)
		},
	}
}

// demoMigrate creates the schema and applies the migrations on a session
// of its own (openSession).
func demoMigrate(ctx context.Context, a *app) error {
	pool, err := a.openSession(ctx, "demo")
	if err != nil {
		return err
	}
	defer pool.Close()
	if a.cfg.DatabaseSchema != "" {
		if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{a.cfg.DatabaseSchema}.Sanitize()); err != nil {
			return fmt.Errorf("error creating schema: %w", err)
		}
	}
	m, err := migrations.New(pool, a.cfg.DatabaseSchema, a.logger)
	if err != nil {
		return err
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		return err
	}
	if a.cfg.TransactionPooler() {
		return database.SetSessionDefaults(ctx, a.cfg.SessionURL(), database.OptionsFromConfig(a.cfg, "demo"))
	}
	return nil
}

func printDemoSummary(ctx context.Context, a *app, pool *pgxpool.Pool, sum *PublishSummary) error {
	out := a.out()
	var rels, failed int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM relationships WHERE source_file_id LIKE 'demo/%'`).Scan(&rels); err != nil {
		return fmt.Errorf("error counting relationships: %w", err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM failed_pois WHERE original_job_id = ANY($1)`, sum.JobIDs).Scan(&failed); err != nil {
		return fmt.Errorf("error counting failed POIs: %w", err)
	}
	fmt.Fprintf(out, "\nrelay demo: %d files, %d POIs, %d relationships, %d failed POIs\n\n", sum.Files, sum.POIs, rels, failed)

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RELATIONSHIP\tSOURCE\tTARGET")
	rows, err := pool.Query(ctx, `SELECT type, source_poi_id, target_poi_id FROM relationships
		WHERE source_file_id LIKE 'demo/%' ORDER BY type, source_poi_id, target_poi_id`)
	if err != nil {
		return fmt.Errorf("error listing relationships: %w", err)
	}
	for rows.Next() {
		var typ, src, tgt string
		if err := rows.Scan(&typ, &src, &tgt); err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", typ, src, tgt)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	_ = tw.Flush()

	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAILED POI\tFILE\tCLASS\tERROR")
	rows, err = pool.Query(ctx, `SELECT id, coalesce(poi_id, '(no id)'), file_id, error_class, error_message FROM failed_pois
		WHERE original_job_id = ANY($1) ORDER BY id`, sum.JobIDs)
	if err != nil {
		return fmt.Errorf("error listing failed POIs: %w", err)
	}
	for rows.Next() {
		var id int64
		var poi, file, class, msg string
		if err := rows.Scan(&id, &poi, &file, &class, &msg); err != nil {
			return err
		}
		fmt.Fprintf(tw, "#%d %s\t%s\t%s\t%s\n", id, poi, file, class, msg)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "\nInspect them with SQL (the failed_pois contract is in README.md):\n"+
		"  psql %q -c \"SELECT id, poi_id, error_class, error_message, original_poi_data FROM failed_pois ORDER BY id DESC LIMIT 10\"\n",
		config.RedactURL(a.cfg.DatabaseURL))
	return nil
}
