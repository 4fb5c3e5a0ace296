package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/repositories"
	"github.com/relay-dev/relay/internal/testdb"
)

// repositoryAnalyses are three repositories and the default one: acme/a
// calls symbol m/S, which acme/b and acme/c both define (ambiguous while
// both exist); acme/c has two files, a reference of its own and a POI that
// fails (malformed reference list).
const repositoryAnalyses = `{"repository":"acme/a","fileId":"a.go","pois":[{"id":"a1","type":"function_definition","name":"run","filePath":"a.go","lineNumber":1,"rawCode":"func run() { S() }","symbol":"m/a.run","references":[{"type":"CALLS","symbol":"m/S"}]}]}
{"repository":"acme/b","fileId":"s.go","pois":[{"id":"s1","type":"function_definition","name":"S","filePath":"s.go","lineNumber":1,"rawCode":"func S() {}","symbol":"m/S","references":[]}]}
{"repository":"acme/c","fileId":"s.go","pois":[{"id":"s1","type":"function_definition","name":"S","filePath":"s.go","lineNumber":1,"rawCode":"func S() {}","symbol":"m/S","references":[]},{"id":"bad","type":"function_definition","name":"bad","filePath":"s.go","lineNumber":2,"references":[{"type":"CALLZ","symbol":"x"}]}]}
{"repository":"acme/c","fileId":"t.go","pois":[{"id":"t1","type":"function_definition","name":"t","filePath":"t.go","lineNumber":1,"rawCode":"func t() { S() }","symbol":"m/c.t","references":[{"type":"CALLS","symbol":"m/S"}]}]}
{"fileId":"d.go","pois":[{"id":"d1","type":"function_definition","name":"d","filePath":"d.go","lineNumber":1,"rawCode":"func d() {}","references":[]}]}
`

// a1Target is where acme/a's reference to m/S points ("" for nowhere).
const a1Target = `SELECT count(*) FROM poi_references
	WHERE repository = 'acme/a' AND source_poi_id = 'a1' AND coalesce(target_repository || '/' || target_poi_id, '') = $1`

func listRepositories(t *testing.T, db *testdb.DB) []repositories.Summary {
	t.Helper()
	r := run(t, db, "", nil, "repository", "list", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var rows []repositories.Summary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows), r.stdout)
	return rows
}

func TestRepository_ListCountsEachRepository(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := run(t, db, "", nil, "repository", "list")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "no repositories\n", r.stdout)
	r = run(t, db, "", nil, "repository", "list", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "[]\n", r.stdout)

	r = run(t, db, repositoryAnalyses, nil, "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	require.Equal(t, []repositories.Summary{
		{Repository: "", Files: 1, POIs: 1},
		{Repository: "acme/a", Files: 1, POIs: 1}, // m/S is ambiguous
		{Repository: "acme/b", Files: 1, POIs: 1},
		{Repository: "acme/c", Files: 2, POIs: 2, Relationships: 1, NewFailed: 1},
	}, listRepositories(t, db))

	r = run(t, db, "", nil, "repository", "list")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, strings.Join([]string{
		"REPOSITORY  FILES  POIS  RELATIONSHIPS  NEW_FAILED",
		"(default)   1      1     0              0",
		"acme/a      1      1     0              0",
		"acme/b      1      1     0              0",
		"acme/c      2      2     1              1",
		""}, "\n"), r.stdout)
}

func TestRepository_DeleteConfirmsDeletesOneRepositoryAndResolvesTheOthersAgain(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := run(t, db, repositoryAnalyses, nil, "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 1, testdb.Count(t, db.Pool, a1Target, ""), "ambiguous while acme/b and acme/c define m/S")
	before := listRepositories(t, db)

	// Usage errors: no name, an empty name, both a name and --default.
	for _, args := range [][]string{{}, {""}, {"acme/c", "--default"}} {
		r = run(t, db, "", nil, append([]string{"repository", "delete", "--yes"}, args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "args %q: %s", args, r.stderr)
	}
	r = run(t, db, "", nil, "repository", "delete", "", "--yes")
	require.Contains(t, r.stderr, `NAME is empty: to delete the default repository ("") use --default`)

	// Without --yes: refused when standard input is not a terminal, whatever
	// is piped in; asked on a terminal, where no is no.
	r = run(t, db, "y\n", nil, "repository", "delete", "acme/c")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, `repository delete would delete repository "acme/c": 2 files, 2 POIs, 1 reference; `+
		`standard input is not a terminal, so nothing was deleted: run it again with --yes to confirm`)
	r = runOnTerminal(t, db, "n\n", "repository", "delete", "acme/c")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, `Delete repository "acme/c": 2 files, 2 POIs, 1 reference? This cannot be undone. [y/N]`)
	require.Contains(t, r.stderr, "repository delete cancelled: nothing deleted")
	require.Equal(t, before, listRepositories(t, db), "nothing deleted")

	r = runOnTerminal(t, db, "yes\n", "repository", "delete", "acme/c", "--actor", "carol", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var d repositories.Deleted
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), r.stdout)
	require.Positive(t, d.EventID)
	require.Equal(t, repositories.Deleted{Repository: "acme/c", Files: 2, POIs: 2, References: 1, FailedPOIsKept: 1,
		ReferencesRequeued: 1, EventID: d.EventID}, d)
	for _, table := range []string{"files", "pois", "poi_references"} {
		require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM `+table+` WHERE repository = 'acme/c'`), table)
	}
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/c'`),
		"failed POIs stay without --purge-failed")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events
		WHERE action = 'repository_delete' AND actor = 'carol' AND item_count = 0 AND details->>'repository' = 'acme/c'
		AND details->>'files' = '2' AND details->>'pois' = '2' AND details->>'references' = '1'`))

	// Once a worker drains, acme/a's reference resolves to the one m/S left.
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 1, testdb.Count(t, db.Pool, a1Target, "acme/b/s1"))
	require.Equal(t, []repositories.Summary{
		{Repository: "", Files: 1, POIs: 1},
		{Repository: "acme/a", Files: 1, POIs: 1, Relationships: 1},
		{Repository: "acme/b", Files: 1, POIs: 1},
		{Repository: "acme/c", NewFailed: 1},
	}, listRepositories(t, db))

	// The failed POIs go with --purge-failed.
	r = run(t, db, "", nil, "repository", "delete", "acme/c", "--purge-failed", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, `deleted repository "acme/c": 0 files, 0 POIs, 0 references, 1 failed_pois row`+"\n", r.stdout)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events
		WHERE action = 'repository_delete' AND item_count = 1 AND details->>'purge_failed' = 'true'`))
	// Now relay holds nothing of acme/c: deleting it again is an error that
	// names the repositories there are (TestRepositoryFlags_UnknownRepositoryIsAnErrorNamingTheKnownOnes).
	r = run(t, db, "", nil, "repository", "delete", "acme/c", "--purge-failed", "--yes")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stderr, `no repository "acme/c"`)

	// The default repository is named with --default.
	r = run(t, db, "", nil, "repository", "delete", "--default", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "deleted the default repository: 1 file, 1 POI, 0 references\n", r.stdout)
	require.Equal(t, []repositories.Summary{
		{Repository: "acme/a", Files: 1, POIs: 1, Relationships: 1},
		{Repository: "acme/b", Files: 1, POIs: 1},
	}, listRepositories(t, db))
}
