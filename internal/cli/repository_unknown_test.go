package cli_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// A repository name relay holds no data of is most likely mistyped: the
// commands that take one say so (exit 1), suggest the closest known name
// and list the known ones, instead of reporting that nothing matched.
func TestRepositoryFlags_UnknownRepositoryIsAnErrorNamingTheKnownOnes(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	for _, repo := range []string{"acme/app", "acme/lib"} {
		r := run(t, db, `{"fileId":"src/a.js","pois":[{"id":"a1","type":"function_definition","name":"a","filePath":"src/a.js","lineNumber":1}]}`,
			nil, "publish", "--repository", repo)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	files := testdb.Count(t, db.Pool, `SELECT count(*) FROM files`)

	for _, args := range [][]string{
		{"failed", "list", "--repository", "acme/ap"},
		{"status", "--repository", "acme/ap"},
		{"reprocess", "--status", "new", "--dry-run", "--repository", "acme/ap"},
		{"repository", "delete", "acme/ap", "--yes"},
	} {
		r := run(t, db, "", nil, args...)
		require.Equal(t, cli.ExitRuntime, r.code, "%q: %s", args, r.stdout)
		require.Contains(t, r.stderr, `relay: no repository "acme/ap": relay holds no files or failed POIs of it; did you mean acme/app?`, args)
		require.Contains(t, r.stderr, "(repositories: acme/app, acme/lib; relay repository list shows them)", args)
		require.Empty(t, r.stdout, args)
	}
	require.Equal(t, files, testdb.Count(t, db.Pool, `SELECT count(*) FROM files`), "nothing deleted")

	// Far from every known name: no suggestion.
	r := run(t, db, "", nil, "failed", "list", "--repository", "zzz")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.NotContains(t, r.stderr, "did you mean")

	// A known repository, and the default one, with no failed POIs: nothing
	// matches, which is no error.
	for _, repo := range []string{"acme/app", ""} {
		r = run(t, db, "", nil, "failed", "list", "--repository", repo)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Equal(t, "no failed POIs match\n", r.stdout)
		r = run(t, db, "", nil, "status", "--repository", repo)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	r = run(t, db, "", nil, "reprocess", "--status", "new", "--dry-run", "--repository", "acme/lib")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.True(t, strings.HasSuffix(r.stdout, "dry run: nothing changed\n"), r.stdout)
}

// issue 40: every other command whose --repository selects existing data
// (failed stats, analyze, export and purge; graph callers, callees and
// dependents) says the same of an unknown repository, and an export
// writes no file. A known repository still works.
func TestRepositoryFlags_EveryReadingCommandRejectsAnUnknownRepository(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	for _, repo := range []string{"acme/app", "acme/lib"} {
		r := run(t, db, `{"fileId":"src/a.js","pois":[{"id":"a1","type":"function_definition","name":"a","filePath":"src/a.js","lineNumber":1}]}`,
			nil, "publish", "--repository", repo)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	out := filepath.Join(t.TempDir(), "failed.csv")

	for _, args := range [][]string{
		{"failed", "stats", "--repository", "acme/ap"},
		{"failed", "analyze", "--repository", "acme/ap"},
		{"failed", "export", out, "--repository", "acme/ap"},
		{"failed", "purge", "--older-than-days", "1", "--repository", "acme/ap", "--yes"},
		{"graph", "callers", "a", "--repository", "acme/ap"},
		{"graph", "callees", "a", "--repository", "acme/ap"},
		{"graph", "dependents", "src/a.js", "--repository", "acme/ap"},
	} {
		r := run(t, db, "", nil, args...)
		require.Equal(t, cli.ExitRuntime, r.code, "%q: %s %s", args, r.stdout, r.stderr)
		require.Contains(t, r.stderr, `relay: no repository "acme/ap": relay holds no files or failed POIs of it; did you mean acme/app?`, args)
		require.Contains(t, r.stderr, "(repositories: acme/app, acme/lib; relay repository list shows them)", args)
		require.Empty(t, r.stdout, args)
	}
	require.NoFileExists(t, out)

	for _, args := range [][]string{
		{"failed", "stats", "--repository", "acme/app"},
		{"failed", "analyze", "--repository", "acme/app"},
		{"failed", "export", out, "--repository", "acme/app"},
		{"failed", "purge", "--older-than-days", "1", "--repository", "acme/app", "--yes"},
		{"graph", "callers", "a", "--repository", "acme/app"},
		{"graph", "dependents", "src/a.js", "--repository", "acme/lib"},
	} {
		r := run(t, db, "", nil, args...)
		require.Equal(t, cli.ExitOK, r.code, "%q: %s", args, r.stderr)
	}
	require.FileExists(t, out)
}

// A role that reads only files and failed_pois (docs/sql/analyst_role.sql's
// relay_analyst) gets the same check, answered from those tables: before,
// `relay graph … --repository` and `relay failed list --repository` as an
// analyst failed with "permission denied for table publish_queue".
func TestRepositoryFlags_AnAnalystRoleIsCheckedFromTheTablesItReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	r := run(t, db, `{"fileId":"src/a.js","pois":[{"id":"a1","type":"function_definition","name":"a","filePath":"src/a.js","lineNumber":1}]}`,
		nil, "publish", "--repository", "acme/app")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	script, err := os.ReadFile("../../docs/sql/analyst_role.sql")
	require.NoError(t, err)
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	role := "relay_cli_analyst_" + hex.EncodeToString(suffix)
	// Roles are cluster-wide: the lock is deadletter/failed's docs test's.
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7238041)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, string(script)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN IN ROLE relay_analyst")
		return err
	}))
	t.Cleanup(func() {
		_, err := db.Pool.Exec(context.Background(), "DROP ROLE "+pgx.Identifier{role}.Sanitize())
		require.NoError(t, err)
	})
	u, err := neturl.Parse(db.URL)
	require.NoError(t, err)
	u.User = neturl.User(role)
	as := func(args ...string) result {
		return run(t, nil, "", nil, append(args, "--database-url", u.String(), "--database-schema", db.Schema)...)
	}

	for _, args := range [][]string{
		{"graph", "callers", "a", "--repository", "acme/ap"},
		{"failed", "list", "--repository", "acme/ap"},
	} {
		r := as(args...)
		require.Equal(t, cli.ExitRuntime, r.code, "%q: %s", args, r.stdout)
		require.Contains(t, r.stderr, `relay: no repository "acme/ap": relay holds no files or failed POIs of it; did you mean acme/app?`, args)
	}
	r = as("graph", "callers", "a", "--repository", "acme/app")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = as("failed", "list", "--repository", "acme/app")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "no failed POIs match\n", r.stdout)
}
