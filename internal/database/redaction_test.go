package database_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/testdb"
)

// Open's errors show the URL through config.RedactURL and scrub pgx's
// messages, for passwords the old regular expressions printed ('#', '?',
// '/', ' ', '@'), for URLs pgx connects with and URLs it cannot parse, and
// for a keyword/value DSN whose quoted password holds an escaped quote
// (pgx's own redaction shows that one's tail).
func TestOpen_ErrorsNeverShowThePassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		url     string
		secrets []string
		want    string
	}{
		{"postgres://adv_pw:s3cr3t#Pss@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2",
			[]string{"s3cr3t", "Pss"}, "error connecting to database postgres://adv_pw:xxxxx@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2"},
		{"postgres://adv_pw:s3cr3t?Pss@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2",
			[]string{"s3cr3t", "Pss"}, "error connecting to database postgres://adv_pw:xxxxx@127.0.0.1:1/relay?"},
		{"postgres://adv_pw:s3cr3t/Pss@127.0.0.1:1/relay?sslmode=disable",
			[]string{"s3cr3t", "Pss"}, "error parsing database URL postgres://adv_pw:xxxxx@127.0.0.1:1/relay?sslmode=disable: invalid port"},
		{"postgres://adv_pw:s3cr3t Pss@127.0.0.1:1/relay?sslmode=disable",
			[]string{"s3cr3t", "Pss"}, "error parsing database URL postgres://adv_pw:xxxxx@127.0.0.1:1/relay"},
		{"postgres://adv_pw:s3cr3t@Pss@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2",
			[]string{"s3cr3t"}, "postgres://adv_pw:xxxxx@127.0.0.1:1/relay"},
		{"postgres://adv_pw:s3cr3tPss@127.0.0.1:99999/relay",
			[]string{"s3cr3t"}, "error parsing database URL postgres://adv_pw:xxxxx@127.0.0.1:99999/relay: invalid port"},
		{`host=127.0.0.1 port=99999 user=adv_pw password='s3cr3t \' Pss tail'`,
			[]string{"s3cr3t", "Pss", "tail"}, "error parsing database URL host=127.0.0.1 port=99999 user=adv_pw password=xxxxx: invalid port"},
		{`host=127.0.0.1 port=1 user=adv_pw password='s3cr3t \' Pss tail`,
			[]string{"s3cr3t", "Pss", "tail"}, "unterminated quoted string"},
	} {
		pool, err := database.Open(ctx, tc.url, database.Options{Role: "test"})
		require.Error(t, err, tc.url)
		require.Nil(t, pool)
		for _, s := range tc.secrets {
			require.NotContains(t, err.Error(), s, tc.url)
		}
		require.Contains(t, err.Error(), tc.want, tc.url)
	}
}

// The redaction keeps the chain: a server error is still a *pgconn.PgError.
func TestOpen_RedactedErrorsKeepThePgError(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testdb.ServerURL(t))
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), "s3cr3t#Pss")
	u.Path = "/relay_no_such_database_" + suffix(t)
	_, err = database.Open(context.Background(), u.String(), database.Options{Role: "test"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cr3t")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "3D000", pgErr.Code)
}

// EnsureExists creates a missing database for any URL pgx accepts; it used
// net/url to reach the postgres database, which cannot parse a password
// holding '#' (that pgx connects with), and gave up.
func TestEnsureExists_CreatesTheDatabaseWithAPasswordNetURLCannotParse(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server, err := url.Parse(testdb.ServerURL(t))
	require.NoError(t, err)
	name := "relay_ensure_" + suffix(t)
	// The test server trusts local connections, so any password works.
	raw := server.Scheme + "://" + server.User.Username() + ":s3cr3t#Pss@" + server.Host + "/" + name + "?" + server.RawQuery
	_, perr := url.Parse(raw)
	require.Error(t, perr, "net/url must not parse this URL, or the test proves nothing")

	require.NoError(t, database.EnsureExists(ctx, raw))
	t.Cleanup(func() { require.NoError(t, database.Drop(context.Background(), testdb.ServerURL(t), name)) })
	pool, err := database.Open(ctx, raw, database.Options{Role: "test"})
	require.NoError(t, err)
	pool.Close()
	require.NoError(t, database.EnsureExists(ctx, raw), "an existing database is left alone")
}

func TestEnsureExistsAndDrop_ErrorsNeverShowThePassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, u := range []string{
		"postgres://adv_pw:s3cr3t#Pss@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2",
		"postgres://adv_pw:s3cr3t/Pss@127.0.0.1:1/relay?sslmode=disable",
		`host=127.0.0.1 port=1 user=adv_pw password='s3cr3t \' Pss' connect_timeout=2`,
	} {
		for _, err := range []error{database.EnsureExists(ctx, u), database.Drop(ctx, u, "x")} {
			require.Error(t, err)
			require.NotContains(t, err.Error(), "s3cr3t", u)
			require.NotContains(t, err.Error(), "Pss", u)
			require.True(t, strings.Contains(err.Error(), "xxxxx"), "%s: %v", u, err)
		}
	}
	var pgErr *pgconn.PgError
	require.False(t, errors.As(database.Drop(ctx, "postgres://127.0.0.1:1/x?connect_timeout=2", "x"), &pgErr))
}

func suffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
