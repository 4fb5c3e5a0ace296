package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// A worker as root without agent_user says that MapReduce items it takes
// will fail only when there is MapReduce to speak of: items queued for it,
// or MapReduce configured (agent_env, mapreduce_workdir).
func TestWorker_AsRootWarnsAboutAgentUserOnlyWithMapReduceWork(t *testing.T) {
	t.Parallel()
	if !asRoot() {
		t.Skip("the warning is given only when relay runs as root; the tests run as uid " + strconv.Itoa(os.Geteuid()))
	}
	const warning = "MapReduce items this worker takes fail without running their agent"
	db := testdb.New(t)

	r := run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NotContains(t, r.stderr, warning, "no MapReduce work and none configured")
	require.NotContains(t, r.stderr, "agent_user")

	r = run(t, db, "", map[string]string{"RELAY_MAPREDUCE_WORKDIR": workDir(t)}, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, warning, "MapReduce configured")

	dir := agentDir(t)
	agentPath := filepath.Join(dir, "agent.sh")
	writeAgent(t, agentPath, `cat >/dev/null; echo '{}'`)
	r = run(t, db, "", nil, "mapreduce", "run", "--input", writeInput(t, `{"id":"1"}`), "--agent", agentPath,
		"--job-id", "queued", "--max-retries", "0")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, warning, "an item queued")
	require.Contains(t, r.stderr, "set agent_user")
}

// relay demo (make demo) says in one line that it migrated the database;
// the migrations applied, relay's and River's, are logged at debug level.
func TestDemo_SummarizesMigrationsInOneLine(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	// A schema of its own in the test's database: every migration applies.
	args := []string{"demo", "--database-url", db.URL, "--database-schema", "demo_fresh"}
	r := run(t, nil, "", nil, args...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	for line := range strings.Lines(r.stderr) {
		require.NotContains(t, strings.ToLower(line), "migration", "a migration logged at info: %s", line)
	}
	require.Contains(t, r.stdout, "relay demo: database migrated (")
	require.Contains(t, r.stdout, " migrations applied in ")
	migrationLines := 0
	for line := range strings.Lines(r.stdout + r.stderr) {
		if strings.Contains(line, "migrat") {
			migrationLines++
		}
	}
	require.Equal(t, 1, migrationLines, r.stdout)

	r = run(t, nil, "", nil, args...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "relay demo: database schema up to date; publishing the sample")

	// At debug level each migration is still logged.
	r = run(t, nil, "", map[string]string{"RELAY_LOG_LEVEL": "debug"}, "migrate", "down", "--yes",
		"--database-url", db.URL, "--database-schema", "demo_fresh")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, nil, "", map[string]string{"RELAY_LOG_LEVEL": "debug"}, "migrate", "up",
		"--database-url", db.URL, "--database-schema", "demo_fresh")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, `msg="migration applied"`)
}
