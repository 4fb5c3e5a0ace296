package database_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/testdb"
)

// A database the server does not have gets a hint that says how to create
// it on that server, keeping the server's error in the chain.
func TestOpen_MissingDatabaseSaysHowToCreateIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := url.Parse(testdb.ServerURL(t))
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), "s3cr3t-pw")
	name := "relay_missing_" + suffix(t)
	u.Path = "/" + name

	_, err = database.Open(ctx, u.String(), database.Options{Role: "test"})
	require.Error(t, err)
	var missing *database.MissingDatabaseError
	require.ErrorAs(t, err, &missing)
	require.Equal(t, name, missing.Name)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "3D000", pgErr.Code)
	msg := err.Error()
	require.Contains(t, msg, `has no database "`+name+`"`)
	require.Contains(t, msg, "createdb -h "+u.Hostname()+" -p "+u.Port()+" -U "+u.User.Username()+" "+name)
	require.Contains(t, msg, "relay migrate up")
	require.Contains(t, msg, "relay demo")
	require.NotContains(t, msg, "s3cr3t-pw")
	require.False(t, errors.As(err, new(*database.UnreachableError)))
}

// A URL of another database's scheme says it is not PostgreSQL's and what
// relay needs, instead of pgx's "failed to parse as keyword/value" alone.
func TestOpen_ForeignURLSchemeSaysRelayNeedsPostgreSQL(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"mysql://relay:s3cr3t-pw@127.0.0.1:3306/relay",
		"sqlite:///tmp/relay.db",
		"http://127.0.0.1:5432/relay",
	} {
		_, err := database.Open(context.Background(), raw, database.Options{Role: "test"})
		require.Error(t, err, raw)
		msg := err.Error()
		require.Contains(t, msg, "is not a PostgreSQL URL scheme", raw)
		require.Contains(t, msg, "postgres://USER@HOST:5432/DATABASE", raw)
		require.NotContains(t, msg, "s3cr3t-pw", raw)

		require.ErrorContains(t, database.EnsureExists(context.Background(), raw), "is not a PostgreSQL URL scheme", raw)
	}
	// PostgreSQL's own schemes, whatever their case, are not foreign.
	_, err := database.Open(context.Background(), "postgres://relay@127.0.0.1:99999/relay", database.Options{})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "is not a PostgreSQL URL scheme")
}
