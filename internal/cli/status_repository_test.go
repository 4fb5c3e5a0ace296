package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/ops"
	"github.com/relay-dev/relay/internal/testdb"
)

func TestStatus_RepositoryShowsItsDeadLettersAndEveryRepositorysQueues(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := run(t, db, "", nil, "demo") // 4 resolve jobs, 3 failed POIs in the default repository
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	seedFailed(t, db)
	_, err := db.Pool.Exec(t.Context(), `UPDATE failed_pois SET repository = 'alpha' WHERE file_id IN ('src/x.js', 'src/y.js')`)
	require.NoError(t, err)

	r = run(t, db, "", nil, "status", "--repository", "alpha")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	for _, s := range []string{
		`, failed POIs and rejected analyses of repository "alpha"`,
		"QUEUES (all repositories: River's tables are shared)",
		"THROUGHPUT (last 10 min)\n",
		` discarded (all repositories), 0 POIs of repository "alpha" dead-lettered`,
		"freshness (publish to final relationships, all repositories): p50 ",
		`DEAD LETTERS of repository "alpha"`,
		"failed_pois:          new 4, reprocessing 0",
		"(MapReduce items: of no repository)",
		`TOP ERROR SIGNATURES (new failed POIs of repository "alpha")`,
		"panic: boom",
		`FAILED POIS PER HOUR (last 24h, UTC) of repository "alpha"`,
	} {
		require.Contains(t, r.stdout, s)
	}
	require.NotContains(t, r.stdout, "demo-", "the demo's failures are the default repository's")
	require.Regexp(t, `\n  resolve +completed +4\n`, r.stdout, "the queues are every repository's")

	r = run(t, db, "", nil, "status", "--repository", "", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var out struct {
		State    ops.State    `json:"state"`
		Activity ops.Activity `json:"activity"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Equal(t, "", *out.State.Repository)
	require.Equal(t, "", *out.Activity.Repository)
	require.Equal(t, int64(3), out.State.FailedPOIs["new"], "the demo's")
	require.Len(t, out.Activity.FailuresPerHour, 24)

	// Without --repository: every repository, the output as before.
	r = run(t, db, "", nil, "status")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "failed_pois:          new 7, reprocessing 0")
	require.Contains(t, r.stdout, "\nQUEUES\n")
	require.Contains(t, r.stdout, "\nDEAD LETTERS\n")
	require.NotContains(t, r.stdout, "repositor")

	r = run(t, nil, "", nil, "status", "--help")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "--repository name")
	require.Contains(t, r.stdout, "River's tables are shared by all repositories")
}
