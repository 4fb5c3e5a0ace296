package cli_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// asRoot reports whether the tests run as root, whom relay never runs an
// agent as: they then run agents as nobody (agent_user).
func asRoot() bool { return os.Geteuid() == 0 }

// searchable makes the directories above dir up to the temporary directory
// searchable by others (a test's temporary directories are in one that is
// 0700), so that agents running as nobody can reach dir.
func searchable(t *testing.T, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for p := filepath.Dir(dir); strings.HasPrefix(p, tmp+string(os.PathSeparator)); p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(p, fi.Mode().Perm()|0o111))
	}
}

// agentDir is a t.TempDir() for a test's agent scripts and what they
// write: when the tests run as root it is nobody's, and nobody can reach it.
func agentDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if asRoot() {
		require.NoError(t, os.Chown(dir, 65534, 65534))
		searchable(t, dir)
	}
	return dir
}

// workDir is a fresh mapreduce_workdir: relay's (the test's user's), which
// agents running as nobody can reach.
func workDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	searchable(t, dir)
	return dir
}

// agentsEnv is extra plus what a command that runs agents needs: a fresh
// RELAY_MAPREDUCE_WORKDIR and, when the tests run as root,
// RELAY_AGENT_USER=nobody.
func agentsEnv(t *testing.T, extra map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{"RELAY_MAPREDUCE_WORKDIR": workDir(t)}
	if asRoot() {
		env["RELAY_AGENT_USER"] = "nobody"
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// keyAgent writes an agent that needs API_KEY: without it, it fails the way
// an LLM coding agent does; with it, it prints which key it got.
func keyAgent(t *testing.T) string {
	t.Helper()
	path := filepath.Join(agentDir(t), "agent.sh")
	writeAgent(t, path, `cat >/dev/null
[ -n "$API_KEY" ] || { echo "error: API_KEY is not set" >&2; exit 3; }
printf '{"key":"%s","mode":"%s"}\n' "$API_KEY" "$AGENT_MODE"`)
	return path
}

type jobStatus struct {
	Job struct {
		AgentEnv []string `json:"agent_env"`
	} `json:"job"`
	Items struct {
		Succeeded    int `json:"succeeded"`
		DeadLettered int `json:"dead_lettered"`
	} `json:"items"`
}

func statusJSON(t *testing.T, db *testdb.DB, job string) jobStatus {
	t.Helper()
	r := run(t, db, "", nil, "mapreduce", "status", job, "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var st jobStatus
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
	return st
}

// The first finding: an agent that needs a variable failed every
// item and, since nothing could add it, failed again after `relay dlq
// retry`. Now --agent-env adds it at the retry; the job records its name
// (never the value), status shows it, and a later retry must give it again.
func TestMapReduce_DLQRetryCanGiveAgentsTheVariableTheyLacked(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	agentPath := keyAgent(t)
	env := agentsEnv(t, map[string]string{"API_KEY": "sk-from-relays-environment"})
	input := writeInput(t, `{"id":"1"}`, `{"id":"2"}`)

	r := run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "needs-key",
		"--max-retries", "0", "--wait")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stdout, "agent env: none (only the allow-listed variables)")
	l := dlqList(t, db, "needs-key")
	require.Equal(t, 2, l.Total, "without API_KEY every item fails")
	r = run(t, db, "", nil, "dlq", "inspect", "1", "--job-id", "needs-key")
	require.Contains(t, r.stdout, "error: API_KEY is not set")

	// The fix: retry giving the variable.
	r = run(t, db, "", env, "dlq", "retry", "needs-key", "--agent-env", "API_KEY=sk-given-at-retry", "--wait")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "retried 2 items of job needs-key: 2 succeeded and left the DLQ")
	require.Contains(t, r.stderr, "(max 0 retries, agent_env API_KEY)")
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_items WHERE job_id = 'needs-key'
		AND status = 'succeeded' AND convert_from(result, 'UTF8') LIKE '%"key":"sk-given-at-retry"%'`))

	st := statusJSON(t, db, "needs-key")
	require.Equal(t, []string{"API_KEY"}, st.Job.AgentEnv)
	require.Equal(t, 2, st.Items.Succeeded)
	r = run(t, db, "", nil, "mapreduce", "status", "needs-key")
	require.Contains(t, r.stdout, "  agent env: API_KEY (names only: relay never stores the values)\n")
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_jobs WHERE agent_env::text LIKE '%sk-%'`))
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE details::text LIKE '%sk-%'`),
		"the audit event names the variable, not its value")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events
		WHERE action = 'items_reprocessed' AND details->'agent_env' = '["API_KEY"]'`))

	// relay kept the name, not the value: a later --wait run of the job's
	// agents must give it again, and can add more.
	r = run(t, db, "", env, "dlq", "retry", "needs-key", "--force", "--wait")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "job needs-key's agents are given API_KEY (recorded on the job; relay never stores values): "+
		"give it again, with --agent-env NAME (from relay's environment) or --agent-env NAME=VALUE, or in agent_env")
	_, err := db.Pool.Exec(t.Context(), `UPDATE mapreduce_items SET status = 'pending', river_job_id = NULL WHERE job_id = 'needs-key'`)
	require.NoError(t, err) // as if their River jobs were lost: resume re-runs them
	r = run(t, db, "", env, "mapreduce", "resume", "needs-key", "--wait")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "give it again")
	// NAME passes the value relay started with; RELAY_AGENT_ENV is a list.
	r = run(t, db, "", agentsEnv(t, map[string]string{"API_KEY": "sk-from-relays-environment",
		"RELAY_AGENT_ENV": "API_KEY AGENT_MODE=strict"}), "mapreduce", "resume", "needs-key", "--wait")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_items WHERE job_id = 'needs-key'
		AND convert_from(result, 'UTF8') LIKE '%"key":"sk-from-relays-environment","mode":"strict"%'`))
	require.Equal(t, []string{"AGENT_MODE", "API_KEY"}, statusJSON(t, db, "needs-key").Job.AgentEnv)
}

// RELAY_* and PG* names are refused with the reason, wherever they come
// from; so is a NAME relay's environment lacks, and a VALUE given where no
// agent would get it. Nothing is enqueued.
func TestMapReduce_AgentEnvRefusesRelaysAndTheDatabasesVariables(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	agentPath := keyAgent(t)
	input := writeInput(t, `{"id":"1"}`)
	env := agentsEnv(t, map[string]string{"RELAY_DATABASE_URL": db.URL, "PGPASSWORD": "hunter2"})
	for _, tc := range []struct {
		args []string
		env  map[string]string
		msg  string
	}{
		{args: []string{"--agent-env", "RELAY_DATABASE_URL", "--wait"}, msg: "RELAY_DATABASE_URL: RELAY_* variables are relay's own"},
		{args: []string{"--agent-env", "PGPASSWORD=x", "--wait"}, msg: "PGPASSWORD: PG* variables are the database's connection settings and credentials"},
		{args: []string{"--agent-env", "PGHOST"}, msg: "PG* variables are the database's"},
		{args: []string{"--wait"}, env: map[string]string{"RELAY_AGENT_ENV": "OK=1 PGUSER"}, msg: "invalid agent_env: PGUSER: PG* variables"},
		{args: []string{"--agent-env", "API_KEY", "--wait"}, msg: "agent_env: API_KEY: relay's environment has no API_KEY to pass on"},
		{args: []string{"--agent-env", "API_KEY=sk-1"}, msg: "--agent-env API_KEY=...: without --wait this process runs no agent"},
	} {
		e := env
		if tc.env != nil {
			e = agentsEnv(t, tc.env)
		}
		r := run(t, db, "", e, append([]string{"mapreduce", "run", "--input", input, "--agent", agentPath}, tc.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "%q: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.msg, tc.args)
		require.NotContains(t, r.stderr, "hunter2")
		require.NotContains(t, r.stderr, "sk-1")
	}
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_jobs`))
}

// Without --wait the job records the names and 'relay worker' gives the
// variables, from its own agent_env: a worker without one fails the items
// saying which variable and what to do; once it gives it, a retry succeeds.
func TestMapReduce_WorkerGivesTheVariablesAJobRecords(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	agentPath := keyAgent(t)
	env := agentsEnv(t, nil)
	input := writeInput(t, `{"id":"1"}`, `{"id":"2"}`)
	r := run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "w",
		"--agent-env", "API_KEY", "--max-retries", "0")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "agent_env API_KEY)")
	require.Equal(t, []string{"API_KEY"}, statusJSON(t, db, "w").Job.AgentEnv)

	r = run(t, db, "", env, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	l := dlqList(t, db, "w")
	require.Equal(t, 2, l.Total)
	for _, it := range l.Items {
		require.Equal(t, "WorktreeError", it.ErrorType)
	}
	r = run(t, db, "", nil, "dlq", "inspect", "1", "--job-id", "w")
	require.Contains(t, r.stdout, "step prepare_agent")
	require.Contains(t, r.stdout, "agent not started: job w's agents need API_KEY (its agent_env), which this process does not give them")

	r = run(t, db, "", env, "dlq", "retry", "w")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	worker := agentsEnv(t, map[string]string{"RELAY_AGENT_ENV": "API_KEY", "API_KEY": "sk-workers"})
	r = run(t, db, "", worker, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 2, statusJSON(t, db, "w").Items.Succeeded)
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_items WHERE job_id = 'w'
		AND convert_from(result, 'UTF8') LIKE '%"key":"sk-workers"%'`))
}

// The second finding, as root: relay refuses to start agents until
// agent_user is set, and then runs them as that user, through every path
// that runs agents (run --wait, dlq retry --wait, relay worker).
func TestMapReduce_AsRootAgentsRunAsAgentUser(t *testing.T) {
	t.Parallel()
	if !asRoot() {
		t.Skip("relay refuses root and switches an agent's user only when it runs as root; the tests run as uid " +
			strconv.Itoa(os.Geteuid()))
	}
	db := testdb.New(t)
	dir := agentDir(t)
	agentPath := filepath.Join(dir, "whoami.sh")
	writeAgent(t, agentPath, `cat >/dev/null
[ -e `+dir+`/fail ] && exit 3
printf '{"uid":"%s","groups":"%s","home":"%s"}\n' "$(id -u)" "$(id -G)" "$HOME"`)
	input := writeInput(t, `{"id":"1"}`)
	asRootEnv := map[string]string{"RELAY_MAPREDUCE_WORKDIR": workDir(t)}

	r := run(t, db, "", asRootEnv, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "root", "--wait")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "relay runs as root and agent_user is not set: relay does not run agents as root")
	require.Contains(t, r.stderr, "set agent_user (RELAY_AGENT_USER, --agent-user)")
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_jobs`), "nothing enqueued")

	r = run(t, db, "", asRootEnv, "--agent-user", "root", "mapreduce", "run", "--input", input, "--agent", agentPath, "--wait")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `agent_user "root" is root`)
	r = run(t, db, "", asRootEnv, "--agent-user", "no-such-user-here", "mapreduce", "run", "--input", input, "--agent", agentPath, "--wait")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `agent_user "no-such-user-here": no such user`)
	closed := filepath.Join(t.TempDir(), "agent.sh")
	writeAgent(t, closed, "echo '{}'")
	require.NoError(t, os.Chmod(filepath.Dir(closed), 0o700)) // root's alone
	r = run(t, db, "", agentsEnv(t, nil), "mapreduce", "run", "--input", input, "--agent", closed, "--wait")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--agent: agent_user nobody (uid 65534) cannot reach agent program")

	nobody, err := user.Lookup("nobody")
	require.NoError(t, err)
	want := `{"uid":"` + nobody.Uid + `","groups":"` + nobody.Gid + `","home":"` + nobody.HomeDir + `"}`
	result := func(job string) string {
		var b []byte
		require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT result FROM mapreduce_items WHERE job_id = $1`, job).Scan(&b))
		return strings.TrimSpace(string(b))
	}
	env := agentsEnv(t, nil)
	r = run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "root", "--wait")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, want, result("root"), "run --wait")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "fail"), nil, 0o644))
	r = run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "retried",
		"--max-retries", "0", "--wait")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.NoError(t, os.Remove(filepath.Join(dir, "fail")))
	r = run(t, db, "", asRootEnv, "dlq", "retry", "retried", "--wait")
	require.Equal(t, cli.ExitUsage, r.code, "dlq retry --wait refuses root too: %s", r.stderr)
	require.Contains(t, r.stderr, "set agent_user")
	r = run(t, db, "", env, "dlq", "retry", "retried", "--wait")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, want, result("retried"), "dlq retry --wait")

	r = run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "queued", "--max-retries", "0")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", asRootEnv, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, "a worker as root without agent_user starts (it resolves files too): %s", r.stderr)
	require.Contains(t, r.stderr, "MapReduce items this worker takes fail without running their agent")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items WHERE job_id = 'queued'
		AND error_type = 'WorktreeError' AND failure_history->0->>'step_failed' = 'prepare_agent'
		AND failure_history->0->>'error_message' LIKE '%set agent_user%'`), "the item failed without its agent running")
	r = run(t, db, "", asRootEnv, "dlq", "retry", "queued")
	require.Equal(t, cli.ExitOK, r.code, "without --wait nothing runs here: %s", r.stderr)
	r = run(t, db, "", env, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, want, result("queued"), "relay worker")
}

// The scenario: relay, as root, with its database password in the
// environment it started with, runs an agent that dumps its parent's
// /proc/<pid>/environ into its result. This test re-runs its own binary as
// that relay (non-dumpable, as cmd/relay makes itself, and with the
// password in its real environment); the agent runs as agent_user and the
// result row holds no password.
func TestMapReduce_AgentCannotReadRootRelaysEnvironment(t *testing.T) {
	if os.Getenv(relayStandIn) != "" {
		runRelayStandIn()
		return
	}
	t.Parallel()
	if !asRoot() {
		t.Skip("the agent can read relay's environment only when relay runs as root; the tests run as uid " +
			strconv.Itoa(os.Geteuid()))
	}
	db := testdb.New(t)
	dir := agentDir(t)
	agentPath := filepath.Join(dir, "dump.sh")
	writeAgent(t, agentPath, `cat >/dev/null
environ=$(cat /proc/$PPID/environ 2>&1 | tr '\0' ' ')
printf '{"environ":"%s"}\n' "$(printf '%s' "$environ" | base64 -w0)"`)
	input := writeInput(t, `{"id":"1"}`)
	const password = "s3cr3t-database-password"
	cmd := exec.Command(os.Args[0], "-test.run=^TestMapReduce_AgentCannotReadRootRelaysEnvironment$")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), relayStandIn + "=mapreduce run --input " + input + " --agent " + agentPath +
		" --job-id dump --wait",
		"RELAY_DATABASE_URL=" + strings.Replace(db.URL, "root@", "root:"+password+"@", 1), "RELAY_DATABASE_SCHEMA=" + db.Schema,
		"RELAY_MAPREDUCE_WORKDIR=" + workDir(t), "RELAY_AGENT_USER=nobody"}
	require.Contains(t, cmd.Env[2], password, "the URL carries the password (the test server trusts; it is bait)")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	var b []byte
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT result FROM mapreduce_items WHERE job_id = 'dump'`).Scan(&b))
	var dump struct{ Environ string }
	require.NoError(t, json.Unmarshal(b, &dump), "%s", b)
	environ, err := base64.StdEncoding.DecodeString(dump.Environ)
	require.NoError(t, err)
	require.NotContains(t, string(environ), password, "the agent read relay's environment")
	require.Contains(t, string(environ), "Permission denied")
	require.NotContains(t, string(out), password)
}

const relayStandIn = "CLI_TEST_RELAY_STAND_IN"

// runRelayStandIn is relay for TestMapReduce_AgentCannotReadRootRelaysEnvironment:
// what cmd/relay's main does (non-dumpable, then the CLI), with the
// arguments in the environment.
func runRelayStandIn() {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		panic(err)
	}
	code := cli.Main(context.Background(), strings.Fields(os.Getenv(relayStandIn)),
		cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, LookupEnv: os.LookupEnv})
	os.Exit(code)
}
