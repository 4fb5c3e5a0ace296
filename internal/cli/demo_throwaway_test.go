package cli_test

import (
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/database"
)

// refusedAddr returns a loopback address nothing listens on: a port the
// kernel just handed out and that was closed again.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// requireRefused fails t unless nothing listens at addr.
func requireRefused(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		_ = c.Close()
	}
	require.Error(t, err, "something still listens at %s", addr)
}

var startedRE = regexp.MustCompile(`relay demo: started a throwaway PostgreSQL (\d+\.\d+) \(([^)]*)\) on (127\.0\.0\.1:\d+) as user (\S+), data in (\S+);`)

// Issue 25, item 5: with no database configured and nothing answering
// where the default database_url points, `relay demo` (make demo) starts a
// throwaway PostgreSQL, runs to the end there, says so, and stops and
// removes it. As root the server runs as nobody: PostgreSQL refuses to
// run as root. Not parallel: it points the probed address elsewhere (the
// machine's PostgreSQL answers at localhost:5432).
func TestDemo_NoDatabaseAndNothingListening_RunsOnAThrowawayPostgreSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	probe := refusedAddr(t)
	cli.SetLocalAddr(t, probe)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // where a non-root user's server goes

	start := time.Now()
	r := run(t, nil, "", map[string]string{"PATH": os.Getenv("PATH")}, "demo")
	t.Logf("relay demo on a throwaway PostgreSQL took %s", time.Since(start))
	require.Equal(t, cli.ExitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "relay demo: no database is configured (--database-url, RELAY_DATABASE_URL or database_url) "+
		"and nothing answers at "+probe+"; starting a throwaway PostgreSQL\n")
	m := startedRE.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	serverAddr, osUser, dir := m[3], m[4], m[5]
	if os.Geteuid() == 0 {
		require.Equal(t, "nobody", osUser, "as root the server runs as an unprivileged user")
	} else {
		require.True(t, strings.HasPrefix(dir, os.Getenv("XDG_CACHE_HOME")+"/relay/pg/run-"), "under the user's cache directory: %s", dir)
	}
	require.Contains(t, r.stdout, "relay demo: published 4 files, 16 POIs in 4 resolve_file jobs (one per file)")
	require.Contains(t, r.stdout, "relay demo: 4 files, 16 POIs, ")
	require.Contains(t, r.stdout, "3 failed POIs")
	require.Contains(t, r.stdout, "demo-math-bad-line")
	require.Contains(t, r.stdout, "relay demo: stopped the throwaway PostgreSQL and removed "+dir+".")
	require.NotContains(t, r.stdout, "psql", "no pointer to a server that is gone")
	require.NotRegexp(t, `relay:[0-9a-f]{32}@`, r.stdout+r.stderr, "the server's password is not printed")

	requireRefused(t, serverAddr)
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "the server's directory is removed")
}

// A database that is configured is used even when nothing answers there:
// no throwaway server, and every command says how to point relay at a
// database or start one (issue 25: "No database, no hint").
func TestCommands_NothingListening_SayHowToGetADatabase(t *testing.T) {
	t.Parallel()
	addr := refusedAddr(t)
	url := "postgres://relay:s3cr3t-Pa55@" + addr + "/relay?sslmode=disable"
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{args: []string{"status", "--database-url", url}},
		{env: map[string]string{"RELAY_DATABASE_URL": url}, args: []string{"migrate", "up"}},
		{env: map[string]string{"RELAY_DATABASE_URL": url}, args: []string{"publish"}},
		{env: map[string]string{"RELAY_DATABASE_URL": url}, args: []string{"worker", "--until-idle"}},
		{env: map[string]string{"RELAY_DATABASE_URL": url}, args: []string{"failed", "list"}},
		{env: map[string]string{"RELAY_DATABASE_URL": url}, args: []string{"demo"}},
		{env: map[string]string{"RELAY_DATABASE_DIRECT_URL": url}, args: []string{"demo", "--database-url", url}},
	} {
		r := run(t, nil, "", tc.env, tc.args...)
		require.Equal(t, cli.ExitRuntime, r.code, "%q: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, "connection refused", tc.args)
		require.Contains(t, r.stderr, "nothing is listening at "+addr+": is PostgreSQL running? "+database.UnreachableHint, tc.args)
		require.NotContains(t, r.stdout, "throwaway", tc.args)
		require.NotContains(t, r.stdout+r.stderr, "s3cr3t-Pa55", tc.args)
	}
}

// The probe looks where the default database_url points.
func TestDemo_ProbesWhereTheDefaultDatabaseURLPoints(t *testing.T) {
	t.Parallel()
	require.Equal(t, "localhost:5432", cli.LocalAddr())
}
