package database_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/pgbouncer"
	"github.com/relay-dev/relay/internal/testdb"
)

// Behind a transaction pooler relay sends no session settings (PgBouncer
// refuses them at connect); it checks them instead, and its error names
// the ALTER ROLE statements that make them the role's defaults in the
// database. Once they are, the settings hold on every transaction through
// the pooler.
func TestOpen_TransactionPoolerChecksSessionSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	bouncer := pgbouncer.ForTest(t, db.URL)
	pooled := bouncer.URL(db.URL)
	opts := database.Options{Role: "test", Schema: db.Schema, StatementTimeout: 42 * time.Second,
		IdleInTransactionTimeout: 3 * time.Minute}

	// What relay did before: settings as startup parameters.
	_, err := database.Open(ctx, pooled, opts)
	require.ErrorContains(t, err, "unsupported startup parameter")

	opts.TransactionPooler = true
	_, err = database.Open(ctx, pooled, opts)
	var settingsErr *database.SessionSettingsError
	require.True(t, errors.As(err, &settingsErr), "%v", err)
	require.Len(t, settingsErr.Wrong, 3, "%v", err)
	require.Contains(t, err.Error(), `IN DATABASE "`+settingsErr.Database+`" SET statement_timeout = '42000ms';`)
	require.Contains(t, err.Error(), `SET search_path = "relay";`)
	require.Contains(t, err.Error(), `SET idle_in_transaction_session_timeout = '180000ms';`)

	require.NoError(t, database.SetSessionDefaults(ctx, db.URL, opts))
	require.NoError(t, bouncer.Reconnect(ctx, db.URL))
	pool, err := database.Open(ctx, pooled, opts)
	require.NoError(t, err)
	defer pool.Close()
	// Every transaction, on whichever server connection, has them.
	for range 20 {
		var schema, statement, idle string
		require.NoError(t, pool.QueryRow(ctx, `SELECT current_schema(), current_setting('statement_timeout'),
			current_setting('idle_in_transaction_session_timeout')`).Scan(&schema, &statement, &idle))
		require.Equal(t, []string{"relay", "42s", "3min"}, []string{schema, statement, idle})
	}
	// No prepared statement is left behind for another client to trip on.
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements`).Scan(&n))
	require.Zero(t, n)

	// A setting changed on the server side is caught at the next start.
	opts.StatementTimeout = time.Minute
	_, err = database.Open(ctx, pooled, opts)
	require.ErrorContains(t, err, "statement_timeout is 42s (relay's statement_timeout is 1m0s)")
}
