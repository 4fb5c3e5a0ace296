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
	// The queue column is as wide as the longest queue shown: the
	// maintenance queue shows once its periodic sweep has run.
	require.Regexp(t, `\n  resolve +completed +4\n`, r.stdout)
	require.Regexp(t, `\n  relay_link +completed +\d+\n`, r.stdout)
	for _, s := range []string{"QUEUES", "THROUGHPUT (last 10 min)", "jobs completed",
		"failed_pois:          new 3", "TOP ERROR SIGNATURES", "validation", "FAILED POIS PER HOUR", "###",
		"freshness (publish to final relationships): p50 "} {
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
	require.Equal(t, int64(4), out.Activity.Freshness.Jobs, "the demo's four publishes")
	require.Positive(t, out.Activity.Freshness.P50Seconds)
	require.GreaterOrEqual(t, out.Activity.Freshness.P99Seconds, out.Activity.Freshness.P50Seconds)

	require.Equal(t, cli.ExitUsage, run(t, db, "", nil, "status", "--minutes", "0").code)
}

// servingWorker is `relay worker` running in the test with an HTTP server
// on a free loopback port.
type servingWorker struct {
	// base is the server's URL, endpoints what the worker said it serves.
	base, endpoints string
	cancel          context.CancelFunc
	done            chan int
	rest            strings.Builder // stderr after the serving line
	copied          chan struct{}
}

// startWorker starts `relay worker --http-addr 127.0.0.1:0 args…` against
// db and waits for the line saying where it serves.
func startWorker(t *testing.T, db *testdb.DB, args ...string) *servingWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &servingWorker{cancel: cancel, done: make(chan int, 1), copied: make(chan struct{})}
	stderrR, stderrW := io.Pipe()
	argv := append([]string{"worker", "--http-addr", "127.0.0.1:0"}, args...)
	argv = append(argv, "--database-url", db.URL, "--database-schema", db.Schema)
	go func() {
		w.done <- cli.Main(ctx, argv, cli.Env{
			Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderrW,
			LookupEnv: func(string) (string, bool) { return "", false },
		})
		_ = stderrW.Close()
	}()
	addrRE := regexp.MustCompile(`serving (.*) on http://(127\.0\.0\.1:\d+)`)
	lines := bufio.NewScanner(stderrR)
	for lines.Scan() {
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			w.endpoints, w.base = m[1], "http://"+m[2]
			break
		}
	}
	require.NotEmpty(t, w.base, "the worker never said where it serves")
	go func() { _, _ = io.Copy(&w.rest, stderrR); close(w.copied) }()
	return w
}

// waitReady waits until /readyz says ok: River's client is running.
func (w *servingWorker) waitReady(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get(w.base + "/readyz")
		if err != nil {
			return false
		}
		var rd ops.Readiness
		err = json.NewDecoder(resp.Body).Decode(&rd)
		_ = resp.Body.Close()
		return err == nil && rd.Status == ops.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "/readyz never said ok")
}

// stop cancels the worker's context (SIGINT/SIGTERM) and requires it to
// exit 0 within 60 s.
func (w *servingWorker) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	select {
	case code := <-w.done:
		<-w.copied
		require.Equal(t, cli.ExitOK, code, w.rest.String())
	case <-time.After(60 * time.Second):
		t.Fatal("worker did not stop within 60s of being told to")
	}
}

// get returns the body of a GET of path, requiring status 200.
func (w *servingWorker) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(w.base + path)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return string(body)
}

func TestWorker_ServesHealthAndMetricsAndStopsCleanly(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	w := startWorker(t, db)
	w.waitReady(t)
	require.Contains(t, w.get(t, "/metrics"), "relay_failed_pois{status=\"new\"} 0")
	w.stop(t)
}

// worker_console mounts the web console under /ui/ in the worker's server,
// forms and all: its posts keep their bodies, which the health endpoints'
// server never reads.
func TestWorker_MountsTheWebConsoleWithWorkerConsole(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	w := startWorker(t, db, "--worker-console", "--ui-read-only=false")
	require.Contains(t, w.endpoints, "/ui/")

	page := w.get(t, "/ui/failed")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m)
	resp, err := http.PostForm(w.base+"/ui/failed/purge", map[string][]string{"csrf": {m[1]}, "older_than_days": {"3"}})
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), "0 rows not updated for 3 days")

	w.get(t, "/healthz")

	// Stopped once River runs (/readyz ok), the worker exits 0.
	w.waitReady(t)
	w.stop(t)
}
