package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/ops"
	"github.com/relay-dev/relay/internal/testdb"
)

func TestStatus_ShowsQueuesDeadLettersAndSignatures(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := run(t, db, "", nil, "demo")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	r = run(t, db, "", nil, "status")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	for _, s := range []string{"QUEUES", "resolve  completed  4", "THROUGHPUT (last 10 min)", "4 jobs completed",
		"failed_pois:          new 3", "TOP ERROR SIGNATURES", "validation", "FAILED POIS PER HOUR", "###"} {
		require.Contains(t, r.stdout, s)
	}

	r = run(t, db, "", nil, "status", "--json", "--minutes", "5")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var out struct {
		State    ops.State    `json:"state"`
		Activity ops.Activity `json:"activity"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Equal(t, int64(3), out.State.FailedPOIs["new"])
	require.Len(t, out.Activity.PerMinute, 5)
	require.Len(t, out.Activity.FailuresPerHour, 24)
	require.NotEmpty(t, out.Activity.TopSignatures)

	require.Equal(t, cli.ExitUsage, run(t, db, "", nil, "status", "--minutes", "0").code)
}

func TestWorker_ServesHealthAndMetricsAndStopsCleanly(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderrR, stderrW := io.Pipe()
	var stdout strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"worker", "--http-addr", "127.0.0.1:0",
			"--database-url", db.URL, "--database-schema", db.Schema}, cli.Env{
			Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: stderrW,
			LookupEnv: func(string) (string, bool) { return "", false },
		})
		_ = stderrW.Close()
	}()

	addrRE := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)`)
	lines := bufio.NewScanner(stderrR)
	var base string
	for lines.Scan() {
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			base = "http://" + m[1]
			break
		}
	}
	require.NotEmpty(t, base, "the worker never said where it serves")
	go func() { _, _ = io.Copy(io.Discard, stderrR) }()

	// /readyz turns ok once River's client is running.
	deadline := time.Now().Add(30 * time.Second)
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	var rd ops.Readiness
	for ; ; <-poll.C {
		resp, err := http.Get(base + "/readyz")
		require.NoError(t, err)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&rd))
		_ = resp.Body.Close()
		if rd.Status == ops.StatusOK || time.Now().After(deadline) {
			break
		}
	}
	require.Equal(t, ops.StatusOK, rd.Status, "%+v", rd)

	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(body), "relay_failed_pois{status=\"new\"} 0")

	cancel() // SIGINT/SIGTERM
	select {
	case code := <-done:
		require.Equal(t, cli.ExitOK, code)
	case <-time.After(60 * time.Second):
		t.Fatal("worker did not stop within 60s of being told to")
	}
}

// worker_console mounts the web console under /ui/ in the worker's server,
// forms and all: its posts keep their bodies, which the health endpoints'
// server never reads.
func TestWorker_MountsTheWebConsoleWithWorkerConsole(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderrR, stderrW := io.Pipe()
	var stdout strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"worker", "--http-addr", "127.0.0.1:0", "--worker-console", "--ui-read-only=false",
			"--database-url", db.URL, "--database-schema", db.Schema}, cli.Env{
			Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: stderrW,
			LookupEnv: func(string) (string, bool) { return "", false },
		})
		_ = stderrW.Close()
	}()
	addrRE := regexp.MustCompile(`serving (.*) on http://(127\.0\.0\.1:\d+)`)
	lines := bufio.NewScanner(stderrR)
	var base, endpoints string
	for lines.Scan() {
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			endpoints, base = m[1], "http://"+m[2]
			break
		}
	}
	require.NotEmpty(t, base, "the worker never said where it serves")
	require.Contains(t, endpoints, "/ui/")
	var rest strings.Builder
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&rest, stderrR); close(copied) }()

	resp, err := http.Get(base + "/ui/failed")
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(page))
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	require.NotNil(t, m)
	resp, err = http.PostForm(base+"/ui/failed/purge", map[string][]string{"csrf": {string(m[1])}, "older_than_days": {"3"}})
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), "0 rows not updated for 3 days")

	resp, err = http.Get(base + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Stopped once River runs (/readyz ok), the worker exits 0.
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		var rd ops.Readiness
		err = json.NewDecoder(resp.Body).Decode(&rd)
		_ = resp.Body.Close()
		return err == nil && rd.Status == ops.StatusOK
	}, 30*time.Second, 20*time.Millisecond)
	cancel()
	select {
	case code := <-done:
		<-copied
		require.Equal(t, cli.ExitOK, code, rest.String())
	case <-time.After(60 * time.Second):
		t.Fatal("worker did not stop within 60s of being told to")
	}
}
