package testdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/citus"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/migrations"
)

// createDistributed makes a schema of its own in the Citus coordinator's
// database at url, migrated with relay's migrations and distributed by
// repository (citus.Distribute, what relay migrate distribute runs), and
// returns it with the function that drops it (its shards with it). A
// coordinator has no template to copy: each schema is migrated.
func createDistributed(ctx context.Context, url string) (*DB, func() error, error) {
	suffix, err := randomSuffix()
	if err != nil {
		return nil, nil, err
	}
	schema := fmt.Sprintf("%s%d_%s", testPrefix, time.Now().Unix(), suffix)
	drop := func() error {
		if os.Getenv("TEST_KEEP_SCHEMA") != "" {
			return nil
		}
		return admin(context.Background(), url, func(conn *pgx.Conn) error {
			_, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			return err
		})
	}
	// Distributing creates every table's shards on the worker nodes: the
	// statement timeout leaves it the time a loaded machine needs.
	pool, err := database.Open(ctx, url, database.Options{Role: "test", Schema: schema, MaxConns: 8,
		StatementTimeout: 5 * time.Minute, IdleInTransactionTimeout: time.Minute})
	if err != nil {
		return nil, nil, fmt.Errorf("error opening pool on the Citus coordinator %s (%s=1): %w", config.RedactURL(url), EnvCitus, err)
	}
	fail := func(err error) (*DB, func() error, error) {
		pool.Close()
		return nil, nil, errors.Join(err, drop())
	}
	if _, err := citus.Version(ctx, pool); err != nil {
		return fail(fmt.Errorf("%s=1, but %s (%s) is not a Citus coordinator's database (make citus-cluster starts one): %w",
			EnvCitus, config.RedactURL(url), EnvURL, err))
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fail(fmt.Errorf("error creating schema %s: %w", schema, err))
	}
	m, err := migrations.New(pool, schema, slog.New(slog.DiscardHandler))
	if err != nil {
		return fail(fmt.Errorf("error migrating schema %s: %w", schema, err))
	}
	_, err = m.Up(ctx)
	m.Close()
	if err != nil {
		return fail(fmt.Errorf("error migrating schema %s: %w", schema, err))
	}
	if _, err := citus.Distribute(ctx, pool); err != nil {
		return fail(fmt.Errorf("error distributing schema %s: %w", schema, err))
	}
	return &DB{Pool: pool, Schema: schema, URL: url}, func() error {
		pool.Close()
		if err := drop(); err != nil {
			return fmt.Errorf("error dropping test schema %s: %w", schema, err)
		}
		return nil
	}, nil
}
