package database_test

import (
	"context"
	"errors"
	"net"
	neturl "net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/testdb"
)

// refusedPort returns a loopback port nothing listens on: one the kernel
// just handed out and that was closed again.
func refusedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// With nothing listening, Open and EnsureExists say so and how to point
// relay at a database or start one (issue 25: "No database, no hint"),
// without the password, keeping the cause for errors.Is.
func TestOpen_NothingListeningSaysHowToGetADatabase(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := strconv.Itoa(refusedPort(t))
	url := "postgres://relay:s3cr3t-pw@127.0.0.1:" + port + "/relay?sslmode=disable"
	socketDir := t.TempDir() // no server's socket in it

	for name, open := range map[string]func() error{
		"Open": func() error {
			pool, err := database.Open(ctx, url, database.Options{Role: "test"})
			if pool != nil {
				pool.Close()
			}
			return err
		},
		"EnsureExists": func() error { return database.EnsureExists(ctx, url) },
		"Open over a Unix socket": func() error {
			_, err := database.Open(ctx, "postgres:///relay?host="+filepath.ToSlash(socketDir)+"&password=s3cr3t-pw", database.Options{})
			return err
		},
	} {
		err := open()
		require.Error(t, err, name)
		var ue *database.UnreachableError
		require.ErrorAs(t, err, &ue, name)
		msg := err.Error()
		require.Contains(t, msg, "nothing is listening at ", name)
		require.Contains(t, msg, database.UnreachableHint, name)
		require.Contains(t, msg, "RELAY_DATABASE_URL", name)
		require.Contains(t, msg, "relay demo", name)
		require.NotContains(t, msg, "s3cr3t-pw", name)
		if name != "Open over a Unix socket" {
			require.Contains(t, ue.Addrs, "127.0.0.1:"+port, name)
			require.Contains(t, msg, "connection refused", name, "the cause is kept")
		} else {
			require.Contains(t, ue.Addrs[0], socketDir, name)
		}
	}
}

// Something that answers is not "nothing listening": a server that
// refuses the login, or a port that accepts and hangs up, gets its own
// error without the hint.
func TestOpen_SomethingAnsweringGetsNoNothingListeningHint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	db := testdb.New(t)
	u, err := neturl.Parse(db.URL)
	require.NoError(t, err)
	u.Path = "/no_such_database_x"
	_, err = database.Open(ctx, u.String(), database.Options{})
	require.Error(t, err)
	require.False(t, errors.As(err, new(*database.UnreachableError)), "%v", err)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	_, err = database.Open(ctx, "postgres://relay@"+l.Addr().String()+"/relay?sslmode=disable", database.Options{})
	require.Error(t, err)
	require.False(t, errors.As(err, new(*database.UnreachableError)), "%v", err)
	require.NotContains(t, err.Error(), database.UnreachableHint)
}
