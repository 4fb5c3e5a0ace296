package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// testAgent writes the test agent: items with "kind" bad exit 3 until a
// "fixed" file exists beside the script, "invalid" ones exit 65 (the
// documented validation code), "slow" ones sleep past the deadline, the rest
// print a result.
func testAgent(t *testing.T) (path, fixed string) {
	t.Helper()
	dir := agentDir(t)
	path = filepath.Join(dir, "agent.sh")
	fixed = filepath.Join(dir, "fixed")
	body := `#!/bin/sh
data=$(cat)
case "$data" in
  *'"kind": "bad"'*) [ -e "` + fixed + `" ] || { echo "cannot process item $RELAY_ITEM_ID: upstream returned 503" >&2; exit 3; } ;;
  *'"kind": "invalid"'*) echo "field name is required" >&2; exit 65 ;;
  *'"kind": "slow"'*) sleep 30 ;;
esac
printf '{"done":"%s","attempt":%s}\n' "$RELAY_ITEM_ID" "$RELAY_ATTEMPT"
`
	require.NoError(t, os.WriteFile(path, []byte(body), 0o755))
	return path, fixed
}

func writeInput(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "items.ndjson")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	return p
}

type listed struct {
	Total int `json:"total"`
	Items []struct {
		ItemID         string `json:"item_id"`
		ErrorType      string `json:"error_type"`
		ExitCode       *int   `json:"exit_code"`
		FailureCount   int    `json:"failure_count"`
		FailureHistory []struct {
			AttemptNumber int    `json:"attempt_number"`
			ErrorType     string `json:"error_type"`
			LogLocation   string `json:"log_location"`
		} `json:"failure_history"`
		ReprocessEligible bool `json:"reprocess_eligible"`
	} `json:"items"`
}

func dlqList(t *testing.T, db *testdb.DB, job string) listed {
	t.Helper()
	r := run(t, db, "", nil, "dlq", "list", "--job-id", job, "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var l listed
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &l), r.stdout)
	return l
}

// The scenario: failing items are dead-lettered with max_retries+1
// attempts and the right error types, the validation failure at once; after
// the agent is fixed, a filtered retry empties those items from the DLQ.
func TestMapReduce_DeadLettersFailuresAndFilteredRetryEmptiesThem(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	agentPath, fixed := testAgent(t)
	env := agentsEnv(t, nil)
	input := writeInput(t,
		`{"id":"ok-1","kind":"good"}`, `{"id":"bad-1","kind":"bad"}`, `{"id":"bad-2","kind":"bad"}`,
		`{"id":"inv","kind":"invalid"}`, `{"id":"slow","kind":"slow"}`, `{"kind":"good"}`)

	r := run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "job1",
		"--max-retries", "2", "--timeout", "5s", "--retry-backoff", "10ms", "--parallel", "6", "--wait")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stderr, "4 of 6 items did not succeed (4 dead-lettered)")
	require.Contains(t, r.stdout, "succeeded             2")
	require.Contains(t, r.stdout, "dead-lettered         4")
	require.Contains(t, r.stderr, "relay mapreduce: job1: ")

	l := dlqList(t, db, "job1")
	require.Equal(t, 4, l.Total)
	byID := map[string]int{}
	for i, it := range l.Items {
		byID[it.ItemID] = i
	}
	for id, want := range map[string]struct {
		typ      string
		attempts int
		exit     *int
		eligible bool
	}{
		"bad-1": {"CommandFailed", 3, ptr(3), true},
		"bad-2": {"CommandFailed", 3, ptr(3), true},
		"slow":  {"Timeout", 3, nil, true},
		"inv":   {"ValidationFailed", 1, ptr(65), false}, // dead-lettered at the first failure
	} {
		it := l.Items[byID[id]]
		require.Equal(t, id, it.ItemID)
		require.Equal(t, want.typ, it.ErrorType, id)
		require.Equal(t, want.attempts, it.FailureCount, id)
		require.Len(t, it.FailureHistory, want.attempts, id)
		require.Equal(t, want.exit, it.ExitCode, id)
		require.Equal(t, want.eligible, it.ReprocessEligible, id)
		for n, h := range it.FailureHistory {
			require.Equal(t, n+1, h.AttemptNumber)
			require.Equal(t, want.typ, h.ErrorType)
			require.FileExists(t, h.LogLocation)
		}
	}
	require.Equal(t, 4, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'item_added'`))
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'mapreduce_item' AND state = 'discarded'`))

	r = run(t, db, "", nil, "dlq", "inspect", "bad-1")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "error type:        CommandFailed (exit code 3)")
	require.Contains(t, r.stdout, "upstream returned 503")
	require.Contains(t, r.stdout, "Attempts (3):")

	// A bad filter is a usage error that names it.
	r = run(t, db, "", nil, "dlq", "retry", "job1", "--filter", `$.error_type == 'CommandFailed'`)
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, `invalid --filter "$.error_type == 'CommandFailed'"`)

	// Fix the agent, retry only the CommandFailed items.
	require.NoError(t, os.WriteFile(fixed, nil, 0o600))
	r = run(t, db, "", env, "dlq", "retry", "job1", "--filter", `$.error_type == "CommandFailed" && $.exit_code == 3`, "--wait")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "retried 2 items of job job1: 2 succeeded and left the DLQ, 0 failed again")
	l = dlqList(t, db, "job1")
	require.Equal(t, 2, l.Total, "only the timeout and the validation failure stay")
	for _, it := range l.Items {
		require.NotEqual(t, "CommandFailed", it.ErrorType)
	}
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events
		WHERE action = 'items_reprocessed' AND (details->>'successful')::int = 2`))
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_items
		WHERE job_id = 'job1' AND item_id LIKE 'bad-%' AND status = 'succeeded' AND attempts = 4`))

	// Without --force the ineligible validation failure is not retried.
	r = run(t, db, "", env, "dlq", "retry", "job1", "--filter", `$.error_type == "ValidationFailed"`)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "no eligible dead-lettered items of job job1 match")

	r = run(t, db, "", nil, "dlq", "stats", "--job-id", "job1")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "Total Items: 2\nReprocess Eligible: 1\nManual Review Required: 1\n")
	require.Contains(t, r.stdout, "Reprocessed (awaiting 'relay dlq clear'): 2")
	require.Contains(t, r.stdout, "Timeout: 1 (50%)")

	export := filepath.Join(t.TempDir(), "analysis.json")
	r = run(t, db, "", nil, "dlq", "analyze", "--job-id", "job1", "--export", export)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"agent timed out after <n>s and was killed" (1 item, 50%)`)
	require.FileExists(t, export)
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'analysis_generated'`), "a read records no event")

	csvPath := filepath.Join(t.TempDir(), "dlq.csv")
	r = run(t, db, "", nil, "dlq", "export", csvPath, "--job-id", "job1")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	b, err := os.ReadFile(csvPath)
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(string(b)), "\n"), 3, "header and two items")

	r = runOnTerminal(t, db, "n\n", "dlq", "clear", "job1")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, "clear cancelled")
	r = run(t, db, "", nil, "dlq", "clear", "job1", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "cleared 2 reprocessed items of job job1")

	_, err = db.Pool.Exec(t.Context(), `UPDATE dead_lettered_items SET dead_lettered_at = now() - interval '2 days'`)
	require.NoError(t, err)
	r = runOnTerminal(t, db, "y\n", "dlq", "purge", "--older-than-days", "1", "--job-id", "job1")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "purged 2 items of job job1")
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items`))
}

func ptr(n int) *int { return &n }

// Resume re-runs items whose River job is gone; only with
// --include-dlq-items does it put dead-lettered items back.
func TestMapReduce_ResumeWithAndWithoutDLQItems(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	agentPath, fixed := testAgent(t)
	env := agentsEnv(t, nil)
	input := writeInput(t, `{"id":"a","kind":"good"}`, `{"id":"b","kind":"good"}`, `{"id":"c","kind":"bad"}`, `{"id":"d","kind":"good"}`)

	r := run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "job2",
		"--max-retries", "0", "--retry-backoff", "0s")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "job2\n", r.stdout)
	// Lose two items' River jobs (as if deleted by hand).
	_, err := db.Pool.Exec(t.Context(), `DELETE FROM river_job WHERE args->>'item_id' IN ('a', 'b')`)
	require.NoError(t, err)

	r = run(t, db, "", env, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "mapreduce", "status", "job2", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var st struct {
		Items struct {
			Succeeded, DeadLettered, Unfinished int
		} `json:"items"`
		DLQ struct{ Total int } `json:"dlq"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(r.stdout, "dead_lettered", "deadlettered")), &st))
	require.Equal(t, 1, st.Items.Succeeded)
	require.Equal(t, 2, st.Items.Unfinished)
	require.Equal(t, 1, st.DLQ.Total)

	r = run(t, db, "", env, "mapreduce", "resume", "job2", "--wait")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr) // c is still dead-lettered
	require.Contains(t, r.stderr, "re-enqueued 2 unfinished and 0 dead-lettered items")
	require.Contains(t, r.stdout, "succeeded             3")
	require.Contains(t, r.stdout, "dead-lettered         1")
	require.Equal(t, 1, dlqList(t, db, "job2").Total)

	require.NoError(t, os.WriteFile(fixed, nil, 0o600))
	r = run(t, db, "", env, "mapreduce", "resume", "job2", "--include-dlq-items", "--wait")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "re-enqueued 0 unfinished and 1 dead-lettered items")
	require.Contains(t, r.stdout, "succeeded             4")
	require.Equal(t, 0, dlqList(t, db, "job2").Total)
}

// A failing DLQ write neither stops the run nor loses the item: River keeps
// the job, and the sweep captures it with its whole history once the DLQ
// is writable again.
func TestMapReduce_DLQWriteFailureLosesNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	agentPath, _ := testAgent(t)
	env := agentsEnv(t, nil)
	_, err := db.Pool.Exec(t.Context(), `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'dead_lettered_items unwritable (injected by test)'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON dead_lettered_items FOR EACH ROW EXECUTE FUNCTION refuse();`)
	require.NoError(t, err)
	input := writeInput(t, `{"id":"bad","kind":"bad"}`, `{"id":"inv","kind":"invalid"}`, `{"id":"ok","kind":"good"}`)

	r := run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "job3",
		"--max-retries", "1", "--retry-backoff", "10ms", "--wait")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stderr, "error writing item to dead_lettered_items; the run goes on")
	require.Contains(t, r.stdout, "succeeded             1")
	require.Contains(t, r.stdout, "awaiting DLQ capture  2")
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'mapreduce_item' AND state = 'discarded'`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'mapreduce_item' AND state = 'cancelled'`))

	_, err = db.Pool.Exec(t.Context(), `DROP TRIGGER refuse ON dead_lettered_items`)
	require.NoError(t, err)
	r = run(t, db, "", env, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	l := dlqList(t, db, "job3")
	require.Equal(t, 2, l.Total)
	for _, it := range l.Items {
		switch it.ItemID {
		case "bad":
			require.Equal(t, "CommandFailed", it.ErrorType)
			require.Len(t, it.FailureHistory, 2, "both attempts, with their details")
		case "inv":
			require.Equal(t, "ValidationFailed", it.ErrorType)
			require.Len(t, it.FailureHistory, 1)
		}
	}
	r = run(t, db, "", nil, "mapreduce", "status", "job3")
	require.Contains(t, r.stdout, "dead-lettered         2")
	require.Contains(t, r.stdout, "awaiting DLQ capture  0")
}

// A hostile item reaches the agent as data only: the agent echoes stdin,
// and the result is exactly the item; nothing in it ran.
func TestMapReduce_HostileItemIsDataOnly(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	dir := agentDir(t)
	agentPath := filepath.Join(dir, "echo.sh")
	require.NoError(t, os.WriteFile(agentPath, []byte("#!/bin/sh\ncat\n"), 0o755))
	work := workDir(t)
	hostile := map[string]any{"id": `"; rm -rf / #`, "payload": "$(touch pwned) `touch pwned2` \"; rm -rf /\nline2\t\\x41 ÿ"}
	line, err := json.Marshal(hostile)
	require.NoError(t, err)
	input := writeInput(t, string(line))

	r := run(t, db, "", agentsEnv(t, map[string]string{"RELAY_MAPREDUCE_WORKDIR": work}), "mapreduce", "run", "--input", input,
		"--agent", agentPath+" --unused-arg", "--job-id", "hostile", "--wait")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var result []byte
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT result FROM mapreduce_items WHERE job_id = 'hostile'`).Scan(&result))
	var got map[string]any
	require.NoError(t, json.Unmarshal(result, &got))
	require.Equal(t, hostile, got, "the agent saw exactly the item")
	for _, d := range []string{dir, work, "."} {
		require.NoFileExists(t, filepath.Join(d, "pwned"))
		require.NoFileExists(t, filepath.Join(d, "pwned2"))
	}
}

func TestMapReduce_RejectsInvalidInputWithLineNumbers(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	input := writeInput(t, `{"id":"a"}`, ``, `{"id":`, `{"id":{"x":1}}`, `{"id":"a"}`)
	r := run(t, db, "", nil, "mapreduce", "run", "--input", input, "--agent", "true")
	require.Equal(t, cli.ExitUsage, r.code, "invalid input is the caller's: a usage error")
	require.Contains(t, r.stderr, "line 3 (item 2): invalid JSON")
	require.Contains(t, r.stderr, `line 4 (item 3): id must be a string or a number`)
	require.Contains(t, r.stderr, `line 5 (item 4): duplicate item id "a" (first on line 1)`)
	require.Contains(t, r.stderr, "3 invalid items")
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_jobs`))

	r = run(t, db, "", nil, "mapreduce", "run", "--input", input, "--agent", "echo $(id)")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "relay runs the agent without a shell")
}
