package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/internal/testdb"
)

func writeAgent(t *testing.T, path, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
}

// The scenario: a job submitted without --wait from dirA with a
// relative agent, then a --wait run of another job from dirB. The --wait run
// works only its own job; the first job's agent path was made absolute when
// it was submitted, so a worker started anywhere runs it.
func TestMapReduce_WaitWorksOnlyItsOwnJobAndAgentPathsAreAbsolute(t *testing.T) {
	db := testdb.New(t)
	dirA, dirB := agentDir(t), agentDir(t)
	writeAgent(t, filepath.Join(dirA, "a.sh"), `cat >/dev/null; echo '{"by":"a"}'`)
	writeAgent(t, filepath.Join(dirB, "b.sh"), `cat >/dev/null; echo '{"by":"b"}'`)
	env := agentsEnv(t, nil)

	t.Chdir(dirA)
	input := writeInput(t, `{"id":"1"}`, `{"id":"2"}`)
	r := run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", "./a.sh --flag", "--job-id", "job-a")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var agentCmd string
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT agent FROM mapreduce_jobs WHERE job_id = 'job-a'`).Scan(&agentCmd))
	require.Equal(t, filepath.Join(dirA, "a.sh")+" --flag", agentCmd, "stored absolute")

	t.Chdir(dirB)
	r = run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", "./b.sh", "--job-id", "job-b", "--wait")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "succeeded             2")
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_items
		WHERE job_id = 'job-a' AND status = 'pending' AND attempts = 0`), "the --wait run left job-a alone")
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job
		WHERE args->>'job_id' = 'job-a' AND state = 'available' AND queue = 'mapreduce'`))

	r = run(t, db, "", env, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_items
		WHERE job_id = 'job-a' AND status = 'succeeded' AND convert_from(result, 'UTF8') LIKE '%"by":"a"%'`),
		"a worker in dirB runs dirA's agent")
}

func TestMapReduce_AgentMustBeAnExecutableFile(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	dir := t.TempDir()
	input := writeInput(t, `{"id":"1"}`)
	notExec := filepath.Join(dir, "agent.py")
	require.NoError(t, os.WriteFile(notExec, []byte("print(1)\n"), 0o644))
	for _, tc := range []struct{ agent, msg string }{
		{filepath.Join(dir, "missing.sh"), "program " + filepath.Join(dir, "missing.sh") + " does not exist"},
		{notExec, "program " + notExec + " is not executable"},
		{dir, "is a directory"},
		{"no-such-agent-anywhere", `program "no-such-agent-anywhere" not found in PATH`},
	} {
		r := run(t, db, "", nil, "mapreduce", "run", "--input", input, "--agent", tc.agent)
		require.Equal(t, cli.ExitUsage, r.code, tc.agent)
		require.Contains(t, r.stderr, tc.msg)
	}
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_jobs`))

	r := run(t, db, "", agentsEnv(t, nil), "mapreduce", "run", "--input", input,
		"--agent", "true", "--job-id", "bare")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var agentCmd string
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT agent FROM mapreduce_jobs WHERE job_id = 'bare'`).Scan(&agentCmd))
	require.True(t, filepath.IsAbs(agentCmd), "a bare name is looked up in PATH: %s", agentCmd)
}

// Ids and data PostgreSQL cannot store are usage errors naming the line,
// not raw database errors.
func TestMapReduce_InputPostgreSQLCannotStoreIsAUsageError(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	input := writeInput(t, `{"id":"ok"}`, `{"id":"nul\u0000"}`, `{"id":"\ud800"}`, `{"id":"`+strings.Repeat("x", 9000)+`"}`)
	r := run(t, db, "", nil, "mapreduce", "run", "--input", input, "--agent", "true")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `line 2 (item 2): item holds the escape \u0000 (NUL)`)
	require.Contains(t, r.stderr, "line 3 (item 3): item holds a lone UTF-16 surrogate")
	require.Contains(t, r.stderr, "line 4 (item 4): id is 9000 bytes long; the maximum is 1024")
	require.Contains(t, r.stderr, "3 invalid items")
	require.NotContains(t, r.stderr, "SQLSTATE")
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_jobs`))
}

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ctrl-C during --wait: the first says what the run waits for, the second
// kills the agents at once, and the run ends saying how to go on, with exit
// code 130. Resume --wait then finishes the job.
func TestMapReduce_InterruptedWaitSaysWhatItWaitsForAndHowToResume(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	dir := agentDir(t)
	agentPath := filepath.Join(dir, "agent.sh")
	writeAgent(t, agentPath, `cat >/dev/null
[ -e `+dir+`/fast ] && { echo '{}'; exit 0; }
echo $$ > `+dir+`/pid.$RELAY_ITEM_ID
trap '' TERM
sleep 60; sleep 60`)
	input := writeInput(t, `{"id":"1"}`, `{"id":"2"}`, `{"id":"3"}`)
	env := agentsEnv(t, map[string]string{"RELAY_SHUTDOWN_TIMEOUT": "1m"})

	ctx, interrupt := context.WithCancel(context.Background())
	stopNow := make(chan struct{})
	var stdout, stderr syncBuffer
	done := make(chan int)
	go func() {
		done <- cli.Main(ctx, []string{"mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "intr",
			"--parallel", "2", "--wait", "--database-url", db.URL, "--database-schema", db.Schema},
			cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, StopNow: stopNow,
				LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	}()
	var pids []int
	require.Eventually(t, func() bool {
		pids = pids[:0]
		for _, id := range []string{"1", "2", "3"} {
			if b, err := os.ReadFile(filepath.Join(dir, "pid."+id)); err == nil && len(b) > 0 {
				pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err == nil {
					pids = append(pids, pid)
				}
			}
		}
		return len(pids) == 2
	}, 30*time.Second, 20*time.Millisecond, "two agents run")

	interrupt() // the first Ctrl-C
	require.Eventually(t, func() bool {
		return strings.Contains(stderr.String(), "interrupted: starting no more agents; waiting up to 1m0s for 2 running agents to stop; press Ctrl-C again to kill them now")
	}, 10*time.Second, 20*time.Millisecond, stderr.String())
	select {
	case code := <-done:
		t.Fatalf("the run ended (%d) before the agents stopped: %s", code, stderr.String())
	case <-time.After(300 * time.Millisecond):
	}

	start := time.Now()
	close(stopNow) // the second
	var code int
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the second interrupt did not stop the run: %s", stderr.String())
	}
	require.Less(t, time.Since(start), 15*time.Second)
	require.Equal(t, 130, code, stderr.String())
	require.Contains(t, stderr.String(), "interrupted again: killing 2 running agents")
	require.Contains(t, stderr.String(), "relay: job intr interrupted: 0 of 3 items done (0 succeeded, 0 dead-lettered), 3 left. "+
		"Go on with 'relay mapreduce resume intr --wait'")
	require.NotContains(t, stderr.String(), "context canceled")
	for _, pid := range pids {
		require.Eventually(t, func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH || zombie(pid) }, 10*time.Second,
			20*time.Millisecond, "agent %d was killed", pid)
	}
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_items WHERE job_id = 'intr' AND status <> 'pending'`),
		"an interrupted attempt says nothing about its item")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "fast"), nil, 0o600))
	r := run(t, db, "", env, "mapreduce", "resume", "intr", "--wait")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "succeeded             3")
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// An interrupted --wait run's items wait on its own queue; a resume without
// --wait hands them to 'relay worker'.
func TestMapReduce_ResumeHandsAnInterruptedWaitRunsItemsToTheWorker(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	dir := agentDir(t)
	agentPath := filepath.Join(dir, "agent.sh")
	writeAgent(t, agentPath, `cat >/dev/null; echo '{}'`)
	input := writeInput(t, `{"id":"1"}`, `{"id":"2"}`)
	env := agentsEnv(t, nil)
	r := run(t, db, "", env, "mapreduce", "run", "--input", input, "--agent", agentPath, "--job-id", "parked")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	// As an interrupted (or killed) --wait run leaves them: on its queue.
	_, err := db.Pool.Exec(t.Context(), `UPDATE river_job SET queue = $1 WHERE args->>'job_id' = 'parked'`, mapreduce.WaitQueue("parked"))
	require.NoError(t, err)
	r = run(t, db, "", env, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_items WHERE job_id = 'parked' AND status = 'succeeded'`),
		"'relay worker' does not work a --wait run's queue")

	r = run(t, db, "", env, "mapreduce", "resume", "parked")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "items an interrupted --wait run left queued are handed to 'relay worker'")
	r = run(t, db, "", env, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_items WHERE job_id = 'parked' AND status = 'succeeded'`))
}
